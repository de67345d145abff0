"""The live terminal view of a swarm (`swarm sync-status --watch`, `swarm up --watch`), on rich.

Every refresh reads `GET /sync` of each node and redraws, in place, until Ctrl-C, a rich
`Layout` exactly as high as the terminal (less one line): a table with a row per node (depth,
peers, chunks and their rate, seconds behind, loss counters, state), then the bins each node
syncs with their progress over all its peers (bin IDs synced / the peers' cursors), rate,
seconds behind and last batch, then a footer (legend, why a node is down, notes, the time).
The nodes table and the footer always fit; the bins get the rows left: one row per bin when
they fit, else one summary row per node, paged one page per refresh when even those do not.
Column widths come from `Columns` (swarm/cli/livefit.py): they never shrink between frames and
never cut a number; the five loss columns become one `loss` sum on a narrow terminal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.layout import Layout
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from swarm.cli.livefit import Column, Columns, page
from swarm.cli.liverates import BinProgress, SyncRates, behind, bin_progress
from swarm.cli.tables import LOSS, clock, seconds_text

__all__ = ["BinProgress", "SyncRates", "View", "bin_progress", "render", "watch"]

Target = tuple[str, str | None]
"""(label, API URL, or None when the node is known to be down)."""

_LEAD = [
    Column("node", False, 4, gives_way=3),
    Column("overlay", False, 6, gives_way=1),
    Column("depth"),
    Column("peers"),
]
_RATES = [Column("chunks"), Column("chunks/s"), Column("behind")]
WIDE = [*_LEAD, *_RATES, *(Column(name) for name in LOSS), Column("state", False, 6, gives_way=2)]
NARROW = [*_LEAD, *_RATES, Column("loss"), Column("state", False, 6, gives_way=2)]
BINS = [
    Column("node", False, 4), Column("bin"), Column("peers"), Column("progress", False, 6, flex=True),
    Column("synced/cursor"), Column("IDs/s"), Column("behind"), Column("last batch"),
]  # fmt: skip
LEGEND = "behind: age of the oldest ID a peer holds that is not synced yet (docs/architecture.md)"
LOSS_LEGEND = "loss: " + "+".join(LOSS)


@dataclass
class View:
    """What the view keeps between frames: rates, column widths, the frame count (pages)."""

    rates: dict[str, SyncRates] = field(default_factory=dict)
    nodes: Columns = field(default_factory=Columns)
    bins: Columns = field(default_factory=Columns)
    frame: int = 0


def _rate(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}" if value < 10 else f"{value:.0f}"


def _node_cells(label: str, doc: dict[str, Any], chunk_rate: float | None, wide: bool) -> list[str]:
    totals = doc.get("totals", {})
    loss = [str(totals.get(n, 0)) for n in LOSS] if wide else [str(sum(totals.get(n, 0) for n in LOSS))]
    head = [label, doc["overlay"][:16], str(doc["depth"]), str(len(doc["peers"])), str(doc["chunks"])]
    state = "fully synced" if doc["fully_synced"] else "syncing"
    return [*head, _rate(chunk_rate), seconds_text(behind(doc)), *loss, state]


def _bin_cells(label: str, bins: str, p: BinProgress, rate: float | None) -> list[str]:
    progress = f"{p.synced}/{p.cursor}"
    last = clock(p.last_batch) or "-"
    return [label, bins, str(p.peers), "", progress, _rate(rate), seconds_text(p.behind), last]


def _summary(label: str, progress: dict[int, BinProgress], rates: dict[int, float | None]) -> list[str]:
    """One row for all a node's bins: sums, the most behind, the latest batch."""
    shown = [p for p in progress.values() if p.cursor]
    last = [p.last_batch for p in shown if p.last_batch is not None]
    synced, cursor = sum(p.synced for p in shown), sum(p.cursor for p in shown)
    most_behind = max(p.behind for p in shown)
    total = BinProgress(synced, cursor, max(p.peers for p in shown), most_behind, max(last, default=None))
    known = [r for r in rates.values() if r is not None]
    return _bin_cells(label, f"{len(shown)} bins", total, sum(known) if known else None)


def _table(title: str, columns: Sequence[Column], widths: list[int], rows: Iterable[list[Any]]) -> Table:
    table = Table(title=title, title_justify="left", box=None, padding=(0, 1), pad_edge=False,
                  show_edge=False, expand=False, header_style="bold", title_style="bold")  # fmt: skip
    for column, width in zip(columns, widths, strict=True):
        table.add_column(column.header, justify="right" if column.numeric else "left", width=width,
                         min_width=width, max_width=width, no_wrap=True, overflow="ellipsis")  # fmt: skip
    for row in rows:
        table.add_row(*row)
    return table


_STYLE = {"fully synced": "green", "syncing": "yellow", "not answering": "red", "not running": "red"}


def _styled(cells: list[str], columns: Sequence[Column]) -> list[Any]:
    out: list[Any] = list(cells)
    out[-1] = Text(cells[-1], style=_STYLE.get(cells[-1], ""))
    for i, column in enumerate(columns):
        if column.header in (*LOSS, "loss") and cells[i] not in ("", "0"):
            out[i] = Text(cells[i], style="red")
    return out


class _Sized:
    """A renderable drawn exactly `height` lines high (a Layout would take the whole console)."""

    def __init__(self, renderable: RenderableType, height: int) -> None:
        self.renderable, self.height = renderable, height

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from console.render(self.renderable, options.update(height=self.height))


@dataclass
class _Frame:
    """One frame's rows, before they are fitted to the terminal."""

    nodes: list[list[str]] = field(default_factory=list)
    bins: list[list[str]] = field(default_factory=list)  # one per bin something was offered in
    summaries: list[list[str]] = field(default_factory=list)  # one per node
    footer: list[str] = field(default_factory=list)


