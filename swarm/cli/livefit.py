"""Fitting the live view to the terminal (pure): column widths that never jitter nor cut a number,
and bin rows paged or summarised to the rows left.

A `Columns` keeps, per column, the widest cell it has ever been given: every frame lays its
table out with those widths, so a column only ever grows (no jitter between frames) and a
number always has room (numbers are never cut). When the columns do not fit the terminal, the
text columns marked shrinkable give way first, down to their minimum; a row's text (an overlay,
a node's state) may then be cut with an ellipsis, never a number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["GAP", "Column", "Columns", "page"]

GAP = 2
"""Spaces between two columns (tables drawn without vertical rules)."""

FLEX_MAX = 32
"""The widest a flex column (a progress bar) grows."""


@dataclass(frozen=True)
class Column:
    header: str
    numeric: bool = True  # right-aligned, never cut
    shrink_to: int | None = None  # a text column that may give way down to this width
    flex: bool = False  # takes the width left over (a progress bar), from `shrink_to` to FLEX_MAX
    gives_way: int = 0  # the order in which shrinkable columns give way (lowest first)


@dataclass
class Columns:
    """Column widths kept across frames: each the widest cell seen, headers included."""

    widest: dict[str, int] = field(default_factory=dict)

    def see(self, columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> None:
        for i, column in enumerate(columns):
            cells = [len(row[i]) for row in rows if i < len(row)]
            widest = max([len(column.header), *cells])
            self.widest[column.header] = max(self.widest.get(column.header, 0), widest)

    def natural(self, columns: Sequence[Column]) -> int:
        """The width the columns take at their widest, gaps included (flex ones at their minimum)."""
        return sum(self._base(c) for c in columns) + GAP * (len(columns) - 1)

    def layout(self, columns: Sequence[Column], width: int) -> list[int]:
        """Each column's width for a terminal `width` wide: shrinkable text columns give way first,
        a flex column takes what is left."""
        widths = [self._base(c) for c in columns]
        excess = sum(widths) + GAP * (len(columns) - 1) - width
        for i, column in sorted(enumerate(columns), key=lambda ic: ic[1].gives_way):
            if excess <= 0:
                break
            if column.shrink_to is not None and not column.flex:
                give = min(excess, widths[i] - column.shrink_to)
                if give > 0:
                    widths[i] -= give
                    excess -= give
        if excess < 0:
            for i, column in enumerate(columns):
                if column.flex:
                    widths[i] = min(FLEX_MAX, widths[i] - excess)
                    break
        return widths

    def _base(self, column: Column) -> int:
        if column.flex:
            return max(column.shrink_to or 1, len(column.header))
        return self.widest.get(column.header, len(column.header))


def page(count: int, room: int, frame: int) -> tuple[range, int, int]:
    """Which of `count` rows to show in `room` rows at `frame`: (rows, page number from 1, pages).
    Pages turn one per frame."""
    if room <= 0:
        return range(0), 0, 0
    pages = max(1, -(-count // room))
    current = frame % pages
    return range(current * room, min(count, (current + 1) * room)), current + 1, pages
