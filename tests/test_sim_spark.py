"""`swarm sim` on Spark local mode: files, Parquet schemas, determinism across runs and partitionings."""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from swarm.cli.sim import add_sim_parser
from swarm.sim.grid import GridKey, SimParams
from swarm.sim.plots import PLOTS
from swarm.sim.report import FAILED_NOTE, METRICS, mean_interval
from swarm.sim.simulate import NODE_COLUMNS, RUN_COLUMNS, simulate

pytestmark = pytest.mark.spark

SIZES = [16, 40]
RUNS = 2
STRATEGIES = ["first", "gap", "temperature", "hottest"]
PARAMS = SimParams(seed=3, saturation=2, lookups=100, churn=0.05, churn_rounds=4, turns=2, bootnodes=2)
ARGV = [
    "--nodes",
    "16,40",
    "--runs",
    "2",
    "--strategies",
    "first,gap,temperature,hottest",
    "--churn",
    "0.05",
    "--churn-rounds",
    "4",
    "--turns",
    "2",
    "--bootnodes",
    "2",
    "--saturation",
    "2",
    "--lookups",
    "100",
    "--seed",
    "3",
    "--no-progress",
]


@dataclass
class Tables:
    runs: list[tuple[Any, ...]]
    nodes: list[tuple[Any, ...]]
    runs_schema: list[tuple[str, str]]
    nodes_schema: list[tuple[str, str]]


@dataclass
class Outputs:
    cli: Path  # local[2], 3 partitions, through the command
    printed: str  # what the command printed on stdout
    one_per_key: Path  # local[1], one partition per key
    single: Path  # local[1], 1 partition
    tables: dict[Path, Tables]


def _read(spark: Any, out: Path) -> Tables:
    runs = spark.read.parquet(str(out / "runs.parquet"))
    nodes = spark.read.parquet(str(out / "nodes.parquet"))
    run_names = [c for c, _ in RUN_COLUMNS]
    node_names = [c for c, _ in NODE_COLUMNS]
    return Tables(
        runs=[tuple(r[c] for c in run_names) for r in runs.collect()],  # file order kept
        nodes=sorted(tuple(r[c] for c in node_names) for r in nodes.collect()),
        runs_schema=[(f.name, f.dataType.simpleString()) for f in runs.schema.fields],
        nodes_schema=[(f.name, f.dataType.simpleString()) for f in nodes.schema.fields],
    )


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outputs]:
    from swarm.sim.run import run_simulation
    from swarm.sim.sparkstart import start_session

    base = tmp_path_factory.mktemp("sim")
    # 1. the command, as a user runs it: it starts and stops its own session
    parser = argparse.ArgumentParser(prog="swarm")
    add_sim_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        ["sim", *ARGV, "--master", "local[2]", "--partitions", "3", "--out", str(base / "cli")]
    )
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert args.func(args) == 0
    # 2. the same grid on local[1] with other partitionings, and once with another seed
    spark = start_session("local[1]")
    try:
        assert spark.sparkContext.master == "local[1]"
        outs = {}
        for name, partitions, params in [
            ("one_per_key", 0, PARAMS),
            ("single", 1, PARAMS),
        ]:
            outs[name] = base / name
            run_simulation(
                sizes=SIZES,
                runs=RUNS,
                strategies=STRATEGIES,
                params=params,
                out=outs[name],
                partitions=partitions,
                spark=spark,
            )
        dirs = [base / "cli", *outs.values()]
        tables = {d: _read(spark, d) for d in dirs}
    finally:
        spark.stop()
    yield Outputs(base / "cli", printed.getvalue(), outs["one_per_key"], outs["single"], tables)


def test_files_are_written(outputs: Outputs) -> None:
    out = outputs.cli
    for name in ["summary.csv", "summary.md", "run.json", *(name for name, *_ in PLOTS)]:
        assert (out / name).is_file(), name
    for png in out.glob("*.png"):
        assert png.read_bytes()[:4] == b"\x89PNG"
    assert list((out / "runs.parquet").glob("part-*.parquet"))
    assert sorted(p.name for p in (out / "nodes.parquet").iterdir() if p.is_dir()) == [
        "strategy=first",
        "strategy=gap",
        "strategy=hottest",
        "strategy=temperature",
    ]
    run = json.loads((out / "run.json").read_text())
    assert run["parameters"] == {
        "nodes": SIZES,
        "runs": RUNS,
        "strategies": STRATEGIES,
        "seed": 3,
        "known": None,
        "saturation": 2,
        "lookups": 100,
        "neighbourhood_size": 3,
        "max_po": 31,
        "churn": 0.05,
        "churn_rounds": 4,
        "turns": 2,
        "bootnodes": 2,
        "gossip_bin_size": 2,
        "known_per_bin": 16,
        "forwarding": "closest",
        "storage": "area",
        "partitions": 3,
    }
    assert run["spark"]["master"] == "local[2]"
    assert run["spark"]["partitions"] == 3
    assert set(run["versions"]) == {"python", "pyspark", "swarm"}
    assert run["grid_keys"] == len(SIZES) * RUNS * len(STRATEGIES)