def _rows(samples: Sequence[tuple[str, dict[str, Any] | str]], view: View, now: float, wide: bool) -> _Frame:
    frame = _Frame(footer=[LEGEND + ("" if wide else " · " + LOSS_LEGEND)])
    for label, doc in samples:
        if isinstance(doc, str):
            state = "not running" if doc == "not running" else "not answering"
            frame.nodes.append([label, *[""] * (len(WIDE if wide else NARROW) - 2), state])
            frame.footer.append(f"{label}: {doc}")
            continue
        chunk_rate, rates = view.rates.setdefault(label, SyncRates()).update(doc, now)
        frame.nodes.append(_node_cells(label, doc, chunk_rate, wide))
        shown = {b: p for b, p in bin_progress(doc).items() if p.cursor}  # nothing offered: not shown
        frame.bins += [_bin_cells(label, str(b), p, rates.get(b)) for b, p in shown.items()]
        if shown:
            frame.summaries.append(_summary(label, shown, rates))
    return frame


def render(
    samples: Sequence[tuple[str, dict[str, Any] | str]],
    view: View,
    now: float,
    *,
    width: int,
    height: int,
    notes: Iterable[str] = (),
) -> RenderableType:
    """The view of `samples` ((label, `/sync` document or why the node is down)), `width` x
    `height` characters."""
    wide = view.nodes.natural(WIDE) <= width
    columns = WIDE if wide else NARROW
    frame = _rows(samples, view, now, wide)
    view.nodes.see(columns, frame.nodes)
    widths = view.nodes.layout(columns, width)
    nodes = _table("nodes", columns, widths, [_styled(r, columns) for r in frame.nodes])
    footer = [*frame.footer, *notes, f"updated {time.strftime('%H:%M:%S')}; Ctrl-C to stop"]
    footer = footer[-max(1, height - len(frame.nodes) - 2) :]  # the newest lines, when short of room
    room = height - (len(frame.nodes) + 2) - len(footer) - 2  # less the tables' titles and headers
    parts = [Layout(nodes, size=len(frame.nodes) + 2), _bins_part(frame, view, width, room)]
    parts.append(Layout(Text(" "), name="rest"))  # not Text(""): Layout draws a placeholder for that
    footer_text = Text("\n".join(footer), no_wrap=True, overflow="ellipsis", style="dim")
    parts.append(Layout(footer_text, size=len(footer)))
    layout = Layout()
    layout.split_column(*parts)
    return _Sized(layout, height)


def _bins_part(frame: _Frame, view: View, width: int, room: int) -> Layout:
    """The bins in `room` rows: one per bin if they fit, else one per node, paged if need be."""
    if not frame.bins:
        peers = any(cells[3] not in ("", "0") for cells in frame.nodes)
        empty = (
            "nothing to sync yet: the peers offer no chunks"
            if peers
            else "nothing to sync: no peers connected"
        )
        return Layout(Text(empty), size=1)
    rows, what = (
        (frame.bins, "per bin") if len(frame.bins) <= room else (frame.summaries, "per node, all bins")
    )
    shown, number, pages = page(len(rows), room, view.frame)
    view.frame += 1
    if not shown:
        return Layout(Text(" "), size=1)
    title = "bins: sync progress over all peers, " + what
    if pages > 1:
        title += f" (page {number}/{pages})"
    return Layout(_bins_table(title, [rows[i] for i in shown], view, width), size=len(shown) + 2)


def _bins_table(title: str, rows: list[list[str]], view: View, width: int) -> Table:
    view.bins.see(BINS, rows)
    widths = view.bins.layout(BINS, width)
    drawn = []
    for row in rows:
        synced, cursor = (int(x) for x in row[4].split("/"))
        bar = ProgressBar(total=cursor, completed=synced, width=widths[3], complete_style="yellow",
                          finished_style="green")  # fmt: skip
        drawn.append([*row[:3], bar, *row[4:]])
    return _table(title, BINS, widths, drawn)


def _sample(targets: Iterable[Target]) -> list[tuple[str, dict[str, Any] | str]]:
    import httpx

    samples: list[tuple[str, dict[str, Any] | str]] = []
    with httpx.Client(timeout=2.0) as client:
        for label, url in targets:
            if url is None:
                samples.append((label, "not running"))
                continue
            try:
                response = client.get(url + "/sync")
                response.raise_for_status()
                samples.append((label, response.json()))
            except (httpx.HTTPError, ValueError) as exc:
                samples.append((label, f"{url}: {type(exc).__name__}: {exc}"))
    return samples


def watch(
    targets: Callable[[], list[Target]],
    *,
    interval: float = 1.0,
    tick: Callable[[], None] | None = None,
    stop: Callable[[], bool] = lambda: False,
    notes: Iterable[str] = (),
    console: Console | None = None,
) -> int:
    """Redraw the view of `targets()` every `interval` seconds until Ctrl-C or `stop()`; `tick`
    runs between redraws (every 0.2 s), `notes` are shown in the footer."""
    from rich.live import Live

    view = View()
    try:
        with Live(console=console, auto_refresh=False, transient=False) as live:
            while not stop():
                size = live.console.size
                frame = render(_sample(targets()), view, time.monotonic(), width=size.width,
                               height=max(8, size.height - 1), notes=list(notes))  # fmt: skip
                live.update(frame, refresh=True)
                deadline = time.monotonic() + interval
                while time.monotonic() < deadline and not stop():
                    if tick is not None:
                        tick()
                    time.sleep(min(0.2, interval))
    except KeyboardInterrupt:
        pass
    return 0
