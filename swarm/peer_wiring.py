"""How one connection is wired into the node's services (part of the composition root).

For each connection: our handshake, signed over the peer's Hello nonce and the channel; the
`Peer` with the services it speaks to (its `Upstream` over the leased store, its
`PullSyncClient`, its retrieve requests) and the handlers each sub-protocol's services register
for the messages they take (pull sync, retrieval, push syncing, gossip, live propagation); and
what its arrival and departure change (topology, depth, pulling, gossip, live propagation).
`Node` builds one `PeerWiring` once every service exists and hands its methods to `Sessions`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import cast

from kademlia import PeerTable
from localstore.store import LocalStore
from pot import MAX_PO, proximity
from streamer.connection import PeerConnection
from streamer.identity import NodeIdentity, make_handshake
from streamer.messages import PROTOCOL_VERSION, Handshake, Peers
from streamer.requests import RequestTable
from swarm.config import NodeConfig
from swarm.live.service import LiveService
from swarm.net.gossip import Gossip
from swarm.net.peer import Peer
from swarm.net.pushsync import PushSync
from swarm.net.retrieval import Retrieval
from swarm.net.topology import Topology
from swarm.proofs.service import NodeProofs
from swarm.reserve.offer_leases import LeasedStore, OfferLeases
from syncer.given import GivenRanges
from syncer.intake import ChunkIntake
from syncer.puller import Puller
from syncer.pullsync import PullSyncClient
from syncer.transfers import Transfers
from syncer.upload_first import UploadFirst
from syncer.upstream import Upstream

__all__ = ["PeerWiring"]


@dataclass(frozen=True)
class PeerWiring:
    """The services a connection is wired to; ``p2p_port`` is read when a handshake is made."""

    config: NodeConfig
    identity: NodeIdentity
    overlay: bytes
    p2p_port: Callable[[], int]
    store: LocalStore
    offer_leases: OfferLeases
    transfers: Transfers
    intake: ChunkIntake
    puller: Puller
    proofs: NodeProofs
    table: PeerTable
    topology: Topology
    gossip: Gossip
    retrieval: Retrieval
    live: LiveService
    pushsync: PushSync
    upload_first: UploadFirst  # live offers wait while this node serves uploads

    def handshake(self, challenge: bytes, binding: bytes) -> Handshake:
        """Our handshake for one connection, signed over the peer's Hello nonce and the channel."""
        return make_handshake(
            self.identity,
            version=PROTOCOL_VERSION,
            network_id=self.config.network_id,
            epoch=self.store.epoch,
            host=self.config.host,
            port=self.p2p_port(),
            challenge=challenge,
            binding=binding,
        )

    def make_peer(self, conn: PeerConnection) -> Peer:
        """The services one connection speaks to."""
        overlay, remote = conn.overlay, conn.remote
        requests = RequestTable()
        timeout = self.config.retrieve_timeout
        given = GivenRanges()  # what the peer delivers us: not offered back to it
        client = PullSyncClient(
            conn,
            remote.epoch,
            transfers=self.transfers,
            intake=self.intake,
            stats=self.puller.stats_of(overlay),
            fetch=partial(requests.retrieve, conn, hop_limit=0, timeout=timeout),
            completed=partial(self.puller.record, overlay),
            observed=partial(self.puller.observe, overlay),
            config=self.config.puller,
            verifying=self.proofs.verifying(overlay, remote.public_key, remote.epoch),
            given=given,
        )
        # the upstream sees the store through leases: what it offers is not evicted meanwhile
        upstream = Upstream(
            conn,
            cast(LocalStore, LeasedStore(self.store, self.offer_leases)),
            live_idle=self.config.live_idle,
            upload_first=self.upload_first,
            provable=self.proofs.provable(),
            unwanted=self.offer_leases.release_all,
            given=given,
        )
        peer = Peer(
            conn,
            min(proximity(self.overlay, overlay), MAX_PO),
            upstream=upstream,
            client=client,
            requests=requests,
            retrieve_timeout=timeout,
        )
        # what each sub-protocol's services take from this peer; one line each
        peer.handle(upstream.handlers())  # pull sync, as the upstream
        peer.handle(client.handlers())  # pull sync, as the downstream
        peer.handle(requests.handlers())  # retrieval: answers to our requests
        peer.handle(self.retrieval.handlers(peer))  # retrieval: the peer's requests
        peer.handle(peer.pushes.handlers())  # push sync: answers to our pushes
        peer.handle(self.pushsync.handlers(peer))  # push sync: the peer's pushes
        peer.handle({Peers: partial(self.on_peers, peer)})  # gossip
        peer.handle(self.live.handlers(peer))  # live propagation
        return peer

    def connected(self, peer: Peer) -> None:
        """A session runs: the peer joins the topology, the depth may change, pulling starts."""
        remote = peer.conn.remote
        self.topology.connected(peer.overlay, remote.host, remote.port)
        self.puller.set_depth(self.table.depth())
        peer.conn.start_soon(self.puller.pull, peer.client, peer.po)
        if self.config.gossip:
            peer.conn.start_soon(self.gossip.tell, peer)
        self.live.peer_connected(peer)

    def disconnected(self, peer: Peer) -> None:
        """A session ended: the peer leaves live propagation, gossip and the topology."""
        self.live.peer_disconnected(peer)
        self.gossip.forget(peer.overlay)
        self.puller.set_depth(self.table.depth())
        self.topology.disconnected(peer.overlay)

    def retired(self, overlay: bytes) -> None:
        """A peer gone long ago: its own sync counters are summed with the other retired ones."""
        self.puller.retire(overlay)

    def on_peers(self, peer: Peer, msg: Peers) -> None:
        if self.config.gossip:
            self.gossip.on_records(peer, msg)
