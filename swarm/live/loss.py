"""The loss table: raims' `show loss`, per peer, each counter with the time it last changed (pure).

A row is where an event was seen: a connected (or recently connected) peer, for what it pushed to
this node, or ``local`` for this node's own followers and gap filling. The counters:

- ``repeat``: a message seen before (a second path brought it, or it was too old to judge);
- ``not_subscribed``: a message for a stream this node neither follows nor relays;
- ``msg_loss``: messages found missing and not recovered: a topic message skipped (its count,
  or 1 when the size of a loss is unknown), a feed update a light follower gave up on;
- ``inbox_loss``: a gap-filling retrieval that failed (one per failed try);
- ``restarts``: a topic publisher that restarted (a cycle: counted apart from loss);
- ``gaps_open``: a gauge, the feed updates followers wait for now;
- ``gaps_filled``: feed updates recovered by retrieval;
- ``invalid``: a malformed or forged message (bad signature, not a valid update, broken numbering);
- ``equivocations``: a second, different signed update at an index already taken.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["COUNTERS", "LOCAL", "LossRow", "LossTable"]

COUNTERS = (
    "repeat",
    "not_subscribed",
    "msg_loss",
    "inbox_loss",
    "restarts",
    "gaps_open",
    "gaps_filled",
    "invalid",
    "equivocations",
)
GAUGES = frozenset({"gaps_open"})
LOCAL = "local"
MAX_ROWS = 64
"""Rows kept; the one changed longest ago goes first (the local row stays)."""


@dataclass(frozen=True)
class LossRow:
    source: str  # a peer's overlay (hex) or "local"
    counts: dict[str, int]
    changed: dict[str, float | None]  # wall-clock time of each counter's last change


class LossTable:
    """Counters per source, each with its last change."""

    def __init__(self, max_rows: int = MAX_ROWS) -> None:
        self.max_rows = max_rows
        self._rows: OrderedDict[str, dict[str, list[float]]] = OrderedDict()

    def _row(self, source: str) -> dict[str, list[float]]:
        row = self._rows.get(source)
        if row is None:
            row = self._rows[source] = {name: [0, 0.0] for name in COUNTERS}
            while len(self._rows) > self.max_rows:
                oldest = next(s for s in self._rows if s != LOCAL)
                del self._rows[oldest]
        self._rows.move_to_end(source)
        return row

    def add(self, source: str, counter: str, now: float, amount: int = 1) -> None:
        if counter in GAUGES:
            raise ValueError(f"{counter} is a gauge: set it")
        if amount:
            cell = self._row(source)[counter]
            cell[0] += amount
            cell[1] = now

    def set(self, source: str, gauge: str, value: int, now: float) -> None:
        if gauge not in GAUGES:
            raise ValueError(f"{gauge} is a counter: add to it")
        cell = self._row(source)[gauge]
        if cell[0] != value:
            cell[0], cell[1] = value, now

    def count(self, source: str, counter: str) -> int:
        row = self._rows.get(source)
        return int(row[counter][0]) if row else 0

    def total(self, counter: str) -> int:
        return int(sum(row[counter][0] for row in self._rows.values()))

    def rows(self) -> tuple[LossRow, ...]:
        """Every row, the local one first, then peers by overlay."""
        ordered = sorted(self._rows.items(), key=lambda item: (item[0] != LOCAL, item[0]))
        return tuple(
            LossRow(
                source,
                {name: int(cell[0]) for name, cell in row.items()},
                {name: (cell[1] or None) for name, cell in row.items()},
            )
            for source, row in ordered
        )
