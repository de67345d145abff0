"""Finding the latest update of a sequence feed: a sans-IO state machine that plans probes.

Update ``i`` of a feed lives at an address anyone can compute, so "which is the latest update" is
answered by probing addresses: is update ``i`` there or not? Bee's finder
(`pkg/feeds/sequence`, ``asyncFinder``) probes ahead concurrently at ``base + 2^k - 1`` and then
narrows down; this machine does the same with a bound on the probes in flight, and leaves the
I/O to its driver (`swarm.feeds.finder.find_latest`), which asks `next_probes()`, runs them, and reports
each answer with `on_result()` in whatever order they come.

What it answers (bee's semantics): ``latest`` is None if update ``start`` does not exist (bee
answers "no update found", whatever later indices hold); otherwise an index ``r >= start``
with update ``r`` present and update ``r + 1`` absent. For a feed without holes, updates
``start..L`` all present, that is ``L``, what a linear scan from ``start`` finds. A feed with
holes (a lost update) has several such ends; like bee's finder, this one returns one of them,
not necessarily the first.

How: it keeps a bracket ``lo < hi``, update ``lo`` known present (``start - 1`` stands for
"nothing yet") and ``hi`` known absent (``2**64`` until one is found). While ``hi`` is unknown it
gallops, probing ``start - 1 + 2^k`` for growing ``k`` (bee's lookahead, but doubling past bee's
fixed 256, so a feed of n updates is bracketed in O(log n / max_probes) rounds); then it splits
the largest unprobed stretch of the bracket at its middle, each free probe slot one split.
Every present answer inside the bracket raises ``lo``, every absent one lowers ``hi``; an answer
outside the bracket (possible only around a hole) is ignored, so the bracket always holds an end.
Done when ``hi == lo + 1``.
"""

from __future__ import annotations

import itertools

from chunks.feeds import MAX_INDEX

__all__ = ["DEFAULT_MAX_PROBES", "SequenceLookup"]

DEFAULT_MAX_PROBES = 8
"""Probes in flight at once: bee's ``DefaultLevels`` (8 concurrent lookaheads)."""
_BEYOND = MAX_INDEX + 1


class SequenceLookup:
    """Plans the probes that find the latest update of a sequence feed at or after ``start``."""

    def __init__(self, start: int = 0, *, max_probes: int = DEFAULT_MAX_PROBES) -> None:
        if not 0 <= start <= MAX_INDEX:
            raise ValueError(f"start index {start} is outside 0..2**64-1")
        if max_probes < 1:
            raise ValueError(f"max_probes must be at least 1, got {max_probes}")
        self.start = start
        self.max_probes = max_probes
        self._lo = start - 1
        self._hi = _BEYOND
        self._start_found: bool | None = None
        self._in_flight: set[int] = set()
        self._gallop = 0  # next k of the gallop point start - 1 + 2**k

    @property
    def done(self) -> bool:
        return self._start_found is False or (self._start_found is True and self._hi == self._lo + 1)

    @property
    def latest(self) -> int | None:
        """The answer once done (None: no update at ``start``); before that, the best so far."""
        return self._lo if self._lo >= self.start and self._start_found else None

    @property
    def bracket(self) -> tuple[int, int]:
        """``(lo, hi)``: update ``lo`` known present (or ``start - 1``), ``hi`` known absent."""
        return self._lo, self._hi

    @property
    def in_flight(self) -> frozenset[int]:
        return frozenset(self._in_flight)

    def next_probes(self) -> list[int]:
        """Indices to probe now (counted in flight until their answer or cancel comes)."""
        if self.done:
            return []
        probes: list[int] = []
        while len(self._in_flight) < self.max_probes:
            index = self._gallop_point() if self._hi == _BEYOND else self._split_point()
            if index is None:
                break
            self._in_flight.add(index)
            probes.append(index)
        return probes

    def on_result(self, index: int, found: bool) -> None:
        """Update ``index`` was found (or not); a probe that timed out counts as not found."""
        self._in_flight.discard(index)
        if index == self.start:
            self._start_found = found
        if not self._lo < index < self._hi:
            return  # outside the bracket: only a feed with holes answers so; the bracket still holds
        if found:
            self._lo = index
        else:
            self._hi = index

    def on_cancelled(self, index: int) -> None:
        """The driver gave up a probe without an answer (one `stale_probes` named)."""
        self._in_flight.discard(index)

    def stale_probes(self) -> list[int]:
        """Probes in flight whose answer can no longer change the outcome: the driver may cancel them."""
        if self.done:
            return sorted(self._in_flight)
        return sorted(i for i in self._in_flight if not self._lo < i < self._hi and not self._awaits_start(i))

    def _awaits_start(self, index: int) -> bool:
        return index == self.start and self._start_found is None

    def _gallop_point(self) -> int | None:
        base = self.start - 1
        while True:
            step = 1 << self._gallop
            index = base + step
            if index > MAX_INDEX:
                index = MAX_INDEX
            if index > self._lo and index not in self._in_flight:
                self._gallop += 1
                return index
            if index >= MAX_INDEX:
                return self._split_point()
            self._gallop += 1

    def _split_point(self) -> int | None:
        """The middle of the longest stretch of unprobed indices inside the bracket."""
        fences = [self._lo, *sorted(i for i in self._in_flight if self._lo < i < self._hi), self._hi]
        gap, a, b = max((b - a, a, b) for a, b in itertools.pairwise(fences))
        if gap < 2:
            return None
        return (a + b) // 2
