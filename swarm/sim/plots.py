"""PNG plots of a summary: one metric against the network size, one line per strategy, 95% error bars."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from .report import SummaryRow

__all__ = ["PLOTS", "write_plots"]

# file name, summary column, y label, title
PLOTS: tuple[tuple[str, str, str, str], ...] = (
    (
        "gini_vs_n.png",
        "gini_mean",
        "Gini coefficient of relay load (lower is more even)",
        "Relay load inequality",
    ),
    ("hops_vs_n.png", "hops_mean", "mean hops per lookup", "Route length"),
    (
        "gap_po_vs_n.png",
        "gap_po_mean",
        "mean biggest-gap PO per node (higher is better)",
        "Biggest address gap",
    ),
)


def write_plots(rows: Sequence[SummaryRow], out: Path, strategies: Sequence[str]) -> list[Path]:
    """Write the plots of ``PLOTS`` into ``out``; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for filename, column, ylabel, title in PLOTS:
        fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
        for strategy in strategies:
            mine = sorted((r for r in rows if r.strategy == strategy), key=lambda r: r.nodes)
            if not mine:
                continue
            xs = [r.nodes for r in mine]
            ys = [r.means[column] for r in mine]
            errs = [0.0 if math.isnan(r.halfwidths[column]) else r.halfwidths[column] for r in mine]
            ax.errorbar(xs, ys, yerr=errs, marker="o", capsize=3, label=strategy)
        ax.set_xscale("log", base=2)
        sizes = sorted({r.nodes for r in rows})
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.set_xlabel("network size N (nodes)")
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
