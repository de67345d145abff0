"""Request load per bin: how many requests a node sent through each of its bins, recently (pure).

The ``loaded`` suggestion strategy (``kademlia.suggest``) weighs a gap's temperature by it: seed 003
suggests counting "recently number of requests per address space" into a gap's temperature besides
its size. A request is counted in the bin its target falls into (the bin whose peers serve it). Counts
are halved whenever their total reaches ``horizon``, so old load fades and the numbers stay small.
"""

from __future__ import annotations

__all__ = ["BinLoad"]


class BinLoad:
    """Recent request counts of bins ``0..max_po``."""

    def __init__(self, max_po: int, *, horizon: int = 4096) -> None:
        if horizon < 2:
            raise ValueError(f"the load horizon must be at least 2 requests, got {horizon}")
        self.horizon = horizon
        self._counts = [0.0] * (max_po + 1)
        self._total = 0.0

    def record(self, po: int) -> None:
        """One request through bin ``po``."""
        self._counts[po] += 1.0
        self._total += 1.0
        if self._total >= self.horizon:
            self._counts = [c / 2 for c in self._counts]
            self._total /= 2

    def count(self, po: int) -> float:
        return self._counts[po]

    @property
    def total(self) -> float:
        return self._total

    def weight(self, po: int) -> float:
        """Bin ``po``'s load: its recent requests plus its share of one request under uniform load
        (``2 ** -(po + 1)``), so that with no requests yet the bins weigh as their sizes."""
        return self._counts[po] + 2.0 ** -(po + 1)
