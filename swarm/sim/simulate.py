"""One grid key end to end: build the network, route the lookups, measure. A pure function of its inputs.

This is the per-key function both the Spark job and the serial loop of ``benches/sim.py`` call.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from kademlia import get_strategy

from .grid import GridKey, SimParams, derived_seed, overlay_of
from .metrics import gap_po, gap_temperature, gini, max_over_mean, mean, percentile, route
from .network import Network, build_network

__all__ = ["NODE_COLUMNS", "RUN_COLUMNS", "SimResult", "known_sets", "lookups_of", "simulate"]

# (name, type) in table order; types are Spark SQL type names: see swarm.sim.spark for the schemas
RUN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("strategy", "string"),
    ("nodes", "int"),
    ("run", "int"),
    ("known", "int"),  # peers each node knows at the start
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
    ("connections_mean", "double"),
    ("connections_max", "int"),
    ("depth_mean", "double"),
)
NODE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("strategy", "string"),
    ("nodes", "int"),
    ("run", "int"),
    ("node", "int"),
    ("overlay", "string"),
    ("known", "int"),  # known at the end (inbound connections teach a node new peers)
    ("connections", "int"),
    ("outbound", "int"),
    ("depth", "int"),
    ("gap_po", "int"),
    ("temperature", "double"),
    ("relayed", "int"),
    ("served", "int"),  # lookups that stopped at this node
)


@dataclass(frozen=True)
class SimResult:
    """One row of the per-run table and the rows of the per-node table for one key (as tuples)."""

    run: tuple[Any, ...]
    nodes: list[tuple[Any, ...]]


def known_sets(params: SimParams, nodes: int, run: int) -> list[list[int]]:
    """For each node, the indices of the nodes it knows, in the order it learns them."""
    rng = random.Random(derived_seed("known", params.seed, nodes, run))
    k = params.known_count(nodes)
    sets = []
    for i in range(nodes):
        picked = rng.sample(range(nodes - 1), k)  # among the others: skip i
        sets.append([j + 1 if j >= i else j for j in picked])
    return sets


def lookups_of(params: SimParams, nodes: int, run: int) -> list[tuple[int, bytes]]:
    """The ``(origin, target)`` pairs routed on the network: uniform origins and 32-byte targets."""
    rng = random.Random(derived_seed("lookups", params.seed, nodes, run))
    return [(rng.randrange(nodes), rng.randbytes(32)) for _ in range(params.lookups)]


def network_of(key: GridKey, params: SimParams) -> Network:
    overlays = [overlay_of(params.seed, key.nodes, key.run, i) for i in range(key.nodes)]
    return build_network(
        overlays,
        known_sets(params, key.nodes, key.run),
        get_strategy(key.strategy),
        saturation=params.saturation,
        neighbourhood_size=params.neighbourhood_size,
        max_po=params.max_po,
    )


def simulate(key: GridKey, params: SimParams) -> SimResult:
    """Build the network of ``key``, route its lookups and return its per-run and per-node rows."""
    net = network_of(key, params)
    n = net.size
    relayed = [0] * n
    served = [0] * n
    hops: list[int] = []
    failed = 0
    for origin, target in lookups_of(params, n, key.run):
        lookup = route(net, origin, target)
        hops.append(lookup.hops)
        failed += lookup.failed
        served[lookup.path[-1]] += 1
        for r in lookup.relays:
            relayed[r] += 1
    gaps = [gap_po(t) for t in net.tables]
    temperatures = [gap_temperature(t) for t in net.tables]
    connections = [t.connected_count() for t in net.tables]
    depths = [t.depth() for t in net.tables]
    s, run = key.strategy, key.run
    run_row = (
        s,
        n,
        run,
        params.known_count(n),
        len(hops),
        mean(gaps),
        min(gaps),
        mean(temperatures),
        gini(relayed),
        max_over_mean(relayed),
        max(relayed),
        mean(hops),
        int(percentile(hops, 95)),
        max(hops),
        failed / len(hops),
        mean(connections),
        max(connections),
        mean(depths),
    )
    node_rows = [
        (
            s,
            n,
            run,
            i,
            net.overlays[i].hex(),
            net.tables[i].known_count(),
            connections[i],
            net.outbound[i],
            depths[i],
            gaps[i],
            temperatures[i],
            relayed[i],
            served[i],
        )
        for i in range(n)
    ]
    return SimResult(run_row, node_rows)
