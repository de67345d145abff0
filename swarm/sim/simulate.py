"""One grid key end to end: run its scenario, tally the lookups, measure. A pure function of its inputs.

This is the per-key function both the Spark job and the serial loop of ``benches/sim.py`` call.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Any

from .grid import GridKey, SimParams
from .metrics import (
    Lookup,
    gap_po,
    gap_temperature,
    gini,
    max_over_mean,
    mean,
    percentile,
)
from .network import SimNetwork
from .scenario import run_scenario
from .storage import ChunkStore

__all__ = ["NODE_COLUMNS", "RUN_COLUMNS", "SimResult", "Tally", "simulate"]

# (name, type) in table order; types are Spark SQL type names: see swarm.sim.spark for the schemas
RUN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("strategy", "string"),
    ("nodes", "int"),
    ("run", "int"),
    ("known_mean", "double"),  # peers an online node knows at the end
    ("lookups", "int"),
    ("gap_po_mean", "double"),
    ("gap_po_worst", "int"),
    ("temperature_mean", "double"),
    ("gini", "double"),
    ("max_over_mean", "double"),
    ("relayed_max", "int"),
    ("hops_mean", "double"),
    ("hops_p95", "int"),
    ("hops_max", "int"),
    ("failed", "double"),
    ("retrieval_hops_mean", "double"),
    ("retrieval_failed", "double"),
    ("retrieval_gini", "double"),
    ("retrieval_max_over_mean", "double"),
    ("storage_gini", "double"),
    ("storage_max_over_mean", "double"),
    ("replication_mean", "double"),
    ("replication_min", "int"),
    ("lost", "int"),  # uploaded chunks nobody holds at the end
    ("connections_mean", "double"),
    ("connections_max", "int"),
    ("depth_mean", "double"),
    ("rounds", "int"),  # rounds until the network first settled
    ("dial_failures", "int"),
    ("churned", "int"),  # nodes that left (as many joined)
)
NODE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("strategy", "string"),
    ("nodes", "int"),
    ("run", "int"),
    ("node", "int"),
    ("overlay", "string"),
    ("joined", "int"),  # the round it came online
    ("left", "int"),  # the round it left, -1 if online at the end
    ("known", "int"),  # at the end (or when it left), like the next five
    ("connections", "int"),
    ("outbound", "int"),
    ("depth", "int"),
    ("gap_po", "int"),
    ("temperature", "double"),
    ("relayed", "int"),
    ("served", "int"),  # lookups that stopped at this node
    ("retrieval_load", "int"),
    ("storage", "double"),  # the share of all chunks it stores: 2 ** -depth
    ("lookup_rounds", "int"),  # lookup rounds it was online for
)


@dataclass(frozen=True)
class SimResult:
    """One row of the per-run table and the rows of the per-node table for one key (as tuples)."""

    run: tuple[Any, ...]
    nodes: list[tuple[Any, ...]]


class Tally:
    """The loads and outcomes of every lookup round, per node and overall."""

    def __init__(self) -> None:
        self.relayed: list[int] = []
        self.served: list[int] = []
        self.retrieval_load: list[int] = []
        self.lookup_rounds: list[int] = []
        self.hops: list[int] = []
        self.failed = 0
        self.retrieval_hops: list[int] = []
        self.unretrieved = 0
        self.replication: list[int] = []
        self.lost = 0  # uploaded chunks nobody holds, at the last lookup round

    def __call__(self, net: SimNetwork, store: ChunkStore, lookups: list[tuple[Lookup, int]]) -> None:
        grow = len(net.overlays) - len(self.relayed)
        for counts in (self.relayed, self.served, self.retrieval_load, self.lookup_rounds):
            counts.extend([0] * grow)
        for i in net.online_nodes():
            self.lookup_rounds[i] += 1
        self.lost = store.lost()
        for lookup, chunk in lookups:
            self.hops.append(lookup.hops)
            self.failed += lookup.failed
            self.served[lookup.path[-1]] += 1
            for r in lookup.relays:
                self.relayed[r] += 1
            if lookup.retrieved:
                self.retrieval_hops.append(lookup.stored_at)
                for v in lookup.retrieval_path:
                    self.retrieval_load[v] += 1
            else:
                self.unretrieved += 1
            self.replication.append(store.replication(chunk))

    def rates(self, loads: list[int]) -> list[float]:
        """Loads per lookup round online, over the nodes online for at least one lookup round."""
        return [load / rounds for load, rounds in zip(loads, self.lookup_rounds, strict=True) if rounds]


def simulate(key: GridKey, params: SimParams) -> SimResult:
    """Run the scenario of ``key`` and return its per-run and per-node rows.

    Python's cyclic garbage collector is paused meanwhile: a big network is millions of long-lived
    tuples (pot nodes) that every full collection would walk again (a fifth of the time at 4,096 nodes);
    the network holds no reference cycles, so reference counting frees it when it is dropped.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        return _simulate(key, params)
    finally:
        if paused:
            gc.enable()


