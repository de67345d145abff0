"""The simulation grid: its keys (strategy, network size, run), the run parameters and the seeds.

Every random choice of one network is drawn from seeds derived from ``(seed, nodes, run)`` only, never from
process state, so a key gives the same numbers wherever and in whatever order it is computed. The strategy
is deliberately *not* part of the derivation: for one ``(nodes, run)`` every strategy is measured on the
same overlays, the same bootnodes or known sets, the same churn (who leaves, who joins, when) and the same
lookups, so strategies are compared on the same population. (What gossip tells whom depends on who
connected whom, so its random choices, drawn from one generator per network, differ between strategies.)
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from kademlia.forwarding import get_forwarding
from pot import MAX_PO
from swarm.sim.storage import STORAGE_MODELS

__all__ = [
    "OVERLAY_BYTES",
    "GridKey",
    "SimParams",
    "derived_seed",
    "make_grid",
    "overlay_of",
]

OVERLAY_BYTES = 32


@dataclass(frozen=True, order=True)
class GridKey:
    """One cell of the grid: a network of ``nodes`` nodes connected with ``strategy``, repetition ``run``."""

    strategy: str
    nodes: int
    run: int


@dataclass(frozen=True)
class SimParams:
    """Everything besides the key that decides a network's numbers (recorded in ``run.json``).

    ``known`` None: nodes discover each other by gossip from ``bootnodes`` (``swarm.sim.gossip``); a
    fraction: the old set-up, each node knowing that fraction of the others from the start, no gossip.
    ``churn``: the fraction of online nodes that leave at each of ``churn_rounds`` churn events after the
    network has settled, replaced by as many new nodes (0: no churn phase); between two events every node
    takes up to ``turns`` turns (one dial each: the connection manager dials up to 4 peers at a time).
    With gossip a node keeps at most ``known_per_bin`` known, unconnected peers per bin (an address book
    of bounded size: in big networks gossip would otherwise teach every node thousands of peers, more
    memory than a simulation of 16,384 nodes can hold, and more candidates than a bin of ``saturation``
    peers needs). ``gossip_bin_size``: peers named per bin in an announcement (bee's
    ``BroadcastBinSize``: 2 in earlier releases, 4 now; with bounded address books 2 fills them as well,
    the same known peers, connections and gaps at 4,096 nodes, for 28 % less time). ``forwarding``: the
    next-hop rule of ``kademlia.forwarding`` (``closest``: greedy; ``spread``: the least recently used
    of the equally close peers; ``spreadK``: of those within K POs of the closest). ``storage``: which
    nodes hold a chunk (``swarm.sim.storage``: ``area``, the nodes responsible for it; ``pull``, what
    the sync rule brings to nodes whose reserves are not full, as a young real swarm holds).
    """

    seed: int = 1
    known: float | None = None
    saturation: int = 4
    lookups: int = 2000
    neighbourhood_size: int = 3
    max_po: int = MAX_PO
    churn: float = 0.0
    churn_rounds: int = 10
    turns: int = 4
    bootnodes: int = 4
    gossip_bin_size: int = 2
    known_per_bin: int = 16
    forwarding: str = "closest"
    storage: str = "area"

    def __post_init__(self) -> None:
        if self.known is not None and not 0.0 < self.known <= 1.0:
            raise ValueError(f"known must be a fraction in (0, 1], got {self.known}")
        if self.saturation < 1:
            raise ValueError(f"saturation must be at least 1, got {self.saturation}")
        if self.lookups < 1:
            raise ValueError(f"lookups must be at least 1, got {self.lookups}")
        if not 0.0 <= self.churn < 1.0:
            raise ValueError(f"churn must be a fraction in [0, 1), got {self.churn}")
        if self.churn_rounds < 1:
            raise ValueError(f"churn rounds must be at least 1, got {self.churn_rounds}")
        if self.turns < 1:
            raise ValueError(f"turns between churn events must be at least 1, got {self.turns}")
        if self.bootnodes < 1:
            raise ValueError(f"at least one bootnode is needed, got {self.bootnodes}")
        if self.gossip_bin_size < 1:
            raise ValueError(f"the gossip bin size must be at least 1, got {self.gossip_bin_size}")
        if self.known_per_bin < 1:
            raise ValueError(f"known peers per bin must be at least 1, got {self.known_per_bin}")
        get_forwarding(self.forwarding)
        if self.storage not in STORAGE_MODELS:
            raise ValueError(
                f"storage model must be one of {', '.join(STORAGE_MODELS)}, got {self.storage!r}"
            )

    @property
    def gossip(self) -> bool:
        """Whether nodes discover each other by gossip (else: the old fixed known sets)."""
        return self.known is None

    def known_count(self, nodes: int) -> int:
        """With ``known`` set: how many of the other ``nodes - 1`` nodes each node knows (at least 1)."""
        if self.known is None:
            raise ValueError("known_count of a gossip set-up: nodes learn peers as they go")
        return min(nodes - 1, max(1, round(self.known * (nodes - 1))))

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _digest(*parts: object) -> bytes:
    return hashlib.sha256("/".join(str(p) for p in ("swarm-sim", *parts)).encode()).digest()


def derived_seed(purpose: str, seed: int, nodes: int, run: int) -> int:
    """A 64-bit seed for one ``purpose`` (known, lookups, chunks, churn, gossip) of network (nodes, run)."""
    return int.from_bytes(_digest(purpose, seed, nodes, run)[:8])


def overlay_of(seed: int, nodes: int, run: int, index: int) -> bytes:
    """The 32-byte overlay of node ``index`` of the network ``(nodes, run)``: a hash, uniform and stable.

    Nodes joining during churn continue the indices from ``nodes``.
    """
    return _digest("overlay", seed, nodes, run, index)[:OVERLAY_BYTES]


def make_grid(strategies: Sequence[str], sizes: Sequence[int], runs: int) -> list[GridKey]:
    """Every key of the grid, biggest networks first (so the slowest tasks start first, the tail is short).

    Within a size: run, then strategy in the order given.
    """
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    if not strategies:
        raise ValueError("at least one strategy is needed")
    if len(set(strategies)) != len(strategies):
        raise ValueError(f"strategies repeat: {', '.join(strategies)}")
    if not sizes:
        raise ValueError("at least one network size is needed")
    for n in sizes:
        if n < 2:
            raise ValueError(f"a network has at least 2 nodes, got {n}")
    ordered = sorted(set(sizes), reverse=True)
    return [GridKey(s, n, r) for n in ordered for r in range(runs) for s in strategies]
