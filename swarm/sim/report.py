"""Summaries of the per-run rows: means and 95% intervals per (strategy, N), as CSV and Markdown.

The interval is the Student t interval of the mean over runs: ``mean ± t(0.975, runs - 1) * sd / sqrt(runs)``
with the sample standard deviation; with a single run it is undefined (NaN, shown as "n/a").
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .simulate import RUN_COLUMNS

__all__ = [
    "FAILED_NOTE",
    "METRICS",
    "Metric",
    "SummaryRow",
    "cell",
    "interval",
    "markdown_table",
    "mean_interval",
    "summarise",
    "t_quantile",
    "write_csv",
]


@dataclass(frozen=True)
class Metric:
    """A summary column: the per-run column it averages, its Markdown header, number format, and whether
    the compact terminal table shows it."""

    name: str  # summary column
    source: str  # per-run column
    header: str
    digits: int
    compact: bool = False
    lower: float = 0.0  # what the quantity can be: intervals are clipped to [lower, upper]
    upper: float | None = None


METRICS: tuple[Metric, ...] = (
    Metric("gap_po_mean", "gap_po_mean", "gap PO ↑", 2, compact=True),
    Metric("gap_po_worst", "gap_po_worst", "worst gap PO ↑", 2),
    Metric("temperature_mean", "temperature_mean", "temperature ↓", 4),
    Metric("gini_mean", "gini", "relay Gini ↓", 3, compact=True, upper=1.0),
    Metric("max_over_mean", "max_over_mean", "relay max/mean ↓", 2),
    Metric("retrieval_gini_mean", "retrieval_gini", "retrieval Gini ↓", 3, compact=True, upper=1.0),
    Metric("retrieval_max_over_mean", "retrieval_max_over_mean", "retrieval max/mean ↓", 2),
    Metric("storage_gini_mean", "storage_gini", "storage Gini ↓", 3, compact=True, upper=1.0),
    Metric("replication_mean", "replication_mean", "replicas", 2),
    Metric("replication_min", "replication_min", "min replicas", 2),
    Metric("hops_mean", "hops_mean", "hops ↓", 3, compact=True),
    Metric("hops_p95", "hops_p95", "hops p95 ↓", 2),
    Metric("failed_mean", "failed", "failed ↓", 3, compact=True, upper=1.0),
    Metric("retrieval_hops_mean", "retrieval_hops_mean", "retrieval hops ↓", 3),
    Metric("retrieval_failed_mean", "retrieval_failed", "not retrieved ↓", 4, compact=True, upper=1.0),
    Metric("connections_mean", "connections_mean", "connections", 2, compact=True),
    Metric("connections_max", "connections_max", "max connections", 1),
    Metric("depth_mean", "depth_mean", "depth", 2),
    Metric("known_mean", "known_mean", "known", 1),
    Metric("rounds_mean", "rounds", "rounds to settle", 1),
    Metric("dial_failures_mean", "dial_failures", "dial failures", 1),
)

FAILED_NOTE = (
    "failed: share of lookups that stopped before the node closest to the target (greedy routing met no "
    "closer peer); the chunk is still retrieved when a node on the route stores it, see not retrieved."
)
_RUN_INDEX = {name: i for i, (name, _) in enumerate(RUN_COLUMNS)}


@dataclass(frozen=True)
class SummaryRow:
    strategy: str
    nodes: int
    runs: int
    means: dict[str, float]
    halfwidths: dict[str, float]


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (``0.5 <= p < 1``) of Student's t with ``df >= 1`` degrees of freedom.

    Bisection on the closed-form CDF for integer degrees of freedom; accurate to ~1e-12.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if not 0.5 <= p < 1:
        raise ValueError(f"p must be in [0.5, 1), got {p}")
    lo, hi = 0.0, 1.0
    while _t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if _t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-13:
            break
    return (lo + hi) / 2


def _t_cdf(t: float, df: int) -> float:
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    s = math.sin(theta)
    total, term = 1.0, 1.0
    if df % 2 == 0:
        for k in range(1, (df - 2) // 2 + 1):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        return 0.5 + 0.5 * s * total
    if df == 1:
        return 0.5 + theta / math.pi
    for k in range(1, (df - 3) // 2 + 1):
        term *= c2 * (2 * k) / (2 * k + 1)
        total += term
    return 0.5 + (theta + s * math.cos(theta) * total) / math.pi


def mean_interval(values: Sequence[float]) -> tuple[float, float]:
    """``(mean, half-width of the 95% t interval)``; the half-width is NaN for fewer than 2 values."""
    n = len(values)
    if n == 0:
        raise ValueError("no values")
    m = sum(values) / n
    if n < 2:
        return m, math.nan
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    return m, t_quantile(0.975, n - 1) * sd / math.sqrt(n)


def summarise(runs: Sequence[Sequence[Any]], strategies: Sequence[str]) -> list[SummaryRow]:
    """One row per (N, strategy) of the per-run rows (``RUN_COLUMNS`` tuples): N ascending, then strategy
    in the order of ``strategies``."""
    groups: dict[tuple[str, int], list[Sequence[Any]]] = {}
    for row in runs:
        groups.setdefault((row[_RUN_INDEX["strategy"]], row[_RUN_INDEX["nodes"]]), []).append(row)
    rank = {s: i for i, s in enumerate(strategies)}
    out = []
    for (strategy, nodes), rows in sorted(
        groups.items(), key=lambda kv: (kv[0][1], rank.get(kv[0][0], len(rank)), kv[0][0])
    ):
        rows = sorted(rows, key=lambda r: r[_RUN_INDEX["run"]])  # a fixed summation order
        means, halves = {}, {}
        for metric in METRICS:
            m, h = mean_interval([float(r[_RUN_INDEX[metric.source]]) for r in rows])
            means[metric.name] = m
            halves[metric.name] = h
        out.append(SummaryRow(strategy, nodes, len(rows), means, halves))
    return out


def csv_header() -> list[str]:
    return [
        "strategy",
        "nodes",
        "runs",
        *(m.name for m in METRICS),
        *(f"{m.name}_ci95" for m in METRICS),
    ]


def write_csv(rows: Sequence[SummaryRow], path: Path) -> None:
    """``summary.csv``: the means, then the 95% half-widths (``*_ci95``, empty when undefined)."""
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(csv_header())
        for r in rows:
            w.writerow(
                [
                    r.strategy,
                    r.nodes,
                    r.runs,
                    *(repr(r.means[m.name]) for m in METRICS),
                    *(
                        "" if math.isnan(r.halfwidths[m.name]) else repr(r.halfwidths[m.name])
                        for m in METRICS
                    ),
                ]
            )


def interval(row: SummaryRow, metric: Metric) -> tuple[float, float] | None:
    """The 95% interval of a metric, clipped to what the quantity can be (a Gini or a share in
    [0, 1], a count at least 0); None with fewer than 2 runs."""
    mean, half = row.means[metric.name], row.halfwidths[metric.name]
    if math.isnan(half):
        return None
    low, high = max(metric.lower, mean - half), mean + half
    return low, high if metric.upper is None else min(metric.upper, high)


def cell(row: SummaryRow, metric: Metric) -> str:
    """``mean ± half-width``, or ``mean [low, high]`` where the interval was clipped."""
    mean, half, digits = row.means[metric.name], row.halfwidths[metric.name], metric.digits
    bounds = interval(row, metric)
    if bounds is None:
        return f"{mean:.{digits}f} ± n/a"
    if bounds == (mean - half, mean + half):
        return f"{mean:.{digits}f} ± {half:.{digits}f}"
    return f"{mean:.{digits}f} [{bounds[0]:.{digits}f}, {bounds[1]:.{digits}f}]"


def markdown_table(rows: Sequence[SummaryRow], *, compact: bool = False) -> str:
    """A Markdown table per (N, strategy): every metric as ``mean ± 95% half-width`` over the runs; or,
    ``compact``, only the main metrics' means (fits a terminal)."""
    metrics = [m for m in METRICS if m.compact] if compact else list(METRICS)
    headers = ["N", "strategy", "runs", *(m.header for m in metrics)]
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---:" if i != 1 else ":---" for i in range(len(headers))) + "|",
    ]
    for r in rows:
        if compact:
            values = [f"{r.means[m.name]:.{m.digits}f}" for m in metrics]
        else:
            values = [cell(r, m) for m in metrics]
        lines.append("| " + " | ".join([str(r.nodes), r.strategy, str(r.runs), *values]) + " |")
    return "\n".join(lines) + "\n"
