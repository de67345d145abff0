"""Peer gossip: nodes tell each other, in signed records, which peers they know and where.

On connecting, and then every `interval` seconds, a node sends each connected peer the records
it has not sent that peer yet (its own first). A record is signed by the peer it describes, so a
gossiping node cannot invent or redirect addresses: records with a bad signature or of another
network are dropped (and counted), the rest go to the address book and the Kademlia table. A
node given a single bootnode thereby learns the whole swarm.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Protocol

import trio

from kademlia.addresses import PeerAddress
from streamer.connection import PeerConnection
from streamer.identity import BadPeerRecord, NodeIdentity, make_peer_record, verify_peer_record
from streamer.messages import MAX_PEER_RECORDS, PeerRecord, Peers
from streamer.outbox import Priority

log = logging.getLogger(__name__)


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
        learn: Callable[[PeerAddress], None],
        *,
        interval: float = 5.0,
    ) -> None:
        self.network_id = network_id
        self.overlay = identity.overlay(network_id)
        self._identity = identity
        self._learn = learn
        self.interval = interval
        self.own: PeerRecord | None = None
        self.records: dict[bytes, PeerRecord] = {}
        self._told: dict[bytes, set[bytes]] = {}  # peer -> overlays of records sent to it
        self.received = 0
        self.rejected = 0

    def advertise(self, host: str, port: int) -> None:
        """Sign the record of where this node listens (after the listener is bound)."""
        self.own = make_peer_record(self._identity, network_id=self.network_id, host=host, port=port)

    def on_records(self, peer: GossipPeer, msg: Peers) -> None:
        """Verify and learn the records a peer sent; bad ones are dropped, the peer stays."""
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
            told.add(overlay)  # it knows this one: no need to send it back
            if overlay == self.overlay or not record.host or not record.port:
                continue
            if self.records.get(overlay) != record:
                self.records[overlay] = record
                self._learn(PeerAddress(overlay, record.host, record.port))

    def forget(self, peer: bytes) -> None:
        self._told.pop(peer, None)

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
