"""Lag as time: how long a (peer, bin) has been behind, and when it last got a batch (pure).

Definition (docs/architecture.md, "Lag as time"): a bin's *seconds behind* is the age of the
oldest bin ID the upstream holds that this node has not synced yet, where the age of an ID
counts from the moment this node first learned that the upstream holds it (a cursors reply or
an offer whose end reached it). A caught-up bin is 0 seconds behind. It is a true lower bound
on staleness: the upstream may have stored the chunk earlier, but this node cannot know when;
after a reconnection the IDs offered again count from the new cursors reply.

`CursorClock` keeps, per bin, the times at which the upstream's cursor was seen to grow, so the
moment any ID became known is the time of the first observation whose cursor reached it. IDs
below the first missing one are synced and their observations are pruned: memory stays small.
Time is passed in by the caller (wall-clock seconds), keeping this module free of clocks.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

__all__ = ["CursorClock"]


@dataclass
class CursorClock:
    """One bin of one upstream: cursor observations and the time of the last synced batch."""

    cursors: list[int] = field(default_factory=list)  # strictly increasing
    seen: list[float] = field(default_factory=list)  # when each cursor was first seen
    last_batch: float | None = None

    def observe(self, cursor: int, now: float) -> None:
        """The upstream's cursor is `cursor` as of `now`; only growth is news."""
        if cursor > 0 and (not self.cursors or cursor > self.cursors[-1]):
            self.cursors.append(cursor)
            self.seen.append(now)

    def batch(self, now: float) -> None:
        """A batch of this bin was synced at `now`."""
        self.last_batch = now

    def known_since(self, id: int) -> float | None:
        """When this node first learned that the upstream holds `id` (None: not yet)."""
        i = bisect_left(self.cursors, id)
        return self.seen[i] if i < len(self.seen) else None

    def behind(self, first_missing: int | None, now: float) -> float:
        """Seconds behind, given the first ID up to the cursor not synced (None: caught up).

        Observations wholly below `first_missing` are dropped, the one reaching it is kept.
        """
        if first_missing is None:
            return 0.0
        i = bisect_left(self.cursors, first_missing)
        if i:
            del self.cursors[:i], self.seen[:i]
        if not self.seen:
            return 0.0  # an ID the cursor never showed is not behind
        return max(0.0, now - self.seen[0])
