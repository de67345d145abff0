"""What `swarm sim` prints: its summary as a terminal table (rich), the files it wrote, and the
progress line with an estimate of the time left."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from rich import box
from rich.console import Console
from rich.table import Table

from swarm.cli.tables import seconds_text
from swarm.sim.report import FAILED_NOTE, METRICS, SummaryRow, cell

__all__ = ["Progress", "print_summary", "summary_table"]


def summary_table(rows: Sequence[SummaryRow], *, wide: bool) -> Table:
    """Per (N, strategy): the main metrics' means, or (`wide`) every metric with its 95% interval,
    clipped to what the quantity can be."""
    metrics = list(METRICS) if wide else [m for m in METRICS if m.compact]
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("N", justify="right")
    table.add_column("strategy")
    table.add_column("runs", justify="right")
    for metric in metrics:
        table.add_column(metric.header, justify="right", no_wrap=True)
    for r in rows:
        values = [cell(r, m) if wide else f"{r.means[m.name]:.{m.digits}f}" for m in metrics]
        table.add_row(str(r.nodes), r.strategy, str(r.runs), *values)
    return table


def print_summary(rows: Sequence[SummaryRow], files: Sequence[Path], out: Path, *, wide: bool) -> None:
    """The table, what `failed` means, and where the plots and tables went."""
    console = Console(file=sys.stdout, soft_wrap=False)
    if not console.is_terminal:
        console = Console(file=sys.stdout, width=400, soft_wrap=False)  # a pipe or file: no wrapping
    console.print(summary_table(rows, wide=wide))
    print(FAILED_NOTE)
    if not wide:
        print("Means over the runs; summary.md (or --wide) has every column with its 95 % interval.")
    plots = [f for f in files if f.suffix == ".png"]
    if plots:
        print("plots:\n" + "\n".join(f"  {path}" for path in plots))
    print(f"tables: {out / 'summary.md'}, {out / 'summary.csv'}, Parquet and run.json in {out}/")


class Progress:
    """``sim: k/total networks, elapsed, about T left`` on stderr: in place on a terminal, else a
    line every ``every`` seconds. The time left assumes the networks still to run take as long,
    on average, as those done."""

    def __init__(self, stream: TextIO = sys.stderr, every: float = 10.0) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.every = every
        self.start = time.monotonic()
        self.last_print = -every
        self.last = -1

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done == self.last:
            return
        if not self.tty and done != total and now - self.last_print < self.every:
            return
        self.last, self.last_print = done, now
        elapsed = now - self.start
        text = f"sim: {done}/{total} networks, {seconds_text(elapsed)}"
        if 0 < done < total:
            text += f", about {seconds_text(elapsed / done * (total - done))} left"
        if self.tty:
            self.stream.write("\r" + text + " " * 8 + ("\n" if done == total else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
