"""Slots: which slots of the chunk file are free, and how many chunks each bin holds.

Since the reserve evicts chunks (store format 5), a slot can be given back: an evicted or
dropped chunk's slot goes on the free list and the next put takes the lowest free slot before
growing the file. The file's length in slots (``count``) is committed with the bins' cursors
whenever a put grows it; the free list and the per-bin counts of stored chunks are *derived*
data, like the address index: the pull index (every entry that is not a hole names the slot of
a stored chunk) says which slots are taken and how many chunks each bin holds.

So the store keeps them in memory, writes a summary (:meth:`SlotMap.to_bytes`) beside the
cursors at a clean close, and reads it back only when the address index also opens clean
(the same close wrote both). After a crash they are derived from the pull index while the
address index is rebuilt (localstore/recovery.py), or by :func:`scan` if the summary is missing.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["SlotMap", "SlotSummaryError"]

_HEADER = struct.Struct(">QQI")  # generation, slot count, bins


class SlotSummaryError(ValueError):
    """A stored summary does not decode, or belongs to another state of the store."""


@dataclass
class SlotMap:
    """The chunk file's slot count, its free slots (a min-heap) and the chunks held per bin."""

    count: int
    counts: list[int]
    free: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        heapq.heapify(self.free)

    @classmethod
    def derive(cls, count: int, bins: int, taken: Iterable[tuple[int, int]]) -> SlotMap:
        """From ``(bin, slot)`` of every stored chunk: every other slot below ``count`` is free."""
        counts = [0] * bins
        used = bytearray(count)
        for bin, slot in taken:
            counts[bin] += 1
            if slot < count:
                used[slot] = 1
        free = [slot for slot in range(count) if not used[slot]]
        return cls(count, counts, free)

    def allocate(self, n: int) -> list[int]:
        """``n`` slots for new chunks: the lowest free ones first, then new ones past the end.

        The new ones only count once :meth:`commit` is told the highest slot written.
        """
        taken = [heapq.heappop(self.free) for _ in range(min(n, len(self.free)))]
        taken.extend(range(self.count, self.count + n - len(taken)))
        return taken

    def grown(self, slots: Sequence[int]) -> int:
        """The slot count once ``slots`` (from :meth:`allocate`) are written."""
        return max(self.count, max(slots, default=-1) + 1)

    def give_back(self, slots: Sequence[int]) -> None:
        """Slots :meth:`allocate` handed out that were never committed (a put failed)."""
        for slot in slots:
            if slot < self.count:
                heapq.heappush(self.free, slot)

    def release(self, slot: int) -> None:
        """The chunk at ``slot`` was evicted or dropped: its slot is free."""
        heapq.heappush(self.free, slot)

    def to_bytes(self, generation: int) -> bytes:
        """The summary kept at a clean close; ``generation`` (the bin IDs given out) ties it to
        one state of the store."""
        header = _HEADER.pack(generation, self.count, len(self.counts))
        body = struct.pack(f">{len(self.counts)}Q", *self.counts)
        return header + body + struct.pack(f">{len(self.free)}Q", *sorted(self.free))

    @classmethod
    def from_bytes(cls, raw: bytes, generation: int, count: int, bins: int) -> SlotMap:
        """Decode a summary; SlotSummaryError unless it was written at ``generation`` for a file
        of ``count`` slots and ``bins`` bins."""
        if len(raw) < _HEADER.size:
            raise SlotSummaryError("slot summary is truncated")
        stored_generation, stored_count, stored_bins = _HEADER.unpack_from(raw)
        if (stored_generation, stored_count, stored_bins) != (generation, count, bins):
            raise SlotSummaryError("slot summary belongs to another state of the store")
        rest = raw[_HEADER.size :]
        if len(rest) % 8 or len(rest) < 8 * bins:
            raise SlotSummaryError("slot summary has a partial entry")
        values = struct.unpack(f">{len(rest) // 8}Q", rest)
        free = list(values[bins:])
        if any(slot >= count for slot in free):
            raise SlotSummaryError("slot summary names a free slot past the end of the file")
        return cls(count, list(values[:bins]), free)