def test_the_command_prints_the_compact_table_and_explains_failed(outputs: Outputs) -> None:
    lines = outputs.printed.splitlines()
    compact = [m.header for m in METRICS if m.compact]
    assert lines[0].split()[:3] == ["N", "strategy", "runs"] and all(h in lines[0] for h in compact)
    assert not any(m.header in lines[0] for m in METRICS if not m.compact)  # not the full table
    rows = lines[2 : 2 + len(SIZES) * len(STRATEGIES)]  # a rich table: header, rule, rows
    assert [r.split()[:2] for r in rows] == [[str(n), s] for n in SIZES for s in STRATEGIES]
    assert "|" not in outputs.printed and "---" not in outputs.printed  # a terminal table, not Markdown
    assert "±" not in outputs.printed  # means only; the intervals are in summary.md
    assert FAILED_NOTE in lines and "summary.md" in outputs.printed
    plots = [line.strip() for line in lines[lines.index("plots:") + 1 :] if line.startswith("  ")]
    assert plots and all(Path(p).is_file() and p.endswith(".png") for p in plots)  # where the plots went
    assert all(len(line) <= 160 for line in lines[: 2 + len(rows)])  # no wrapping on a wide terminal
    md = (outputs.cli / "summary.md").read_text()
    assert "±" in md and all(m.header in md for m in METRICS) and FAILED_NOTE in md


def test_parquet_schemas_are_as_documented(outputs: Outputs) -> None:
    t = outputs.tables[outputs.cli]
    assert t.runs_schema == list(RUN_COLUMNS)
    # partition discovery puts the partition column last
    node_columns = [c for c in NODE_COLUMNS if c[0] != "strategy"] + [("strategy", "string")]
    assert t.nodes_schema == node_columns
    assert len(t.runs) == len(SIZES) * RUNS * len(STRATEGIES)
    # every node that was ever online: each churn event replaces round(0.05 n) nodes
    ever = sum(n + PARAMS.churn_rounds * round(PARAMS.churn * n) for n in SIZES)
    assert len(t.nodes) == ever * RUNS * len(STRATEGIES)


def test_runs_table_is_in_grid_order_and_equals_the_serial_computation(outputs: Outputs) -> None:
    runs = outputs.tables[outputs.cli].runs
    assert [(r[0], r[1], r[2]) for r in runs] == [
        (s, n, r) for s in STRATEGIES for n in SIZES for r in range(RUNS)
    ]
    serial = simulate(GridKey("gap", 40, 1), PARAMS)
    assert serial.run in runs
    nodes = outputs.tables[outputs.cli].nodes
    assert all(row in nodes for row in serial.nodes)


def test_same_seed_gives_identical_tables_whatever_the_partitioning_and_master(outputs: Outputs) -> None:
    reference = outputs.tables[outputs.one_per_key]  # local[1], one partition per key (12)
    single = outputs.tables[outputs.single]  # local[1], 1 partition
    cli = outputs.tables[outputs.cli]  # local[2], 3 partitions, through the command
    assert single.runs == reference.runs
    assert single.nodes == reference.nodes
    assert cli.runs == reference.runs
    assert cli.nodes == reference.nodes
    assert cli == single == reference  # schemas too
    assert (outputs.cli / "summary.csv").read_text() == (outputs.one_per_key / "summary.csv").read_text()


def test_the_tables_are_not_constants(outputs: Outputs) -> None:
    # guards the determinism test: networks differ between runs, and strategies differ on big enough ones
    runs = outputs.tables[outputs.cli].runs
    names = [c for c, _ in RUN_COLUMNS]
    assert len({r[3:] for r in runs}) > len(runs) // 2
    other = dataclasses.replace(PARAMS, seed=4)
    assert simulate(GridKey("gap", 40, 0), PARAMS).run != simulate(GridKey("gap", 40, 0), other).run
    assert any(r[names.index("churned")] > 0 for r in runs)  # the churn ran
    assert len({r[names.index("retrieval_gini")] for r in runs}) > 1


def test_summary_csv_is_the_mean_over_runs(outputs: Outputs) -> None:
    runs = outputs.tables[outputs.cli].runs
    names = [c for c, _ in RUN_COLUMNS]
    with (outputs.cli / "summary.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(SIZES) * len(STRATEGIES)
    for row in rows:
        mine = [r for r in runs if r[0] == row["strategy"] and r[1] == int(row["nodes"])]
        assert int(row["runs"]) == len(mine) == RUNS
        for summary, source in [
            ("gini_mean", "gini"),
            ("hops_mean", "hops_mean"),
            ("failed_mean", "failed"),
            ("gap_po_mean", "gap_po_mean"),
            ("hops_p95", "hops_p95"),
            ("temperature_mean", "temperature_mean"),
            ("max_over_mean", "max_over_mean"),
            ("retrieval_gini_mean", "retrieval_gini"),
            ("storage_gini_mean", "storage_gini"),
            ("retrieval_failed_mean", "retrieval_failed"),
        ]:
            values = [float(r[names.index(source)]) for r in mine]
            m, h = mean_interval(values)
            assert float(row[summary]) == pytest.approx(m, rel=1e-12)
            assert float(row[f"{summary}_ci95"]) == pytest.approx(h, rel=1e-12, abs=1e-15)
    md = (outputs.cli / "summary.md").read_text()
    assert md.count("\n| 40 | ") == len(STRATEGIES)


def test_a_bad_master_is_one_line(outputs: Outputs, tmp_path: Path) -> None:
    from swarm.cli.common import CliError

    parser = argparse.ArgumentParser(prog="swarm")
    add_sim_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["sim", "--master", "bogus://x", "--out", str(tmp_path), "--no-progress"])
    with pytest.raises(CliError, match=r"^cannot start Spark on master bogus://x: ") as exc:
        args.func(args)
    assert "\n" not in str(exc.value)
