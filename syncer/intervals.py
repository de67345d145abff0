"""Interval sets of synced IDs (pure).

Pull syncing records which bin IDs of an upstream peer's pull index have been synced as an
:class:`Intervals`: a floor plus sorted, disjoint, non-adjacent, inclusive ranges. Its complement,
:meth:`Intervals.gaps`, is the gap list of Streamr's duplicate detector (what has *not* been seen,
ending in ``[last + 1, inf)``), so the same class answers both questions. They are persisted per
(peer, bin) by `syncer.interval_store`.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right

__all__ = ["MAX_ID", "Intervals"]

MAX_ID = 2**64 - 1
"""Largest ID an interval set holds: bin IDs are unsigned 64-bit in the pull index."""

_FORMAT_VERSION = 1
_VARINT_MAX_BYTES = 10  # ceil(64 / 7)


class Intervals:
    """A set of IDs at or above a floor, kept as sorted, disjoint, non-adjacent inclusive ranges.

    Two parallel lists (starts, ends) keep the ranges so that both can be bisected; appending at
    the end and filling the first gap, the common cases of syncing, touch only the list tails or
    heads.
    """

    __slots__ = ("_ends", "_floor", "_starts")

    def __init__(self, floor: int = 1) -> None:
        if not 1 <= floor <= MAX_ID:
            raise ValueError(f"floor {floor} is outside 1..{MAX_ID}")
        self._floor = floor
        self._starts: list[int] = []
        self._ends: list[int] = []

    @property
    def floor(self) -> int:
        """The lowest ID this set tracks; anything below it is neither synced nor missing."""
        return self._floor

    @property
    def ranges(self) -> list[tuple[int, int]]:
        """A copy of the synced ranges, ascending, inclusive."""
        return list(zip(self._starts, self._ends, strict=True))

    def add(self, start: int, end: int | None = None) -> None:
        """Mark ``start..end`` (inclusive; ``end`` defaults to ``start``) as synced.

        Merges with overlapping and adjacent ranges; the part below the floor is dropped.
        """
        if end is None:
            end = start
        if start > end:
            raise ValueError(f"start {start} > end {end}")
        if end > MAX_ID:
            raise ValueError(f"end {end} exceeds the largest ID {MAX_ID}")
        if end < self._floor:
            return
        start = max(start, self._floor)
        starts, ends = self._starts, self._ends
        # Ranges touching [start, end] are those ending at or after start - 1 and starting at or
        # before end + 1: a contiguous run lo..hi-1, since both lists are ascending.
        lo = bisect_left(ends, start - 1)
        hi = bisect_right(starts, end + 1, lo)
        if lo == hi:
            starts.insert(lo, start)
            ends.insert(lo, end)
            return
        new_start = min(start, starts[lo])
        new_end = max(end, ends[hi - 1])
        if hi - lo == 1:
            starts[lo] = new_start
            ends[lo] = new_end
        else:
            starts[lo:hi] = [new_start]
            ends[lo:hi] = [new_end]

    def merge(self, other: Intervals) -> None:
        """Add every range of ``other`` (this set keeps its own floor)."""
        starts: list[int] = []
        ends: list[int] = []
        floor = self._floor
        for s, e in heapq.merge(self.ranges, other.ranges):
            if e < floor:
                continue
            s = max(s, floor)
            if ends and s <= ends[-1] + 1:
                if e > ends[-1]:
                    ends[-1] = e
            else:
                starts.append(s)
                ends.append(e)
        self._starts, self._ends = starts, ends

    def next(self, ceiling: int = 0) -> tuple[int, int, bool]:
        """The first missing range at or above the floor, as ``(start, end, empty)``.

        ``end == 0`` means open-ended: nothing is synced above ``start``. With ``ceiling > 0`` both
        ends are capped at the ceiling and ``empty`` is True exactly when nothing in
        ``[floor, ceiling]`` is missing (then ``start == end == ceiling``).
        """
        if ceiling < 0:
            raise ValueError(f"ceiling {ceiling} is negative")
        starts, ends = self._starts, self._ends
        if not starts or starts[0] > self._floor:
            start = self._floor
            end = starts[0] - 1 if starts else 0
        else:
            start = ends[0] + 1
            end = starts[1] - 1 if len(starts) > 1 else 0
        if ceiling == 0:
            return start, end, False
        empty = start > ceiling
        end = ceiling if end == 0 else min(end, ceiling)
        return min(start, ceiling), end, empty

    def last(self) -> int:
        """The highest synced ID, 0 if nothing is synced."""
        return self._ends[-1] if self._ends else 0

    def gaps(self) -> list[tuple[int, int | None]]:
        """The missing ranges from the floor up; the last one is always ``(last() + 1, None)``.

        This is Streamr's duplicate-detection gap list: an ID is new iff it lies in one of these.
        """
        result: list[tuple[int, int | None]] = []
        after = self._floor  # lowest ID not yet known to be synced
        for s, e in zip(self._starts, self._ends, strict=True):
            if s > after:
                result.append((after, s - 1))
            after = e + 1
        result.append((after, None))
        return result

    def count(self) -> int:
        """How many IDs are synced (not the number of ranges)."""
        return sum(self._ends) - sum(self._starts) + len(self._starts)

    def copy(self) -> Intervals:
        """An independent copy."""
        dup = Intervals(self._floor)
        dup._starts = self._starts.copy()
        dup._ends = self._ends.copy()
        return dup

    def __contains__(self, n: object) -> bool:
        if not isinstance(n, int):
            return False
        i = bisect_right(self._starts, n) - 1
        return i >= 0 and n <= self._ends[i]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Intervals):
            return NotImplemented
        return self._floor == other._floor and self._starts == other._starts and self._ends == other._ends

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"Intervals(floor={self._floor}, ranges={self.ranges!r})"

    def to_bytes(self) -> bytes:
        """Encode compactly and canonically (see :meth:`from_bytes` for the format)."""
        out = bytearray([_FORMAT_VERSION])
        _put_varint(out, self._floor)
        _put_varint(out, len(self._starts))
        prev_end = self._floor - 2  # makes the first gap "start - floor"
        for s, e in zip(self._starts, self._ends, strict=True):
            _put_varint(out, s - prev_end - 2)
            _put_varint(out, e - s)
            prev_end = e
        return bytes(out)

    @classmethod
    def from_bytes(cls, data: bytes) -> Intervals:
        """Decode what :meth:`to_bytes` produced; ValueError naming the defect otherwise.

        Format, version 1: a version byte ``0x01``, then unsigned LEB128 varints (minimal, at
        most 64 bits each): the floor, the number of ranges, and per range the gap before it and
        its length minus one. The first gap is ``start - floor``; later gaps are
        ``start - previous_end - 2`` (ranges are never adjacent, so 0 means one missing ID). Every
        well-formed input therefore decodes to a valid set, and re-encodes to the same bytes.
        """
        if not data:
            raise ValueError("empty interval encoding")
        if data[0] != _FORMAT_VERSION:
            raise ValueError(f"unknown interval encoding version {data[0]}")
        pos = 1
        floor, pos = _get_varint(data, pos, "floor")
        if floor < 1:
            raise ValueError("floor 0 in interval encoding (must be at least 1)")
        count, pos = _get_varint(data, pos, "range count")
        if count > (len(data) - pos) // 2:
            raise ValueError(f"range count {count} exceeds what the remaining {len(data) - pos} bytes hold")
        starts: list[int] = []
        ends: list[int] = []
        prev_end = floor - 2
        for i in range(count):
            gap, pos = _get_varint(data, pos, f"gap before range {i}")
            length, pos = _get_varint(data, pos, f"length of range {i}")
            start = prev_end + 2 + gap
            end = start + length
            if end > MAX_ID:
                raise ValueError(f"range {i} ends at {end}, beyond the largest ID {MAX_ID}")
            starts.append(start)
            ends.append(end)
            prev_end = end
        if pos != len(data):
            raise ValueError(f"{len(data) - pos} trailing bytes after {count} ranges")
        result = cls(floor)
        result._starts = starts
        result._ends = ends
        return result


def _put_varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _get_varint(data: bytes, pos: int, what: str) -> tuple[int, int]:
    """Read a minimal unsigned LEB128 varint of at most 64 bits at ``pos``; return (value, new pos)."""
    value = 0
    shift = 0
    start = pos
    while True:
        if pos >= len(data):
            raise ValueError(f"truncated varint for {what} at offset {start}")
        if pos - start >= _VARINT_MAX_BYTES:
            raise ValueError(f"varint for {what} at offset {start} is longer than {_VARINT_MAX_BYTES} bytes")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    if byte == 0 and pos - start > 1:
        raise ValueError(f"non-minimal varint for {what} at offset {start}")
    if value > MAX_ID:
        raise ValueError(f"varint for {what} at offset {start} exceeds 64 bits")
    return value, pos
