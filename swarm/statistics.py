"""NodeStatistics: one immutable snapshot of what a node reports, taken from its services.

The `/sync` and `/topology` documents, the Prometheus metrics and the command line's views are
all pure functions of this snapshot (`swarm.api.status`, `swarm.api.metrics`), so they agree with each
other and none of them reaches into a running service.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from kademlia import PeerTable, TableSnapshot
from streamer.messages import BIN_COUNT, SignedState
from swarm.live.results import LiveStatistics
from swarm.net.gossip import GossipCounters
from swarm.net.repair import RepairCounters
from swarm.net.retrieval import Retrieval, RetrievalStatistics
from swarm.net.sessions import Disconnection, Sessions
from swarm.proofs.service import ProofsSnapshot
from swarm.reserve.status import ReserveStatus
from syncer.provable import ProvenLogs
from syncer.puller import Puller, PullerStatistics
from syncer.verifier import ChunkVerifier

__all__ = ["ConnectionStatus", "NodeStatistics", "collect_statistics"]


class _Store(Protocol):
    @property
    def epoch(self) -> int: ...

    def __len__(self) -> int: ...

    def cursors(self) -> list[int]: ...


@dataclass(frozen=True)
class ConnectionStatus:
    """A connected peer as this node serves it (the upstream side of the connection)."""

    overlay: bytes
    po: int
    outbound: bool
    serving: tuple[tuple[int, bool], ...]  # streams (bin, live) the peer pulls from us
    offered: int  # hashes offered to it
    delivered: int  # chunks delivered to it
    skipped: int  # bin IDs of chunks it gave us, passed over in live offers (syncer/given.py)
    proof_bytes: dict[str, int] = field(default_factory=dict)  # provable streams


@dataclass(frozen=True)
class NodeStatistics:
    overlay: bytes
    epoch: int
    chunks: int
    cursors: tuple[int, ...]
    verify_workers: int  # live verifier worker processes (fewer than configured: one died)
    sync: PullerStatistics
    connections: tuple[ConnectionStatus, ...]  # by overlay
    traffic: dict[bytes, dict[str, int]]  # byte counters of every session with each peer
    disconnections: tuple[Disconnection, ...]  # newest first
    violations: int
    handshakes_refused: int
    turned_away: int  # inbound connections closed at once: too many greetings under way
    gossip: GossipCounters  # peer records: received, rejected (bad), rate_limited, refused (not kept)
    equivocations: int  # single-owner chunks signed twice with different content, seen here
    repairs: RepairCounters  # damaged chunks fetched again from peers, or given up
    retrieval: RetrievalStatistics
    table: TableSnapshot
    strategy: str
    saturation: int
    forwarding: str = "closest"  # the next-hop rule (kademlia.forwarding)
    # -- provable streams: the proofs' counters, and per peer and bin the latest state
    # of its log this node verified (verify mode)
    proofs: ProofsSnapshot | None = None
    states: dict[bytes, dict[int, SignedState]] | None = None
    live: LiveStatistics | None = None  # live propagation: the loss table and its traffic

    reserve: ReserveStatus = field(default_factory=ReserveStatus)  # capacity, radius, receipts
    sessions_refused: int = 0  # inbound sessions the table did not want (kademlia.admission)

    @property
    def depth(self) -> int:
        return self.sync.depth


def collect_statistics(
    *,
    overlay: bytes,
    store: _Store,
    verifier: ChunkVerifier,
    puller: Puller,
    sessions: Sessions,
    retrieval: Retrieval,
    table: PeerTable,
    strategy: str,
    saturation: int,
    forwarding: str = "closest",
    gossip: GossipCounters,
    equivocations: int,
    repairs: RepairCounters,
    reserve: ReserveStatus | None = None,
    proofs: ProofsSnapshot | None = None,
    live: LiveStatistics | None = None,
) -> NodeStatistics:
    peers = sorted(sessions.peers.values(), key=lambda p: p.overlay)
    connections = tuple(
        ConnectionStatus(
            peer.overlay,
            peer.po,
            peer.conn.outbound,
            tuple(peer.upstream.subscriptions),
            peer.upstream.offered,
            peer.upstream.delivered,
            peer.upstream.skipped,
            dict(peer.upstream.proof_bytes, receipt_count=peer.upstream.receipts),
        )
        for peer in peers
    )
    everyone = set(sessions.past_traffic) | set(sessions.peers)
    return NodeStatistics(
        overlay=overlay,
        epoch=store.epoch,
        chunks=len(store),
        cursors=tuple(store.cursors()),
        verify_workers=verifier.live_workers,
        sync=puller.statistics(),
        connections=connections,
        traffic={peer: sessions.traffic(peer) for peer in everyone},
        disconnections=tuple(sessions.disconnections),
        violations=sessions.violations,
        handshakes_refused=sessions.handshakes_refused,
        turned_away=sessions.turned_away,
        sessions_refused=sessions.sessions_refused,
        gossip=gossip,
        equivocations=equivocations,
        repairs=repairs,
        proofs=proofs,
        states={peer.overlay: _verified_states(peer.client.session.logs) for peer in peers},
        retrieval=retrieval.statistics(),
        table=table.snapshot(),
        strategy=strategy,
        saturation=saturation,
        forwarding=forwarding,
        reserve=reserve or ReserveStatus(),
        live=live,
    )


def _verified_states(logs: ProvenLogs | None) -> dict[int, SignedState]:
    """The latest state of each bin accepted from a peer (none when not verifying)."""
    if logs is None:
        return {}
    return {bin: state for bin in range(BIN_COUNT) if (state := logs.latest(bin)) is not None}
