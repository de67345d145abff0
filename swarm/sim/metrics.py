"""Measurements on a simulated network: greedy routing and retrieval, storage, inequality, gap metrics.

Definitions (also in docs/simulation.md):

- **Greedy routing**: a request for ``target`` held by node ``v`` goes to the peer that
  ``kademlia.forwarding.pick_peer`` names under the network's rule, the node's own function: with
  ``closest``, the connected peer closest to ``target`` by XOR, and with ``spread`` rules the least
  recently used of the equally (or nearly) close ones, as ``v`` remembers them; only peers closer to
  ``target`` than ``v`` count, and when there is none the request stops at ``v``. Hops = forwards
  made. The lookup *misses* (``failed``) when it stops anywhere but at the online node closest to ``target``.
- **Storage**: a node is responsible for the chunks of its neighbourhood, those at PO >= its depth from
  it (the sync rule's area); its *storage share* is that fraction of all chunks, ``2 ** -depth``. Which
  nodes actually hold a chunk is ``swarm.sim.storage``; a chunk's *replication* is how many do.
- **Retrieval** of the chunk at ``target``: the request takes the greedy route and is answered by the
  first node on it that holds the chunk (the origin itself when it does: 0 hops). It *fails* when no node
  of the route holds it. Each node that sent the chunk back (the one that served it, and those that
  forwarded the request to it, the origin excepted) counts one unit of *retrieval load*.
- **Relay load** of a node: the requests it received from a peer and forwarded on, i.e. the lookups whose
  route passes through it as neither the origin nor the final stop.
- **Gini coefficient** of non-negative loads ``x``: ``sum_i sum_j |x_i - x_j| / (2 n^2 mean(x))``,
  0 when all are equal (or all zero), ``1 - 1/n`` when one node carries everything.
- **Percentile** ``q`` (p95: ``q = 95``): nearest rank, the smallest value with at least ``q`` % of the
  values at or below it, i.e. ``sorted(x)[ceil(q n / 100) - 1]``; always one of the values.
- **Gap PO** of a node: the PO of the biggest address gap of its connected pot with its own address (the
  set S of DESIGN.md), over the whole address space (``Pot.biggest_address_gap()``). Higher is better: a
  gap of PO p is 1/2^(p+1) of the space. The full bit length when there is no gap at all.
- **Gap temperature** of a node: the temperature (size / serving members) of the hottest gap of the same
  set over the whole space (``Pot.hottest_gap()``). Lower is better; 0.0 when there is no gap.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from kademlia import PeerTable
from kademlia.forwarding import pick_peer
from pot import proximity

from .network import SimNetwork

__all__ = [
    "Lookup",
    "gap_po",
    "gap_temperature",
    "gini",
    "max_over_mean",
    "mean",
    "percentile",
    "route",
]


@dataclass(frozen=True, slots=True)
class Lookup:
    """One routed request: the nodes it visited (origin first, final stop last) and its outcomes."""

    path: tuple[int, ...]
    closest: int  # the online node closest to the target
    stored_at: int  # index in ``path`` of the first node storing the chunk, -1 when none does

    @property
    def hops(self) -> int:
        return len(self.path) - 1

    @property
    def failed(self) -> bool:
        """The route stopped short of the closest node."""
        return self.path[-1] != self.closest

    @property
    def relays(self) -> tuple[int, ...]:
        """The nodes that forwarded a request they received (neither origin nor final stop)."""
        return self.path[1:-1]

    @property
    def retrieved(self) -> bool:
        return self.stored_at >= 0

    @property
    def retrieval_path(self) -> tuple[int, ...]:
        """The nodes that sent the chunk back: the one that served it and the forwarders before it."""
        return self.path[1 : self.stored_at + 1]


def route(net: SimNetwork, origin: int, target: bytes, holders: Collection[int] | None = None) -> Lookup:
    """Route a request for ``target`` greedily from node ``origin`` (see the module docstring).

    ``holders``: the nodes holding the chunk at ``target`` (``swarm.sim.storage``); None: every node
    responsible for it (PO >= its depth) holds it.
    """
    tables, index, overlays, rule = net.tables, net.index, net.overlays, net.forwarding
    path = [origin]
    current = origin
    while overlays[current] != target:
        # every peer closer to the target than this node is in the target's bin or a deeper one
        table = tables[current]
        peers = [p for po in range(table.bin_of(target), table.max_po + 1) for p in table.connected(po)]
        loads = net.loads[current]
        best = pick_peer(target, overlays[current], peers, rule=rule, loads=loads)
        if best is None:
            break
        table.requests.record(table.bin_of(target))  # the load the ``loaded`` strategy weighs
        loads.started(best)
        loads.finished(best)
        current = index[best]
        path.append(current)
    stored_at = -1
    for k, v in enumerate(path):
        if v in holders if holders is not None else proximity(net.overlays[v], target) >= tables[v].depth():
            stored_at = k
            break
    return Lookup(tuple(path), index[net.online_pot.nearest(target)], stored_at)


def gini(values: Sequence[float]) -> float:
    """The Gini coefficient of non-negative ``values`` (see the module docstring); 0.0 for all zero."""
    if not values:
        raise ValueError("gini of no values")
    if any(v < 0 for v in values):
        raise ValueError("gini needs non-negative values")
    total = sum(values)
    if total == 0:
        return 0.0
    n = len(values)
    # sum_i sum_j |x_i - x_j| = 2 * sum_i (2i - n - 1) x_(i) over the sorted values, i = 1..n
    weighted = sum((2 * i - n - 1) * x for i, x in enumerate(sorted(values), start=1))
    return weighted / (n * total)


def percentile(values: Sequence[float], q: int) -> float:
    """The nearest-rank ``q``-th percentile (``0 < q <= 100``) of ``values``."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 < q <= 100:
        raise ValueError(f"percentile q must be in (0, 100], got {q}")
    rank = (q * len(values) + 99) // 100  # ceil(q n / 100), exact in integers
    return sorted(values)[rank - 1]


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def max_over_mean(values: Sequence[float]) -> float:
    """``max / mean`` of non-negative ``values``: 1.0 when perfectly even; 0.0 when all are zero."""
    m = mean(values)
    return max(values) / m if m else 0.0


def gap_po(table: PeerTable) -> int:
    """The PO of the biggest gap of the table's connected pot with its base, over the whole space."""
    gap = table.connected_pot().biggest_address_gap()
    return len(table.base) * 8 if gap is None else gap.po


def gap_temperature(table: PeerTable) -> float:
    """The temperature of the hottest gap of the table's connected pot with its base; 0.0 if none."""
    gap = table.connected_pot().hottest_gap()
    return 0.0 if gap is None else gap.temperature
