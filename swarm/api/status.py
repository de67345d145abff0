"""What a node reports about itself: the `GET /sync` and `GET /topology` documents, loss totals.

Pure functions of one `NodeStatistics` snapshot, so that what the node runs and what it reports
can each be read on its own.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from streamer.messages import SignedState
from swarm.net.sessions import TRAFFIC, Disconnection
from swarm.reserve.status import reserve_document
from swarm.statistics import ConnectionStatus, NodeStatistics
from syncer.puller import PeerSyncStatus
from syncer.stats import COUNTERS

__all__ = ["TRAFFIC", "loss_totals", "sync_document", "topology_document"]

BEE_BINS = 32
"""Bins ``bin_0`` .. ``bin_31`` are always in ``/topology`` (bee-js's getTopology reads each)."""


def sync_document(stats: NodeStatistics) -> dict[str, Any]:
    """The `GET /sync` document."""
    pulling = {peer.overlay: peer for peer in stats.sync.peers}
    peers = [_peer_status(stats, conn, pulling.get(conn.overlay)) for conn in stats.connections]
    return {
        "overlay": stats.overlay.hex(),
        "epoch": stats.epoch,
        "depth": stats.depth,
        "chunks": stats.chunks,
        # worker processes verifying synced chunks (fewer than configured: one died, see the log)
        "verify_workers": stats.verify_workers,
        "fully_synced": all(p["fully_synced"] for p in peers),
        "reserve": reserve_document(stats.reserve),
        "peers": peers,
        "totals": loss_totals(stats),
        "disconnected": [_disconnection(stats, d) for d in stats.disconnections],
        "proofs": _proofs(stats),
    }


# -- provable streams ----------------------------------------------------------------


def _state(state: SignedState | None) -> dict[str, Any] | None:
    """A verified state of a peer's bin log: accepted only with a good signature."""
    if state is None:
        return None
    return {"size": state.size, "root": state.root.hex(), "signature": "ok"}


def _receipts(stats: NodeStatistics, downstream: bytes) -> list[dict[str, Any]]:
    """The latest receipts a downstream sent us, per bin and run: the ranges of our log it took over."""
    kept = stats.proofs.receipts if stats.proofs else ()
    return [
        {"bin": k.receipt.bin, "start": k.receipt.start, "end": k.receipt.end, "root": k.receipt.root.hex()}
        for k in sorted(kept, key=lambda k: k.receipt.bin)
        if k.downstream == downstream
    ]


def _proofs(stats: NodeStatistics) -> dict[str, Any]:
    """This node's provable-sync mode, its counters and the evidence of equivocations it holds."""
    proofs = stats.proofs
    if proofs is None:
        return {"mode": "off"}
    return {
        "mode": proofs.mode,
        "states_signed": proofs.states_signed,
        "flushes": proofs.flushes,
        "state_equivocations": proofs.equivocations,
        "epoch_renewals": proofs.epoch_renewals,
        "evidence": [
            {
                "upstream": e.upstream.hex(),
                "public_key": e.public_key.hex(),
                "bin": e.first.bin,
                "epoch": e.first.epoch,
                "size": e.first.size,
                "roots": [e.first.root.hex(), e.second.root.hex()],
                "signatures": [e.first.signature.hex(), e.second.signature.hex()],
            }
            for e in proofs.recent_equivocations
        ],
    }


def _peer_status(
    stats: NodeStatistics, conn: ConnectionStatus, sync: PeerSyncStatus | None
) -> dict[str, Any]:
    counters = stats.sync.stats.get(conn.overlay)
    counts = {name: counters.counts[name] if counters else 0 for name in COUNTERS}
    counts.update(stats.traffic.get(conn.overlay, dict.fromkeys(TRAFFIC, 0)))
    changed = counters.changed if counters else {}
    states = (stats.states or {}).get(conn.overlay, {})
    return {
        "overlay": conn.overlay.hex(),
        "po": conn.po,
        "epoch": sync.epoch if sync else None,
        "fully_synced": sync.fully_synced if sync else False,
        "bins": [
            {
                "bin": b.bin,
                "cursor": b.cursor,
                "synced": [list(r) for r in b.synced],
                "lag": b.lag,
                "behind_seconds": round(b.behind, 3),
                "last_batch": b.last_batch,
                "state": _state(states.get(b.bin)),
            }
            for b in (sync.bins if sync else ())
        ],
        "stats": counts,
        "last_change": {name: changed[name] for name in COUNTERS if changed.get(name)},
        "serving": {
            "subscriptions": [[b, live] for b, live in conn.serving],
            "offered": conn.offered,
            "delivered": conn.delivered,
            "skipped": conn.skipped,
            "receipts": _receipts(stats, conn.overlay),
            "proof_bytes": conn.proof_bytes,
        },
    }


def _disconnection(stats: NodeStatistics, record: Disconnection) -> dict[str, Any]:
    """One ended session, with the peer's loss counters (kept across its sessions) as of now."""
    counters = stats.sync.stats.get(record.overlay)
    return {
        "overlay": record.overlay.hex(),
        "po": record.po,
        "at": record.at,
        "by": record.by,
        "code": record.code,
        "reason": record.reason,
        "violation": record.violation,
        "connected_again": any(c.overlay == record.overlay for c in stats.connections),
        "stats": {name: counters.counts[name] if counters else 0 for name in COUNTERS},
    }


def topology_document(stats: NodeStatistics) -> dict[str, Any]:
    """The `GET /topology` document, shaped like the reference node's."""
    outbound = {conn.overlay: conn.outbound for conn in stats.connections}
    table = stats.table
    empty = {"population": 0, "connected": 0, "disconnectedPeers": [], "connectedPeers": []}
    bins: dict[str, dict[str, Any]] = {f"bin_{po}": dict(empty) for po in range(BEE_BINS)}  # bee-js reads all
    for b in table.bins:
        connected = set(b.connected_peers)
        bins[f"bin_{b.po}"] = {
            "population": b.known,
            "connected": b.connected,
            "disconnectedPeers": [{"address": p.hex()} for p in b.known_peers if p not in connected],
            "connectedPeers": [
                {"address": p.hex(), "outbound": outbound.get(p, False)}
                for p in b.known_peers
                if p in connected
            ],
        }
    return {
        "baseAddr": stats.overlay.hex(),
        "population": table.known,
        "connected": table.connected,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "nnLowWatermark": table.neighbourhood_size,
        "depth": stats.depth,
        # Bee's words: the node listens on a port it was given, and peers are reachable or not
        "reachability": "Public",
        "networkAvailability": "Available" if table.connected else "Unavailable",
        "saturation": stats.saturation,
        "strategy": stats.strategy,
        "forwarding": stats.forwarding,
        "bins": bins,
    }


def loss_totals(stats: NodeStatistics) -> dict[str, int]:
    """Node-wide counters over every peer ever connected (dropped peers included)."""
    totals = dict.fromkeys(COUNTERS, 0)
    for counters in stats.sync.stats.values():
        for name in COUNTERS:
            totals[name] += counters.counts[name]
    for traffic in stats.traffic.values():
        for name, value in traffic.items():
            totals[name] += value
    totals["violations"] = stats.violations
    totals["handshakes_refused"] = stats.handshakes_refused
    totals["turned_away"] = stats.turned_away
    totals["sessions_refused"] = stats.sessions_refused
    totals["equivocations"] = stats.equivocations
    totals["damaged_repaired"] = stats.repairs.repaired
    totals["damaged_lost"] = stats.repairs.failed
    totals["state_equivocations"] = stats.proofs.equivocations if stats.proofs else 0
    for name, value in asdict(stats.gossip).items():
        totals[f"peer_records_{name}"] = value
    return totals
