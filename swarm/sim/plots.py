"""PNG plots of a summary: one metric against the network size, one line per strategy, 95% error bars.

Strategies often land on top of each other, so every series is drawn so that it stays visible: each has
its own marker, line style and colour, and is shifted sideways by a few percent of N (the x axis is
logarithmic, so the shift is a constant factor), with hollow markers drawn over the lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .report import METRICS, SummaryRow, interval

__all__ = ["PLOTS", "shift", "write_plots"]

# file name, summary column, y label, title
PLOTS: tuple[tuple[str, str, str, str], ...] = (
    (
        "gini_vs_n.png",
        "gini_mean",
        "Gini coefficient of relay load (lower is more even)",
        "Relay load inequality",
    ),
    (
        "retrieval_gini_vs_n.png",
        "retrieval_gini_mean",
        "Gini coefficient of retrieval load (lower is more even)",
        "Retrieval load inequality",
    ),
    (
        "storage_gini_vs_n.png",
        "storage_gini_mean",
        "Gini coefficient of storage per node (lower is more even)",
        "Storage load inequality",
    ),
    ("hops_vs_n.png", "hops_mean", "mean hops per lookup", "Route length"),
    (
        "failed_vs_n.png",
        "failed_mean",
        "share of lookups stopping before the closest node",
        "Lookups that miss the closest node",
    ),
    (
        "retrieval_failed_vs_n.png",
        "retrieval_failed_mean",
        "share of retrievals no node on the route could serve",
        "Retrievals that fail (only under churn)",
    ),
    (
        "gap_po_vs_n.png",
        "gap_po_mean",
        "mean biggest-gap PO per node (higher is better)",
        "Biggest address gap",
    ),
)

_MARKERS = ("o", "s", "^", "D", "v", "P")
_STYLES = ("-", "--", "-.", ":")
_SHIFT = 0.07  # sideways shift between neighbouring series, in log2 units of N


def shift(k: int, series: int) -> float:
    """The factor by which series ``k`` of ``series`` is moved sideways (1.0 for the middle one)."""
    return float(2.0 ** (_SHIFT * (k - (series - 1) / 2)))


def _error_bars(rows: Sequence[SummaryRow], column: str) -> list[list[float]]:
    """Below and above each mean: its 95% interval clipped to what the quantity can be."""
    metric = next(m for m in METRICS if m.name == column)
    below, above = [], []
    for r in rows:
        bounds = interval(r, metric) or (r.means[column], r.means[column])
        below.append(r.means[column] - bounds[0])
        above.append(bounds[1] - r.means[column])
    return [below, above]


def write_plots(rows: Sequence[SummaryRow], out: Path, strategies: Sequence[str]) -> list[Path]:
    """Write the plots of ``PLOTS`` into ``out``; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    present = [s for s in strategies if any(r.strategy == s for r in rows)]
    for filename, column, ylabel, title in PLOTS:
        fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
        for k, strategy in enumerate(present):
            mine = sorted((r for r in rows if r.strategy == strategy), key=lambda r: r.nodes)
            xs = [r.nodes * shift(k, len(present)) for r in mine]
            ys = [r.means[column] for r in mine]
            errs = _error_bars(mine, column)
            ax.errorbar(
                xs,
                ys,
                yerr=errs,
                marker=_MARKERS[k % len(_MARKERS)],
                linestyle=_STYLES[k % len(_STYLES)],
                markerfacecolor="none",
                markersize=7,
                linewidth=1.4,
                capsize=3,
                label=strategy,
                zorder=3 + k,
            )
        ax.set_xscale("log", base=2)
        sizes = sorted({r.nodes for r in rows})
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.set_xlabel("network size N (nodes; series shifted sideways to stay visible)")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title} (mean over runs, 95% interval)")
        ax.grid(True, alpha=0.3)
        ax.legend(title="strategy")
        fig.tight_layout()
        path = out / filename
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    return written
