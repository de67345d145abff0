"""LogBudget: a cap on how often one kind of event is logged.

A peer can make a node log as fast as it can open connections (a refused handshake each); an
operator's log must not fill with 20,000 identical warnings. A budget lets `burst` lines through
per `window` seconds and counts the rest; the next line let through says how many were not
logged, so nothing is hidden, only summarised.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["LogBudget"]


class LogBudget:
    """At most `burst` log lines per `window` seconds for one kind of event."""

    def __init__(self, burst: int = 10, window: float = 10.0, clock: Callable[[], float] = time.monotonic):
        if burst < 1 or window <= 0:
            raise ValueError(f"a log budget needs burst >= 1 and window > 0, got {burst} and {window}")
        self.burst = burst
        self.window = window
        self._clock = clock
        self._window_start = clock()
        self._used = 0
        self.suppressed = 0  # events not logged since the last line let through

    def allow(self) -> bool:
        """Whether this event may be logged now (if not, it is counted)."""
        now = self._clock()
        if now - self._window_start >= self.window:
            self._window_start, self._used = now, 0
        if self._used >= self.burst:
            self.suppressed += 1
            return False
        self._used += 1
        return True

    def note(self) -> str:
        """A suffix for the line let through: how many were not logged before it (and resets it)."""
        if not self.suppressed:
            return ""
        text = f" ({self.suppressed} more like this not logged)"
        self.suppressed = 0
        return text
