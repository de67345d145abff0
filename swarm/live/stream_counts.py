"""Per live stream (a feed or a topic): messages received, how many were new, and how the rest
were judged (repeat, not subscribed, invalid, equivocation), with the time of the last change
(pure). Bounded: the streams least recently heard from are dropped past `max_rows`."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

__all__ = ["OUTCOMES", "StreamCounts"]

OUTCOMES = ("new", "repeat", "not_subscribed", "invalid", "equivocations")
MAX_ROWS = 64


class StreamCounts:
    """Judged messages per stream name (`Stream.name`)."""

    def __init__(self, max_rows: int = MAX_ROWS) -> None:
        self.max_rows = max_rows
        self._rows: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def add(self, stream: str, outcome: str, now: float) -> None:
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}: one of {', '.join(OUTCOMES)}")
        row = self._rows.get(stream)
        if row is None:
            row = self._rows[stream] = {"received": 0, **dict.fromkeys(OUTCOMES, 0), "last": now}
            while len(self._rows) > self.max_rows:
                self._rows.popitem(last=False)
        self._rows.move_to_end(stream)
        row["received"] += 1
        row[outcome] += 1
        row["last"] = now

    def rows(self) -> list[dict[str, Any]]:
        """One row per stream, most recently heard from first."""
        return [{"stream": name, **row} for name, row in reversed(self._rows.items())]
