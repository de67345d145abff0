"""The live terminal view of a swarm (`swarm sync-status --watch`, `swarm up --watch`), on rich.

Every refresh reads `GET /sync` of each node and redraws, in place, until Ctrl-C: a table with a
row per node (depth, peers, chunks and their rate, loss counters, state), then per node the bins
it syncs with their progress over all its peers (bin IDs synced / the peers' cursors) and rate.
`SyncRates` turns successive documents into those figures and is pure; `watch` is the loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

__all__ = ["BinProgress", "SyncRates", "bin_progress", "render", "watch"]

LOSS = ("repeat", "unsolicited", "invalid", "missing", "resets")

Target = tuple[str, str | None]
"""(label, API URL, or None when the node is known to be down)."""


@dataclass(frozen=True)
class BinProgress:
    """One bin a node syncs, over all its peers: bin IDs synced, the peers' cursors, the peers."""

    synced: int
    cursor: int
    peers: int

    @property
    def fraction(self) -> float:
        return self.synced / self.cursor if self.cursor else 1.0


def bin_progress(doc: dict[str, Any]) -> dict[int, BinProgress]:
    """Per bin of a `/sync` document: what is synced (cursor - lag) of the peers' cursors."""
    sums: dict[int, list[int]] = {}
    for peer in doc["peers"]:
        for b in peer["bins"]:
            entry = sums.setdefault(b["bin"], [0, 0, 0])
            entry[0] += b["cursor"] - b["lag"]
            entry[1] += b["cursor"]
            entry[2] += 1
    return {bin: BinProgress(*entry) for bin, entry in sorted(sums.items())}


@dataclass
class SyncRates:
    """Rates from successive samples of one node: chunks stored and bin IDs synced per second."""

    at: float | None = None
    chunks: int = 0
    bins: dict[int, int] = field(default_factory=dict)

    def update(self, doc: dict[str, Any], now: float) -> tuple[float | None, dict[int, float | None]]:
        """(chunks per second, per bin IDs synced per second) since the last sample; None for
        what has no earlier sample."""
        progress = bin_progress(doc)
        seconds = now - self.at if self.at is not None else 0.0

        def per_second(value: int, old: int | None) -> float | None:
            return max(0, value - old) / seconds if seconds > 0 and old is not None else None

        chunk_rate = per_second(doc["chunks"], self.chunks if self.at is not None else None)
        bin_rates = {bin: per_second(p.synced, self.bins.get(bin)) for bin, p in progress.items()}
        self.at, self.chunks = now, doc["chunks"]
        self.bins = {bin: p.synced for bin, p in progress.items()}
        return chunk_rate, bin_rates


def _rate(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}" if value < 10 else f"{value:.0f}"


def render(
    samples: Sequence[tuple[str, dict[str, Any] | str]], rates: dict[str, SyncRates], now: float
) -> RenderableType:
    """The view of `samples`: (label, `/sync` document or why the node is down)."""
    nodes = Table(title="nodes", title_justify="left", expand=False)
    for name in ("node", "overlay", "depth", "peers", "chunks", "chunks/s", *LOSS, "state"):
        nodes.add_column(name, justify="left" if name in ("node", "overlay", "state") else "right")
    bins = Table(title="bins: sync progress over all peers", title_justify="left")
    for name in ("node", "bin", "peers", "progress", "synced/cursor", "IDs/s"):
        bins.add_column(name, justify="left" if name in ("node", "progress") else "right")
    for label, doc in samples:
        if isinstance(doc, str):
            nodes.add_row(label, "", "", "", "", "", *[""] * len(LOSS), Text(f"down: {doc}", style="red"))
            continue
        chunk_rate, bin_rates = rates.setdefault(label, SyncRates()).update(doc, now)
        totals = doc.get("totals", {})
        loss = [Text(str(totals.get(n, 0)), style="red" if totals.get(n) else "") for n in LOSS]
        synced = doc["fully_synced"]
        state = Text("fully synced" if synced else "syncing", style="green" if synced else "yellow")
        row = [label, doc["overlay"][:16], str(doc["depth"]), str(len(doc["peers"])), str(doc["chunks"])]
        nodes.add_row(*row, _rate(chunk_rate), *loss, state)
        for bin, p in bin_progress(doc).items():
            if not p.cursor:
                continue  # nothing offered in this bin yet: nothing to show
            bar = ProgressBar(
                total=p.cursor, completed=p.synced, width=24, complete_style="yellow", finished_style="green"
            )
            progress = f"{p.synced}/{p.cursor}"
            bins.add_row(label, str(bin), str(p.peers), bar, progress, _rate(bin_rates.get(bin)))
    when = time.strftime("%H:%M:%S")
    if not bins.row_count:
        peers = any(not isinstance(doc, str) and doc["peers"] for _, doc in samples)
        empty = (
            "nothing to sync yet: the peers offer no chunks"
            if peers
            else "nothing to sync: no peers connected"
        )
        return Group(nodes, Text(empty), Text(f"updated {when}; Ctrl-C to stop", style="dim"))
    return Group(nodes, bins, Text(f"updated {when}; Ctrl-C to stop", style="dim"))


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
                samples.append((label, f"{url}: {exc}"))
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
    runs between redraws (every 0.2 s), `notes` are shown under the tables."""
    from rich.live import Live

    rates: dict[str, SyncRates] = {}
    try:
        with Live(console=console, auto_refresh=False, transient=False) as live:
            while not stop():
                view = render(_sample(targets()), rates, time.monotonic())
                lines = [Text(note) for note in notes]
                live.update(Group(view, *lines) if lines else view, refresh=True)
                deadline = time.monotonic() + interval
                while time.monotonic() < deadline and not stop():
                    if tick is not None:
                        tick()
                    time.sleep(min(0.2, interval))
    except KeyboardInterrupt:
        pass
    return 0
