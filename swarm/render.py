"""Plain text tables (pure): the one renderer of the command line and of the node's log.

At the bottom of `swarm`: the CLI's documents (`swarm.cli.tables`) and the live loss report
(`swarm.live.report`, which the node also logs) both render through it.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["cell", "table"]


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain text table: left-aligned text, right-aligned numbers, a rule under the header."""
    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    numeric = [
        all(isinstance(row[i], int | float) for row in rows) and bool(rows) for i in range(len(headers))
    ]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return " | ".join(parts).rstrip()

    out = [line(list(headers)), "-+-".join("-" * w for w in widths)]
    out.extend(line(r) for r in cells)
    return "\n".join(out)


def cell(value: object) -> str:
    """One value as a table cell: nothing for None, yes or no for a truth value."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)
