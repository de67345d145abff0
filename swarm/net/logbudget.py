"""LogBudget: a cap on how often one kind of event is logged.

A peer can make a node log as fast as it can open connections (a refused handshake each) or send
bad records (2,486 warnings a second, once); an operator's log must not fill with 20,000
identical warnings. A budget lets `burst` lines through per `window` seconds and counts the
rest; the next line let through says how many were not logged, so nothing is hidden, only
summarised. `LogBudgets` keeps one per kind of line for every logger of the network's parts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["NETWORK_LOGGERS", "LogBudget", "LogBudgets"]


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


NETWORK_LOGGERS = (
    "streamer",
    "syncer",
    "kademlia",
    "swarm.net",
    "swarm.live",
    "swarm.spaces",
    "swarm.proofs",
    "swarm.reserve",
)
"""The loggers of the parts a peer talks to: every line they write, a peer can make them write."""


class LogBudgets(logging.Filter):
    """A `LogBudget` per kind of line (the logger and its format string, not the values): a
    filter on the loggers of `NETWORK_LOGGERS`, so that what a peer can make the node log at
    INFO and above (a bad gossip record, a protocol violation, an equivocation ...) comes out
    at most `burst` times per `window` seconds per kind. The next line let through says how
    many were not logged, and `summaries()` (called every `window` by the node) says it for the
    kinds that went quiet, so a flood shows as one line per kind and window, not as its size."""

    def __init__(self, burst: int = 10, window: float = 10.0, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.burst = burst
        self.window = window
        self._clock = clock
        self._budgets: dict[tuple[str, str], LogBudget] = {}  # bounded: kinds are lines in the code
        self._attached: list[logging.Logger] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.INFO:
            return True
        kind = (record.name, str(record.msg))
        budget = self._budgets.get(kind)
        if budget is None:
            budget = self._budgets[kind] = LogBudget(self.burst, self.window, self._clock)
        if not budget.allow():
            return False
        note = budget.note()  # no % in it: safe to append to a format string
        if note:
            record.msg = f"{record.msg}{note}"
        return True

    def summaries(self) -> list[str]:
        """One line per kind of which lines were not logged since its last line (and resets)."""
        lines = []
        for (name, msg), budget in self._budgets.items():
            if budget.suppressed:
                lines.append(f"{budget.suppressed} more lines like {name}: {msg!r} not logged")
                budget.suppressed = 0
        return lines

    def attach(self, prefixes: tuple[str, ...] = NETWORK_LOGGERS) -> None:
        """Filter every logger that exists under `prefixes` (the node has imported them all)."""
        names = {
            name
            for name in logging.root.manager.loggerDict
            if any(name == p or name.startswith(p + ".") for p in prefixes)
        }
        for name in sorted(names | set(prefixes)):
            logger = logging.getLogger(name)
            logger.addFilter(self)
            self._attached.append(logger)

    def detach(self) -> None:
        for logger in self._attached:
            logger.removeFilter(self)
        self._attached.clear()
