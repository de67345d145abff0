"""`GET /metrics`: the node's counters in the Prometheus text format (prometheus_client).

A custom collector turns one `NodeStatistics` snapshot, taken at scrape time, into metric
families, so there is one source of truth (the services' own counters) and nothing to keep in
step.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from swarm.api.status import loss_totals
from swarm.live.metrics import live_families
from swarm.reserve.status import reserve_families
from swarm.statistics import NodeStatistics
from syncer.stats import COUNTERS

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_SYNC_HELP = {
    "offered": "hashes offered to this node by its upstream peers",
    "wanted": "offered hashes this node asked for",
    "delivered": "valid chunks delivered to this node by pull syncing",
    "repeat": "delivered chunks that were already stored",
    "unsolicited": "deliveries nobody asked for (the peer was dropped)",
    "invalid": "deliveries whose data did not match the address (the peer was dropped)",
    "missing": "wanted chunks never delivered (the peer went away or timed out)",
    "resets": "times a peer's store epoch changed and its intervals were voided",
}


class NodeCollector(Collector):
    """Metric families of one snapshot."""

    def __init__(self, stats: NodeStatistics) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Metric]:
        stats = self.stats
        totals = loss_totals(stats)
        yield GaugeMetricFamily("swarm_chunks_stored", "chunks in the local store", value=stats.chunks)
        yield GaugeMetricFamily("swarm_depth", "neighbourhood depth", value=stats.depth)
        yield GaugeMetricFamily("swarm_peers_connected", "connected peers", value=len(stats.connections))
        yield GaugeMetricFamily("swarm_peers_known", "known peers", value=stats.table.known)
        yield GaugeMetricFamily(
            "swarm_fully_synced",
            "1 when every peer's pulled bins are synced",
            value=int(stats.sync.fully_synced),
        )
        for name in COUNTERS[:8]:
            yield CounterMetricFamily(f"swarm_sync_{name}", _SYNC_HELP[name], value=totals[name])
        for kind in ("payload", "protocol"):
            family = CounterMetricFamily(
                f"swarm_{kind}_bytes", f"{kind} bytes on peer connections", labels=["direction"]
            )
            family.add_metric(["in"], totals[f"{kind}_bytes_in"])
            family.add_metric(["out"], totals[f"{kind}_bytes_out"])
            yield family
        yield from _lag_families(stats)
        yield from _retrieval_families(stats)
        yield from reserve_families(stats.reserve)
        yield from _safety_families(stats)
        cursors = GaugeMetricFamily("swarm_pull_index_cursor", "highest bin ID per bin", labels=["bin"])
        for bin, cursor in enumerate(stats.cursors):
            if cursor:
                cursors.add_metric([str(bin)], cursor)
        yield cursors
        if stats.live is not None:
            yield from live_families(stats.live)


def _safety_families(stats: NodeStatistics) -> Iterator[Metric]:
    """What was refused, found damaged or caught equivocating: the hardening counters."""
    yield CounterMetricFamily(
        "swarm_protocol_violations", "peers dropped for breaking the protocol", value=stats.violations
    )
    yield CounterMetricFamily(
        "swarm_handshakes_refused",
        "connections refused during the handshake (wrong network, bad signature, version ...)",
        value=stats.handshakes_refused,
    )
    yield CounterMetricFamily(
        "swarm_connections_turned_away",
        "inbound connections closed at once because too many greetings were under way",
        value=stats.turned_away,
    )
    yield CounterMetricFamily(
        "swarm_sessions_refused",
        "inbound sessions refused after the handshake: their bin (or the node) was full",
        value=stats.sessions_refused,
    )
    yield CounterMetricFamily(
        "swarm_equivocations",
        "single-owner chunks signed twice with different content (both kept as evidence)",
        value=stats.equivocations,
    )
    repairs = CounterMetricFamily(
        "swarm_damaged_chunks",
        "chunks found damaged on disk: fetched again from a peer, or lost (no peer had them)",
        labels=["outcome"],
    )
    for outcome, value in asdict(stats.repairs).items():
        repairs.add_metric([outcome], value)
    yield repairs
    yield CounterMetricFamily(  # provable streams
        "swarm_state_equivocations",
        "states of a peer's bin log signed twice with different roots (both kept as evidence)",
        value=stats.proofs.equivocations if stats.proofs else 0,
    )
    records = CounterMetricFamily(
        "swarm_peer_records",
        "gossiped peer records: received, rejected (bad signature or network), rate_limited "
        "(over a peer's budget), refused (an address not to dial, or a full bin)",
        labels=["outcome"],
    )
    for outcome, value in asdict(stats.gossip).items():
        records.add_metric([outcome], value)
    yield records


def _lag_families(stats: NodeStatistics) -> Iterator[Metric]:
    """Lag as time, per peer and bin pulled (docs/architecture.md, "Lag as time")."""
    behind = GaugeMetricFamily(
        "swarm_sync_behind_seconds",
        "age of the oldest ID a peer holds in a bin and this node has not synced (0: caught up)",
        labels=["peer", "bin"],
    )
    last = GaugeMetricFamily(
        "swarm_sync_last_batch_timestamp_seconds",
        "wall-clock time the last batch of a peer's bin was synced",
        labels=["peer", "bin"],
    )
    for peer in stats.sync.peers:
        for b in peer.bins:
            labels = [peer.overlay.hex(), str(b.bin)]
            behind.add_metric(labels, b.behind)
            if b.last_batch is not None:
                last.add_metric(labels, b.last_batch)
    yield behind
    yield last


def _retrieval_families(stats: NodeStatistics) -> Iterator[Metric]:
    r = stats.retrieval
    retrievals = CounterMetricFamily("swarm_retrievals", "retrieval outcomes", labels=["outcome"])
    for outcome in ("served", "forwarded", "failed", "fetched", "joined"):
        retrievals.add_metric([outcome], getattr(r, outcome))
    yield retrievals
    lookups = CounterMetricFamily(
        "swarm_cache_lookups", "chunk cache lookups after a local store miss", labels=["result"]
    )
    lookups.add_metric(["hit"], r.cache_hits)
    lookups.add_metric(["miss"], r.cache_misses)
    yield lookups
    yield GaugeMetricFamily("swarm_cache_chunks", "chunks in the retrieval cache", value=r.cache_chunks)
    yield GaugeMetricFamily("swarm_cache_bytes", "chunk data in the retrieval cache", value=r.cache_bytes)


def metrics_text(stats: NodeStatistics) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NodeCollector(stats))
    return generate_latest(registry)
