"""Streamr's duplicate detector: the gap list of one publisher's chain (pure).

What a relay remembers of a chain is not the numbers it has seen but the ones it has not: an
ascending list of half-open gaps ``(lower, upper]`` of numbers that may still be unseen, the last
one ``(latest seen, INFINITY]``. A message is checked on its *edge* ``(previous, number)``: it is
new when the edge lies inside one gap, which it then cuts out of the gap; a duplicate when the
edge lies in what has been seen; and a publisher error when it straddles a gap's boundary. This is
Streamr's ``DuplicateMessageDetector.markAndCheck`` rule for rule (streamr-dev/network,
packages/trackerless-network/src/content-delivery-layer/DuplicateMessageDetector.ts):

- the first message ``n`` of a chain leaves the gap ``(n, INFINITY]``: everything up to it counts
  as seen (a relay that joins late does not forward history);
- a message without a previous reference is checked *best effort*: it is new only if it is above
  the latest seen number, which it then becomes (numbers in between count as seen, holes below
  stay open);
- at most ``max_gaps`` gaps are kept; the lowest is dropped when a split would exceed it (its
  numbers then count as seen).

Feed updates number themselves densely (update ``i`` has the edge ``(i - 1, i)``, update 0 none),
so for a feed the closed gaps are exactly `syncer.intervals.Intervals.gaps()` of the indices seen
(tests/test_live_detector.py checks the two against each other). Topic messages use raims'
sequence numbers (`swarm.live.seqno`): the edge of a message is ``(seq - 1, seq)`` inside a
frame, ``(chain, seq)`` across a frame change, and none for a publisher's first message.

The relay never lets `InvalidNumbering` or `GapMismatch` escape: a publisher that breaks the
numbering rules is counted and its message dropped (`swarm.live.relay`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

__all__ = ["DEFAULT_MAX_GAPS", "INFINITY", "DuplicateDetector", "GapMismatch", "InvalidNumbering"]

INFINITY = 1 << 64
"""Above every number: feed indices and sequence numbers are unsigned 64-bit."""
DEFAULT_MAX_GAPS = 10_000
"""Streamr's ``maxGapCount``."""


class InvalidNumbering(ValueError):
    """A message whose previous number is not below its own number."""


class GapMismatch(ValueError):
    """An edge that straddles a gap's boundary: the publisher numbered its chain inconsistently."""


class DuplicateDetector:
    """The gaps of one chain. ``mark_and_check`` is Streamr's ``markAndCheck``; ``is_new`` asks
    the same question without remembering the answer (to check a signature before marking)."""

    __slots__ = ("_lowers", "_uppers", "max_gaps")

    def __init__(self, max_gaps: int = DEFAULT_MAX_GAPS) -> None:
        if max_gaps < 1:
            raise ValueError(f"max_gaps must be at least 1, got {max_gaps}")
        self.max_gaps = max_gaps
        self._lowers: list[int] = []
        self._uppers: list[int] = []

    @property
    def gaps(self) -> list[tuple[int, int]]:
        """The half-open gaps ``(lower, upper]``, ascending; the last upper is INFINITY."""
        return list(zip(self._lowers, self._uppers, strict=True))

    def closed_gaps(self) -> list[tuple[int, int | None]]:
        """The unseen numbers as closed ranges ``[lower + 1, upper]``, None for no end (the
        design document's notation, and `Intervals.gaps()`'s)."""
        return [(lo + 1, None if up == INFINITY else up) for lo, up in self.gaps]

    @property
    def latest(self) -> int | None:
        """The highest number seen (the last gap's lower bound), None before the first message."""
        return self._lowers[-1] if self._lowers else None

    def seen(self, number: int) -> bool:
        """Whether ``number`` counts as seen: at or below the latest and in no gap (nothing is
        seen before the first message)."""
        lowers = self._lowers
        k = bisect_left(lowers, number)  # gaps[:k] start below the number
        return bool(lowers) and (k == 0 or number > self._uppers[k - 1])

    def __len__(self) -> int:
        """How many gaps (the open-ended last one included)."""
        return len(self._lowers)

    def _find(self, previous: int, number: int) -> int:
        """The gap the edge lies in, or -1 if the edge was seen; GapMismatch if it straddles one.

        Equivalent to Streamr's scan from the right, by bisection: gaps above the previous
        number must not start below the number, and the gap holding the previous number must
        hold the number too.
        """
        lowers, uppers = self._lowers, self._uppers
        k = bisect_right(lowers, previous)  # gaps whose lower bound is at or below `previous`
        if k < len(lowers) and number > lowers[k]:
            raise GapMismatch(f"edge ({previous}, {number}] overlaps the gap above it, {self._show(k)}")
        if k == 0 or previous >= uppers[k - 1]:
            return -1
        if number > uppers[k - 1]:
            raise GapMismatch(f"edge ({previous}, {number}] runs past the end of the gap {self._show(k - 1)}")
        return k - 1

    def _show(self, i: int) -> str:
        upper = "inf" if self._uppers[i] == INFINITY else str(self._uppers[i])
        return f"({self._lowers[i]}, {upper}]"

    def _check(self, previous: int | None, number: int) -> int:
        """-2: the first message; -3: new, best effort; -1: seen; else the gap to cut."""
        if previous is not None and previous >= number:
            raise InvalidNumbering(f"previous number {previous} is not below the number {number}")
        if not self._lowers:
            return -2
        if previous is None:
            return -3 if number > self._lowers[-1] else -1
        return self._find(previous, number)

    def is_new(self, previous: int | None, number: int) -> bool:
        """Would ``mark_and_check`` say new? Changes nothing; raises what it would raise."""
        return self._check(previous, number) != -1

    def mark_and_check(self, previous: int | None, number: int) -> bool:
        """True if the message ``(previous, number)`` is new (and remember it), False if seen.

        Raises InvalidNumbering if ``previous >= number`` and GapMismatch if the edge straddles
        a gap's boundary; neither changes anything.
        """
        found = self._check(previous, number)
        if found == -1:
            return False
        lowers, uppers = self._lowers, self._uppers
        if found == -2:
            lowers.append(number)
            uppers.append(INFINITY)
            return True
        if found == -3:
            lowers[-1] = number
            return True
        assert previous is not None
        lower, upper = lowers[found], uppers[found]
        if previous == lower:
            if number == upper:
                del lowers[found], uppers[found]
            else:
                lowers[found] = number
        elif number == upper:
            uppers[found] = previous
        else:
            uppers[found] = previous
            lowers.insert(found + 1, number)
            uppers.insert(found + 1, upper)
            if len(lowers) > self.max_gaps:
                del lowers[0], uppers[0]
        return True

    def __repr__(self) -> str:
        return f"DuplicateDetector({', '.join(self._show(i) for i in range(len(self._lowers)))})"
