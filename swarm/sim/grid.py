"""The simulation grid: its keys (strategy, network size, run), the run parameters and the seeds.

Every random choice of one network is drawn from seeds derived from ``(seed, nodes, run)`` only, never from
process state, so a key gives the same numbers wherever and in whatever order it is computed. The strategy
is deliberately *not* part of the derivation: for one ``(nodes, run)`` every strategy is measured on the
same overlays, the same known sets and the same lookups, so strategies are compared on identical networks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass

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
    """Everything besides the key that decides a network's numbers (recorded in ``run.json``)."""

    seed: int = 1
    known: float = 0.1
    saturation: int = 4
    lookups: int = 2000
    neighbourhood_size: int = 3
    max_po: int = 31

    def __post_init__(self) -> None:
        if not 0.0 < self.known <= 1.0:
            raise ValueError(f"known must be a fraction in (0, 1], got {self.known}")
        if self.saturation < 1:
            raise ValueError(f"saturation must be at least 1, got {self.saturation}")
        if self.lookups < 1:
            raise ValueError(f"lookups must be at least 1, got {self.lookups}")

    def known_count(self, nodes: int) -> int:
        """How many of the other ``nodes - 1`` nodes each node knows: the fraction rounded, at least 1."""
        return min(nodes - 1, max(1, round(self.known * (nodes - 1))))

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _digest(*parts: object) -> bytes:
    return hashlib.sha256("/".join(str(p) for p in ("swarm-sim", *parts)).encode()).digest()


def derived_seed(purpose: str, seed: int, nodes: int, run: int) -> int:
    """A 64-bit seed for one ``purpose`` ("known", "lookups") of the network ``(nodes, run)``."""
    return int.from_bytes(_digest(purpose, seed, nodes, run)[:8])


def overlay_of(seed: int, nodes: int, run: int, index: int) -> bytes:
    """The 32-byte overlay of node ``index`` of the network ``(nodes, run)``: a hash, uniform and stable."""
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
