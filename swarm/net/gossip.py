"""Peer gossip: nodes tell each other, in signed records, which peers they know and where.

On connecting, and then every `interval` seconds, a node sends each connected peer the records
it has not sent that peer yet (its own first). A record is signed by the peer it describes, so a
gossiping node cannot invent or redirect addresses: records with a bad signature or of another
network are dropped (and counted), the rest go to the address book and the Kademlia table. A
node given a single bootnode thereby learns the whole swarm.

What a node keeps is bounded: a record is kept (and relayed) only while the address book admits
its peer (the book is bounded per bin), and a peer may send at most `RECORDS_PER_WINDOW` records
per `WINDOW` seconds; more are dropped and counted, and a peer that sends four times that is
dropped for flooding.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import trio

from kademlia.addresses import PeerAddress
from pot import proximity
from streamer.connection import PeerConnection
from streamer.errors import RemoteProtocolError
from streamer.identity import BadPeerRecord, NodeIdentity, make_peer_record, verify_peer_record
from streamer.messages import MAX_PEER_RECORDS, GoodbyeCode, PeerRecord, Peers
from streamer.outbox import Priority

log = logging.getLogger(__name__)

WINDOW = 10.0
RECORDS_PER_WINDOW = 2048
"""An honest peer sends each record once, all it knows on connecting (its bounded address book),
then only news: far below this."""


@dataclass(frozen=True)
class GossipCounters:
    """What became of the peer records gossiped to this node (`swarm.network_assembly` takes them
    from `Gossip` and `swarm.net.topology.Topology`)."""

    received: int  # records received within a peer's budget
    rejected: int  # of which dropped: a bad signature or another network
    rate_limited: int  # records dropped unread: over the sending peer's budget
    refused: int  # addresses not kept: not dialable under the policy, or their bin full


class GossipPeer(Protocol):
    """What gossip uses of a connected peer."""

    @property
    def overlay(self) -> bytes: ...

    @property
    def conn(self) -> PeerConnection: ...


class Gossip:
    """The node's verified peer records and who has been told what."""

    def __init__(
        self,
        identity: NodeIdentity,
        network_id: int,
        learn: Callable[[PeerAddress], bool],
        *,
        interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.network_id = network_id
        self.overlay = identity.overlay(network_id)
        self._identity = identity
        self._learn = learn
        self.interval = interval
        self.own: PeerRecord | None = None
        self.records: dict[bytes, PeerRecord] = {}
        self._told: dict[bytes, set[bytes]] = {}  # peer -> overlays of records sent to it
        self._windows: dict[bytes, tuple[float, int]] = {}  # peer -> (window start, records in it)
        self._clock = clock
        self.received = 0
        self.rejected = 0
        self.rate_limited = 0

    def advertise(self, host: str, port: int) -> None:
        """Sign the record of where this node listens (after the listener is bound)."""
        self.own = make_peer_record(self._identity, network_id=self.network_id, host=host, port=port)

    def on_records(self, peer: GossipPeer, msg: Peers) -> None:
        """Verify and learn the records a peer sent; bad ones are dropped, the peer stays."""
        if not self._within_budget(peer.overlay, len(msg.records)):
            self.rate_limited += len(msg.records)
            return
        told = self._told.setdefault(peer.overlay, set())
        for record in msg.records:
            self.received += 1
            try:
                verify_peer_record(record, self.network_id)
            except BadPeerRecord as exc:
                self.rejected += 1
                log.warning("dropped a peer record from %s: %s", peer.overlay.hex()[:12], exc)
                continue
            overlay = record.overlay
            if overlay == self.overlay or not record.host or not record.port:
                continue
            address = PeerAddress(overlay, record.host, record.port)
            if self.records.get(overlay) != record and self._learn(address):
                self.records[overlay] = record
            if overlay in self.records:
                told.add(overlay)  # it knows this one: no need to send it back

    def _within_budget(self, peer: bytes, records: int) -> bool:
        now = self._clock()
        start, count = self._windows.get(peer, (now, 0))
        if now - start >= WINDOW:
            start, count = now, 0
        count += records
        self._windows[peer] = (start, count)
        if count > 4 * RECORDS_PER_WINDOW:
            raise RemoteProtocolError(
                f"gossip flood: {count} peer records in {WINDOW:g}s", GoodbyeCode.OVERLOADED
            )
        return count <= RECORDS_PER_WINDOW

    def drop_record(self, overlay: bytes) -> None:
        """The address book let this peer go: stop keeping and relaying its record."""
        self.records.pop(overlay, None)

    def forget(self, peer: bytes) -> None:
        self._told.pop(peer, None)
        self._windows.pop(peer, None)

    def parting(self, peer: bytes) -> Peers:
        """What a peer turned away is told before the Goodbye: our record and the records
        closest to it, so that a newcomer whose only bootnode is full still finds its place."""
        closest = heapq.nlargest(
            MAX_PEER_RECORDS - 1,
            (r for o, r in self.records.items() if o != peer),
            key=lambda r: proximity(r.overlay, peer),
        )
        return Peers(tuple(([self.own] if self.own is not None else []) + closest))

    async def tell(self, peer: GossipPeer) -> int:
        """Send `peer` every record it has not been sent yet; returns how many."""
        told = self._told.setdefault(peer.overlay, set())
        fresh = []
        if self.own is not None and self.overlay not in told:
            fresh.append(self.own)
        fresh += [r for o, r in self.records.items() if o not in told and o != peer.overlay]
        for start in range(0, len(fresh), MAX_PEER_RECORDS):
            batch = fresh[start : start + MAX_PEER_RECORDS]
            await peer.conn.send(Peers(tuple(batch)), Priority.LIVE)
            told.update(r.overlay for r in batch)
        return len(fresh)

    async def run(self, peers: Callable[[], Iterable[GossipPeer]]) -> None:
        """Every `interval`, tell every connected peer what it has not heard yet."""
        while True:
            await trio.sleep(self.interval)
            for peer in peers():
                if not peer.conn.closed:
                    peer.conn.start_soon(self.tell, peer)
