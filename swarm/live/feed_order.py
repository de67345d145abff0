"""A follower's feed: updates in index order exactly once, and which missing ones to fetch when (pure).

Relays push updates as they come, in any order and some more than once; only a follower orders
them (Streamr's split between the network and its clients' `OrderMessages`). `FeedOrder` holds
the updates that arrived ahead of the next index and hands them out in order; `GapSchedule`
decides when to fetch the ones still missing (a feed's update addresses are deterministic, so a
gap is filled by retrieving them through the swarm) and when to give up on one.

Timing starts from Streamr's client defaults (`gapFillTimeout` 5 s, `retryResendAfter` 5 s,
`maxGapRequests` 5), with two changes the research recommends: missing updates are fetched
several at a time (`parallel`), not one gap at a time, and an update known to exist because a
lookup found a later one (catching up) is fetched at once, without waiting for stragglers.

Modes, as Streamr's `gapFillStrategy`: ``light`` gives an update up after ``max_tries`` failed
fetches and moves on (a loss, reported); ``full`` keeps trying, backing off to ``max_retry``
between tries, and never shows a later update before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["FULL", "LIGHT", "FeedOrder", "GapSchedule", "Ready", "Skipped"]

LIGHT = "light"
FULL = "full"
MODES = (LIGHT, FULL)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Ready(Generic[T]):
    """The update at ``index`` is next: show it."""

    index: int
    update: T


@dataclass(frozen=True, slots=True)
class Skipped:
    """Updates ``start..end`` (inclusive) were given up: say so, then go on after them."""

    start: int
    end: int


class FeedOrder(Generic[T]):
    """Updates of one feed from ``start`` on, handed out in index order, each once."""

    def __init__(self, start: int, *, max_pending: int = 256) -> None:
        self.next_index = start
        self.horizon = start  # one past the highest index known to exist
        self.max_pending = max_pending
        self._pending: dict[int, T] = {}
        self._lost: set[int] = set()

    def offer(self, index: int, update: T) -> list[Ready[T] | Skipped] | None:
        """An update arrived (pushed or fetched): what is now ready, or None if it was already
        shown, skipped or held (a repeat). One too far ahead (over ``max_pending``) is not held,
        only noted as existing, to be fetched when its turn comes."""
        if index < self.next_index or index in self._pending or index in self._lost:
            return None
        self.horizon = max(self.horizon, index + 1)
        if index - self.next_index >= self.max_pending:
            return []
        self._pending[index] = update
        return self._drain()

    def known(self, latest: int) -> None:
        """Updates up to ``latest`` exist (a lookup or a probe found it)."""
        self.horizon = max(self.horizon, latest + 1)

    def give_up(self, index: int) -> list[Ready[T] | Skipped]:
        """Stop waiting for ``index``: what is now ready (a Skipped for the run it ends)."""
        if index >= self.next_index and index not in self._pending:
            self._lost.add(index)
            self.horizon = max(self.horizon, index + 1)
        return self._drain()

    def missing(self, limit: int | None = None) -> list[int]:
        """Indices known to exist, not here, not given up, from the next one on (at most
        ``max_pending`` ahead, and ``limit`` of them)."""
        end = min(self.horizon, self.next_index + self.max_pending)
        found = []
        for index in range(self.next_index, end):
            if index not in self._pending and index not in self._lost:
                found.append(index)
                if limit is not None and len(found) >= limit:
                    break
        return found

    @property
    def pending(self) -> int:
        return len(self._pending)

    def _drain(self) -> list[Ready[T] | Skipped]:
        out: list[Ready[T] | Skipped] = []
        skipped_from: int | None = None
        while True:
            index = self.next_index
            if index in self._lost:
                self._lost.discard(index)
                if skipped_from is None:
                    skipped_from = index
            elif index in self._pending:
                if skipped_from is not None:
                    out.append(Skipped(skipped_from, index - 1))
                    skipped_from = None
                out.append(Ready(index, self._pending.pop(index)))
            else:
                break
            self.next_index += 1
        if skipped_from is not None:
            out.append(Skipped(skipped_from, self.next_index - 1))
        return out


@dataclass
class _Fetch:
    due: float
    tries: int = 0
    in_flight: bool = False
    gap: bool = True  # found missing (not merely catching up)


class GapSchedule:
    """When to fetch each missing index, how many at once, when to give one up."""

    def __init__(
        self,
        *,
        mode: str = LIGHT,
        wait: float = 5.0,
        retry: float = 5.0,
        max_tries: int = 5,
        max_retry: float = 60.0,
        parallel: int = 8,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if parallel < 1 or max_tries < 1:
            raise ValueError("parallel and max_tries must be at least 1")
        self.mode = mode
        self.wait, self.retry, self.max_tries, self.max_retry = wait, retry, max_tries, max_retry
        self.parallel = parallel
        self._fetches: dict[int, _Fetch] = {}

    def note(self, indices: list[int], now: float, *, wait: bool, gap: bool = True) -> None:
        """``indices`` are missing: fetch them after the straggler wait (``wait``) or at once.
        ``gap``: found missing (counted as gaps), rather than fetched to catch up."""
        due = now + self.wait if wait else now
        for index in indices:
            if index not in self._fetches:
                self._fetches[index] = _Fetch(due, gap=gap)

    def arrived(self, index: int) -> None:
        """It came by itself (or was given up): stop tracking it."""
        self._fetches.pop(index, None)

    def due(self, now: float) -> list[int]:
        """Indices to fetch now (lowest first), within the bound on fetches at once; each is
        marked in flight until `succeeded` or `failed`."""
        free = self.parallel - sum(f.in_flight for f in self._fetches.values())
        ready = sorted(i for i, f in self._fetches.items() if not f.in_flight and f.due <= now)[
            : max(free, 0)
        ]
        for index in ready:
            self._fetches[index].in_flight = True
        return ready

    def succeeded(self, index: int) -> bool:
        """Fetched: returns whether it was a gap (not a catch-up)."""
        fetch = self._fetches.pop(index, None)
        return fetch is not None and fetch.gap

    def failed(self, index: int, now: float) -> bool:
        """A fetch failed: returns True if the index is now given up (light mode, out of tries)."""
        fetch = self._fetches.get(index)
        if fetch is None:
            return False
        fetch.in_flight = False
        fetch.tries += 1
        if self.mode == LIGHT and fetch.tries >= self.max_tries:
            del self._fetches[index]
            return True
        backoff = (
            self.retry
            if fetch.tries < self.max_tries
            else self.retry * 2 ** (fetch.tries - self.max_tries + 1)
        )
        fetch.due = now + min(backoff, self.max_retry)
        return False

    def next_due(self) -> float | None:
        """When the earliest waiting fetch is due (None: nothing waits)."""
        waiting = [f.due for f in self._fetches.values() if not f.in_flight]
        return min(waiting) if waiting else None

    @property
    def open_gaps(self) -> int:
        """Missing updates found (not catch-up) still tracked."""
        return sum(f.gap for f in self._fetches.values())

    def __len__(self) -> int:
        return len(self._fetches)

    def __contains__(self, index: object) -> bool:
        return index in self._fetches
