"""What a node reports about itself: the `GET /sync` and `GET /topology` documents, loss totals.

Reads of a running Node's state (its peers, the puller's statistics, the peer table, the store),
kept apart from the node so that what it runs and what it reports can each be read on its own.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from syncer.stats import COUNTERS

if TYPE_CHECKING:
    from swarm.node import Node

__all__ = ["TRAFFIC", "loss_totals", "sync_status", "topology", "traffic"]

TRAFFIC = ("payload_bytes_in", "protocol_bytes_in", "payload_bytes_out", "protocol_bytes_out")


def traffic(node: Node, overlay: bytes) -> dict[str, int]:
    """Byte counters of every session with the peer ``overlay``, the current one included."""
    totals = dict(node.past_traffic.get(overlay, dict.fromkeys(TRAFFIC, 0)))
    peer = node.peers.get(overlay)
    if peer is not None:
        for name in TRAFFIC:
            totals[name] += getattr(peer.conn.stats, name)
    return totals


def sync_status(node: Node) -> dict[str, Any]:
    """The `GET /sync` document."""
    peers = []
    for peer in sorted(node.peers.values(), key=lambda p: p.overlay):
        status = peer.puller.status()
        stats = node.puller.stats_of(peer.overlay).snapshot()
        counts = {name: stats.counts[name] for name in COUNTERS}
        counts.update(traffic(node, peer.overlay))
        status["stats"] = counts
        status["last_change"] = {name: stats.changed[name] for name in COUNTERS if stats.changed[name]}
        status["serving"] = {
            "subscriptions": [[b, live] for b, live in peer.upstream.subscriptions],
            "offered": peer.upstream.offered,
            "delivered": peer.upstream.delivered,
        }
        peers.append(status)
    return {
        "overlay": node.overlay.hex(),
        "epoch": node.store.epoch,
        "depth": node.depth(),
        "chunks": len(node.store),
        # worker processes verifying synced chunks (fewer than configured: one died, see the log)
        "verify_workers": node.puller.verifier.live_workers,
        "fully_synced": all(p["fully_synced"] for p in peers),
        "peers": peers,
        "totals": loss_totals(node),
        "disconnected": [_disconnection_status(node, d) for d in node.disconnections],
    }


def _disconnection_status(node: Node, record: dict[str, Any]) -> dict[str, Any]:
    """One ended session, with the peer's loss counters (kept across its sessions) as of now."""
    overlay = bytes.fromhex(record["overlay"])
    stats = node.puller.stats_of(overlay).snapshot()
    return {
        **record,
        "connected_again": overlay in node.peers,
        "stats": {name: stats.counts[name] for name in COUNTERS},
    }


def topology(node: Node) -> dict[str, Any]:
    """The `GET /topology` document, shaped like the reference node's."""
    table = node.table
    bins = {}
    for po in range(table.max_po + 1):
        known = table.known(po)
        connected = set(table.connected(po))
        bins[f"bin_{po}"] = {
            "population": len(known),
            "connected": len(connected),
            "disconnectedPeers": [{"address": p.hex()} for p in known if p not in connected],
            "connectedPeers": [
                {"address": p.hex(), "outbound": node.peers[p].conn.outbound} for p in known if p in connected
            ],
        }
    return {
        "baseAddr": node.overlay.hex(),
        "population": table.known_count(),
        "connected": table.connected_count(),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "nnLowWatermark": node.config.neighbourhood_size,
        "depth": node.depth(),
        "saturation": node.config.saturation,
        "strategy": node.config.strategy,
        "bins": bins,
    }


def loss_totals(node: Node) -> dict[str, int]:
    """Node-wide counters over every peer ever connected (dropped peers included)."""
    totals = dict.fromkeys(COUNTERS, 0)
    for stats in node.puller.stats.values():
        for name in COUNTERS:
            totals[name] += stats[name]
    for overlay in set(node.past_traffic) | set(node.peers):
        for name, value in traffic(node, overlay).items():
            totals[name] += value
    totals["violations"] = node.violations
    totals["handshakes_refused"] = node.connections_refused
    return totals
