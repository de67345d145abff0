"""`GET /metrics`: the node's counters in the Prometheus text format (prometheus_client).

A custom collector reads the node's live state on every scrape, so there is one source of truth
(the services' own counters) and nothing to keep in step.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from syncer.stats import COUNTERS

if TYPE_CHECKING:
    from swarm.node import Node

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
    """Reads a node's counters at scrape time."""

    def __init__(self, node: Node) -> None:
        self.node = node

    def collect(self) -> Iterator[Metric]:
        node = self.node
        totals = node.loss_totals()
        yield GaugeMetricFamily("swarm_chunks_stored", "chunks in the local store", value=len(node.store))
        yield GaugeMetricFamily("swarm_depth", "neighbourhood depth", value=node.depth())
        yield GaugeMetricFamily("swarm_peers_connected", "connected peers", value=len(node.peers))
        yield GaugeMetricFamily("swarm_peers_known", "known peers", value=node.table.known_count())
        yield GaugeMetricFamily(
            "swarm_fully_synced",
            "1 when every peer's pulled bins are synced",
            value=int(node.puller.fully_synced()),
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
        retrievals = CounterMetricFamily("swarm_retrievals", "retrieval outcomes", labels=["outcome"])
        r = node.retrieval
        for outcome, value in (
            ("served", r.served),
            ("forwarded", r.forwarded),
            ("failed", r.failed),
            ("fetched", r.fetched),
            ("joined", r.joined),
        ):
            retrievals.add_metric([outcome], value)
        yield retrievals
        cache = r.cache
        lookups = CounterMetricFamily(
            "swarm_cache_lookups", "chunk cache lookups after a local store miss", labels=["result"]
        )
        lookups.add_metric(["hit"], cache.hits)
        lookups.add_metric(["miss"], cache.misses)
        yield lookups
        yield GaugeMetricFamily("swarm_cache_chunks", "chunks in the retrieval cache", value=len(cache))
        yield GaugeMetricFamily("swarm_cache_bytes", "chunk data in the retrieval cache", value=cache.bytes)
        yield CounterMetricFamily(
            "swarm_protocol_violations", "peers dropped for breaking the protocol", value=node.violations
        )
        yield CounterMetricFamily(
            "swarm_handshakes_refused",
            "connections refused during the handshake (wrong network, bad signature, version ...)",
            value=node.connections_refused,
        )
        cursors = GaugeMetricFamily("swarm_pull_index_cursor", "highest bin ID per bin", labels=["bin"])
        for bin, cursor in enumerate(node.store.cursors()):
            if cursor:
                cursors.add_metric([str(bin)], cursor)
        yield cursors


def metrics_text(node: Node) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NodeCollector(node))
    return generate_latest(registry)
