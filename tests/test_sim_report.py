"""swarm.sim summaries: the t interval, grouping and the CSV / Markdown forms; the plots."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from swarm.sim.plots import PLOTS, shift, write_plots
from swarm.sim.report import (
    METRICS,
    csv_header,
    markdown_table,
    mean_interval,
    summarise,
    t_quantile,
    write_csv,
)
from swarm.sim.simulate import RUN_COLUMNS

NAMES = [c for c, _ in RUN_COLUMNS]


@pytest.mark.parametrize(
    ("df", "expected"),
    [
        (1, 12.706204736),
        (2, 4.302652730),
        (3, 3.182446305),
        (4, 2.776445105),
        (9, 2.262157163),
        (19, 2.093024054),
        (30, 2.042272456),
        (100, 1.983971519),
    ],
)
def test_t_quantile_matches_tables(df: int, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-8)


def test_t_quantile_median_and_bad_input() -> None:
    assert t_quantile(0.5, 7) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError):
        t_quantile(0.975, 0)
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)


def test_mean_interval() -> None:
    m, h = mean_interval([1.0, 2.0, 3.0])  # sd 1, t(0.975, 2) = 4.3027
    assert m == 2.0
    assert h == pytest.approx(4.302652730 / math.sqrt(3), abs=1e-9)
    assert mean_interval([5.0, 5.0]) == (5.0, 0.0)
    m, h = mean_interval([4.0])
    assert m == 4.0 and math.isnan(h)


def run_row(strategy: str, nodes: int, run: int, **values: float) -> tuple[object, ...]:
    row: dict[str, object] = {name: 0 for name in NAMES}
    row.update(strategy=strategy, nodes=nodes, run=run, **values)
    return tuple(row[n] for n in NAMES)


ROWS = [
    run_row("gap", 64, 0, gini=0.2, hops_mean=2.0, gap_po_mean=3.0, failed=0.1),
    run_row("gap", 64, 1, gini=0.4, hops_mean=3.0, gap_po_mean=2.0, failed=0.3),
    run_row("first", 64, 0, gini=0.5, hops_mean=4.0, gap_po_mean=1.0, failed=0.5),
    run_row("first", 64, 1, gini=0.7, hops_mean=4.0, gap_po_mean=1.0, failed=0.5),
    run_row("first", 16, 0, gini=0.9, hops_mean=1.0, gap_po_mean=1.0, failed=0.0),
]


def test_summarise_groups_by_size_then_given_strategy_order() -> None:
    rows = summarise(ROWS, ["first", "gap"])
    assert [(r.nodes, r.strategy, r.runs) for r in rows] == [
        (16, "first", 1),
        (64, "first", 2),
        (64, "gap", 2),
    ]
    gap = rows[2]
    assert gap.means["gini_mean"] == pytest.approx(0.3)
    assert gap.means["hops_mean"] == 2.5
    assert gap.means["gap_po_mean"] == 2.5
    assert gap.means["failed_mean"] == pytest.approx(0.2)
    assert gap.halfwidths["hops_mean"] == pytest.approx(12.706204736 * math.sqrt(0.5) / math.sqrt(2))
    assert rows[1].halfwidths["hops_mean"] == 0.0
    assert math.isnan(rows[0].halfwidths["gini_mean"])


def test_csv_has_the_required_columns_and_the_means(tmp_path: Path) -> None:
    path = tmp_path / "summary.csv"
    write_csv(summarise(ROWS, ["first", "gap"]), path)
    with path.open() as f:
        rows = list(csv.DictReader(f))
    required = [
        "strategy",
        "nodes",
        "runs",
        "gap_po_mean",
        "temperature_mean",
        "gini_mean",
        "max_over_mean",
        "hops_mean",
        "hops_p95",
        "failed_mean",
    ]
    assert list(rows[0])[:3] == required[:3]
    assert set(required) <= set(rows[0])
    assert list(rows[0]) == csv_header()
    gap = rows[2]
    assert (gap["strategy"], gap["nodes"], gap["runs"]) == ("gap", "64", "2")
    assert float(gap["gini_mean"]) == pytest.approx(0.3)
    assert rows[0]["gini_mean_ci95"] == ""  # one run: no interval


def test_markdown_table_shape() -> None:
    text = markdown_table(summarise(ROWS, ["first", "gap"]))
    lines = text.strip().splitlines()
    assert len(lines) == 2 + 3
    assert all(line.startswith("| ") or line.startswith("|-") for line in lines)
    assert all(line.count("|") == len(METRICS) + 4 for line in lines)
    assert "| 64 | gap | 2 | 2.50 [0.00, " in text  # a PO is never below 0: the interval is clipped
    assert "± n/a" in lines[2]  # the single-run row


def test_compact_table_has_the_main_columns_means_only() -> None:
    text = markdown_table(summarise(ROWS, ["first", "gap"]), compact=True)
    lines = text.strip().splitlines()
    compact = [m for m in METRICS if m.compact]
    assert 5 <= len(compact) < len(METRICS)
    assert all(line.count("|") == len(compact) + 4 for line in lines)
    assert lines[0] == "| N | strategy | runs | " + " | ".join(m.header for m in compact) + " |"
    assert "±" not in text
    assert "failed ↓" in lines[0] and "| 64 | gap | 2 | 2.50 |" in text
    assert all(len(line) <= 160 for line in lines)  # fits a wide terminal without wrapping


def test_plots_are_pngs(tmp_path: Path) -> None:
    written = write_plots(summarise(ROWS, ["first", "gap"]), tmp_path, ["first", "gap"])
    assert [p.name for p in written] == [name for name, *_ in PLOTS]
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert p.stat().st_size > 5000


def test_series_are_shifted_apart_and_centred() -> None:
    for count in (1, 2, 3, 4):
        factors = [shift(k, count) for k in range(count)]
        assert factors == sorted(factors) and len(set(factors)) == count  # distinct x for every series
        assert factors[0] * factors[-1] == pytest.approx(1.0)  # symmetric around N
        assert all(0.85 < f < 1.15 for f in factors)  # close enough to read N off the axis


def test_intervals_are_clipped_to_what_a_quantity_can_be() -> None:
    from swarm.sim.report import SummaryRow, cell, interval

    by_name = {m.name: m for m in METRICS}
    gini, failed, hops = by_name["gini_mean"], by_name["failed_mean"], by_name["hops_mean"]
    means, halves = dict.fromkeys(by_name, 0.0), dict.fromkeys(by_name, 0.0)
    means.update(gini_mean=0.05, failed_mean=0.975, hops_mean=0.5)
    halves.update(gini_mean=0.635, failed_mean=0.3, hops_mean=0.9)  # two runs give wide intervals
    row = SummaryRow("gap", 64, 2, means, halves)
    assert interval(row, gini) == (0.0, pytest.approx(0.685))  # a Gini is never below 0
    assert interval(row, failed) == (pytest.approx(0.675), 1.0)  # a share never above 1
    assert interval(row, hops) == (0.0, pytest.approx(1.4))  # a count never below 0
    assert cell(row, gini) == "0.050 [0.000, 0.685]" and cell(row, failed) == "0.975 [0.675, 1.000]"
    halves.update(gini_mean=0.01)
    assert cell(SummaryRow("gap", 64, 2, means, halves), gini) == "0.050 ± 0.010"  # inside: as it is
    assert all(m.upper == 1.0 for m in METRICS if "gini" in m.name or "failed" in m.name)
