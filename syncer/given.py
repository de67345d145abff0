"""GivenRanges: the bin IDs of this node's chunks that one peer delivered to it (pure).

Between two neighbours both pull: every chunk B syncs from A enters B's pull index, and B's
live stream to A would offer it straight back to A, which holds it (it just delivered it). Those
offers cost both sides for nothing: B checks each chunk's slot and frames its hash, A checks it
against its store and answers "not wanted" (docs/performance.md, "Offers of what a peer gave").
Gossip protocols skip the same echo: a message is not forwarded to the neighbour it came from.

So a connection keeps, per bin, which of this node's bin IDs hold chunks the peer delivered: when
its pull-sync deliveries are stored (`syncer.deliveries.DeliveryIntake`), the bin IDs `put_many`
gave the new ones are added; the upstream (`syncer.upstream.Upstream`) marks those entries of
its live offers as holes (a hole must not be wanted: docs/protocol.md 5.13a, 8.2, 8.6) and skips
a range of them where an offer would start. One `put_many` gives a bin consecutive IDs, so a
batch is a range per bin and the set stays small; it is bounded all the same (`MAX_RANGES` per
bin, the lowest dropped first: such an entry is then just offered), kept only for the bins the
peer pulls live from us (`watch`), and the upstream forgets what its live stream has offered.

The peer loses nothing by it: it had each of these chunks when it delivered it (it offered each
from its store). A push is no such proof: a node forwards pushes it does not store, and may
later need the chunk from the node it pushed it to, so pushed chunks are offered as any other.
Historical streams offer everything, as before.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence

__all__ = ["MAX_RANGES", "GivenRanges"]

MAX_RANGES = 256
"""Ranges kept per bin; beyond it the lowest are forgotten (offered as any other entry)."""


class _Bin:
    __slots__ = ("ends", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []


class GivenRanges:
    """Per bin, sorted disjoint non-adjacent inclusive ranges of bin IDs a peer gave us."""

    def __init__(self, *, max_ranges: int = MAX_RANGES) -> None:
        if max_ranges < 1:
            raise ValueError(f"max_ranges must be >= 1, got {max_ranges}")
        self.max_ranges = max_ranges
        self._bins: dict[int, _Bin] = {}
        self._watched: set[int] = set()

    def watch(self, bin: int) -> None:
        """The peer pulls ``bin`` live from us: note what it gives us there from now on."""
        self._watched.add(bin)

    def unwatch(self, bin: int) -> None:
        """It stopped: what it gave us there is of no use any more (only live offers skip)."""
        self._watched.discard(bin)
        self._bins.pop(bin, None)

    def add(self, bin: int, first: int, last: int) -> None:
        """Bin IDs ``first..last`` of ``bin`` hold chunks the peer delivered (noted only in a bin
        it pulls live from us: nothing else would skip them)."""
        if not 1 <= first <= last:
            raise ValueError(f"bin IDs {first}..{last} are not a range from 1 on")
        if bin not in self._watched:
            return
        entry = self._bins.setdefault(bin, _Bin())
        starts, ends = entry.starts, entry.ends
        # the ranges that overlap or touch [first, last] merge with it
        lo = bisect_left(ends, first - 1)
        hi = bisect_right(starts, last + 1)
        if lo < hi:
            first = min(first, starts[lo])
            last = max(last, ends[hi - 1])
        starts[lo:hi] = [first]
        ends[lo:hi] = [last]
        if len(starts) > self.max_ranges:
            del starts[0], ends[0]

    def note(self, before: Sequence[int], after: Sequence[int]) -> None:
        """A store of the peer's chunks moved the bins' cursors from ``before`` to ``after``: the
        bin IDs in between are theirs (nothing else stores meanwhile: the store is synchronous)."""
        for bin, (first, last) in enumerate(zip(before, after, strict=True)):
            if last > first:
                self.add(bin, first + 1, last)

    def run(self, bin: int, start: int, end: int) -> int | None:
        """If bin ID ``start`` was given: the last of the given IDs from ``start`` on without a
        gap, at most ``end``; otherwise None."""
        entry = self._bins.get(bin)
        if entry is None:
            return None
        i = bisect_right(entry.starts, start) - 1
        if i < 0 or entry.ends[i] < start:
            return None
        return min(entry.ends[i], end)

    def given_in(self, bin: int, start: int, end: int) -> Iterator[tuple[int, int]]:
        """The given ranges of ``bin`` clipped to ``[start, end]``, ascending."""
        entry = self._bins.get(bin)
        if entry is None:
            return
        starts, ends = entry.starts, entry.ends
        for i in range(bisect_left(ends, start), len(starts)):
            if starts[i] > end:
                return
            yield max(starts[i], start), min(ends[i], end)

    def forget_below(self, bin: int, bin_id: int) -> None:
        """The live stream has offered everything below ``bin_id``: forget those IDs."""
        entry = self._bins.get(bin)
        if entry is None:
            return
        i = bisect_left(entry.ends, bin_id)
        del entry.starts[:i], entry.ends[:i]
        if entry.starts and entry.starts[0] < bin_id:
            entry.starts[0] = bin_id
        if not entry.starts:
            del self._bins[bin]

    def ranges(self, bin: int) -> list[tuple[int, int]]:
        """A copy of ``bin``'s ranges, ascending."""
        entry = self._bins.get(bin)
        return [] if entry is None else list(zip(entry.starts, entry.ends, strict=True))

    def __len__(self) -> int:
        """Ranges held, over all bins."""
        return sum(len(entry.starts) for entry in self._bins.values())