@dataclass(frozen=True)
class _NodeStats:
    """Per node, at the end (or when it left): what its table says."""

    gaps: list[int]
    temperatures: list[float]
    connections: list[int]
    depths: list[int]
    online: list[int]

    @classmethod
    def of(cls, net: SimNetwork) -> _NodeStats:
        tables = net.tables
        return cls(
            [gap_po(t) for t in tables],
            [gap_temperature(t) for t in tables],
            [t.connected_count() for t in tables],
            [t.depth() for t in tables],
            net.online_nodes(),
        )


def _simulate(key: GridKey, params: SimParams) -> SimResult:
    tally = Tally()
    net, settled_after = run_scenario(key, params, tally)
    stats = _NodeStats.of(net)
    return SimResult(_run_row(key, net, tally, stats, settled_after), _node_rows(key, net, tally, stats))


def _run_row(
    key: GridKey, net: SimNetwork, tally: Tally, stats: _NodeStats, settled_after: int
) -> tuple[Any, ...]:
    online = stats.online
    storage = [2.0 ** -stats.depths[i] for i in online]
    relay_rates = tally.rates(tally.relayed)
    retrieval_rates = tally.rates(tally.retrieval_load)
    return (
        key.strategy,
        key.nodes,
        key.run,
        mean([net.tables[i].known_count() for i in online]),
        len(tally.hops),
        mean([stats.gaps[i] for i in online]),
        min(stats.gaps[i] for i in online),
        mean([stats.temperatures[i] for i in online]),
        gini(relay_rates),
        max_over_mean(relay_rates),
        max(tally.relayed),
        mean(tally.hops),
        int(percentile(tally.hops, 95)),
        max(tally.hops),
        tally.failed / len(tally.hops),
        mean(tally.retrieval_hops) if tally.retrieval_hops else 0.0,
        tally.unretrieved / len(tally.hops),
        gini(retrieval_rates),
        max_over_mean(retrieval_rates),
        gini(storage),
        max_over_mean(storage),
        mean(tally.replication),
        min(tally.replication),
        tally.lost,
        mean([stats.connections[i] for i in online]),
        max(stats.connections[i] for i in online),
        mean([stats.depths[i] for i in online]),
        settled_after,
        net.dial_failures,
        sum(1 for left in net.left if left >= 0),
    )


def _node_rows(key: GridKey, net: SimNetwork, tally: Tally, stats: _NodeStats) -> list[tuple[Any, ...]]:
    return [
        (
            key.strategy,
            key.nodes,
            key.run,
            i,
            net.overlays[i].hex(),
            net.joined[i],
            net.left[i],
            net.tables[i].known_count(),
            stats.connections[i],
            net.outbound[i],
            stats.depths[i],
            stats.gaps[i],
            stats.temperatures[i],
            tally.relayed[i],
            tally.served[i],
            tally.retrieval_load[i],
            2.0 ** -stats.depths[i],
            tally.lookup_rounds[i],
        )
        for i in range(len(net.overlays))
    ]
