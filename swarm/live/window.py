"""raims' sequence window: per-publisher state in generations that rotate, so memory stays flat (pure).

A relay keeps something per publisher chain it has seen (a duplicate detector), a subscriber per
publisher it hears (the last sequence number). However many publishers pass through, that state
must stay bounded, and without a timer per entry. raims (`SeqnoTab`, `PubTab` in
raitechnology/raims include/raims/sub.h) keeps it in a few hash tables, *generations*: entries are
written to the newest; a lookup that finds an entry in an older generation moves it to the newest;
and when the newest has grown past its size (raims: a few MiB, tens of thousands of entries) and
enough time has passed since the last rotation (raims: at least 10 s), the generations rotate: a
new empty one starts and the oldest is dropped with everything nobody asked for since.

The *trailing edge* is when the oldest generation kept was started: state for anything not seen
since then may have been dropped, so a message stamped before it cannot be judged and counts as a
repeat (raims' rule in `SubDB::match_seqno`).

Differences from raims, for a Python dict per generation: sizes are estimates given by the
caller (``entry_bytes``), and a quiet window also rotates after ``max_interval``, so that state of
publishers long gone does not linger and the trailing edge keeps moving. And memory is bounded
whatever the rate: a newest generation grown to twice its size or count rotates at once, before
``min_interval`` (a flood of fresh publishers then moves the trailing edge instead of growing the
node: at most ``generations`` x 2 x the limits are held).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["GenerationWindow", "WindowStatistics"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

MIB = 1 << 20


@dataclass(frozen=True)
class WindowStatistics:
    entries: int
    bytes: int  # estimated
    generations: int
    rotations: int
    trailing_time: float


class GenerationWindow(Generic[K, V]):
    """Entries by key, newest generation first, rotated on size, count and time."""

    def __init__(
        self,
        *,
        generations: int = 3,
        max_bytes: int = 8 * MIB,
        max_count: int = 40_000,
        min_interval: float = 10.0,
        max_interval: float = 60.0,
        entry_bytes: Callable[[V], int] = lambda value: 128,
        now: float = 0.0,
    ) -> None:
        if generations < 2:
            raise ValueError(f"a window needs at least 2 generations, got {generations}")
        if not 0 <= min_interval <= max_interval:
            raise ValueError(f"need 0 <= min_interval <= max_interval, got {min_interval}, {max_interval}")
        self.max_bytes = max_bytes
        self.max_count = max_count
        self.min_interval = min_interval
        self.max_interval = max_interval
        self._entry_bytes = entry_bytes
        self._generations: list[dict[K, V]] = [{} for _ in range(generations)]
        self._sizes: dict[K, int] = {}  # estimated bytes of each entry of the newest generation
        self._bytes = [0] * generations  # estimated bytes per generation
        self._started = [now] + [0.0] * (generations - 1)  # when each generation was started
        self.rotations = 0

    @property
    def trailing_time(self) -> float:
        """When the oldest generation kept was started (0 before the window has rotated enough
        to have dropped anything): state untouched since then may be gone."""
        return self._started[-1]

    def get(self, key: K) -> V | None:
        """The entry for ``key`` (moved to the newest generation if found in an older one)."""
        newest = self._generations[0]
        value = newest.get(key)
        if value is not None:
            return value
        for i in range(1, len(self._generations)):
            value = self._generations[i].pop(key, None)
            if value is not None:
                self._bytes[i] -= self._entry_bytes(value)
                self._store(key, value)
                return value
        return None

    def put(self, key: K, value: V, now: float) -> None:
        """Store ``value`` (replacing any entry for ``key``) in the newest generation; rotate first
        if it is due."""
        self.rotate_if_due(now)
        for older in self._generations[1:]:
            if key in older:
                self.get(key)  # move it (and its size) to the newest, to replace it there
                break
        self._store(key, value)

    def resized(self, key: K) -> None:
        """The entry for ``key`` changed its size. Change only entries `get` returned (it leaves
        them in the newest generation, whose sizes are tracked), then call this."""
        value = self._generations[0].get(key)
        if value is not None:
            self._store(key, value)

    def _store(self, key: K, value: V) -> None:
        size = self._entry_bytes(value)
        self._bytes[0] += size - self._sizes.get(key, 0)
        self._sizes[key] = size
        self._generations[0][key] = value

    def pop(self, key: K) -> V | None:
        """Remove and return the entry for ``key``, wherever it is."""
        value = self.get(key)
        if value is not None:
            del self._generations[0][key]
            self._bytes[0] -= self._sizes.pop(key)
        return value

    def due(self, now: float) -> bool:
        """Is a rotation due: the newest generation over its size or count and ``min_interval``
        passed since it was started, or ``max_interval`` passed, or the newest generation over
        twice its size or count (whatever the time: the memory bound)?"""
        elapsed = now - self._started[0]
        size, count = self._bytes[0], len(self._generations[0])
        if size > 2 * self.max_bytes or count > 2 * self.max_count:
            return True
        if elapsed < self.min_interval:
            return False
        return size > self.max_bytes or count > self.max_count or elapsed >= self.max_interval

    def rotate_if_due(self, now: float) -> bool:
        if not self.due(now):
            return False
        self.rotate(now)
        return True

    def rotate(self, now: float) -> None:
        """Start a new generation now and drop the oldest."""
        self._generations = [{}, *self._generations[:-1]]
        self._bytes = [0, *self._bytes[:-1]]
        self._started = [now, *self._started[:-1]]
        self._sizes = {}
        self.rotations += 1

    def __len__(self) -> int:
        return sum(len(g) for g in self._generations)

    def __contains__(self, key: object) -> bool:
        return any(key in g for g in self._generations)

    def values(self) -> Iterator[V]:
        for generation in self._generations:
            yield from generation.values()

    @property
    def bytes(self) -> int:
        """Estimated bytes of every entry kept."""
        return sum(self._bytes)

    def statistics(self) -> WindowStatistics:
        return WindowStatistics(
            len(self), self.bytes, len(self._generations), self.rotations, self.trailing_time
        )
