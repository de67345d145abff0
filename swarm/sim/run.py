"""One ``swarm sim`` run end to end: Spark job, Parquet tables, summary CSV/Markdown, plots, run.json."""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .grid import SimParams, make_grid
from .plots import write_plots
from .report import FAILED_NOTE, SummaryRow, markdown_table, summarise, write_csv
from .spark import NODES_TABLE, RUNS_TABLE, run_grid, write_tables
from .sparkstart import start_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SEEDING", "SimReport", "run_simulation"]

SEEDING = (
    "per network (nodes, run): overlays[i] = sha256('swarm-sim/overlay/{seed}/{nodes}/{run}/{i}') (joiners "
    "continue the indices); known sets, churn (who leaves), gossip choices and lookups from random.Random "
    "seeded with the first 8 bytes of sha256('swarm-sim/known|churn|gossip|lookups/{seed}/{nodes}/{run}'); "
    "the strategy is not part of any seed, so all strategies face the same nodes, churn and lookups"
)


@dataclass
class SimReport:
    """What a run produced."""

    out: Path
    summary: list[SummaryRow]
    markdown: str
    master: str
    seconds: float
    grid_seconds: float
    files: list[Path] = field(default_factory=list)


def _versions() -> dict[str, str]:
    import pyspark

    from swarm import __version__

    return {"python": platform.python_version(), "pyspark": pyspark.__version__, "swarm": __version__}


def _java_version(spark: SparkSession) -> str | None:
    try:
        return str(spark.sparkContext._jvm.System.getProperty("java.version"))  # type: ignore[union-attr]
    except Exception:  # not worth failing a finished run for
        return None


def _spark_info(session: SparkSession, master: str | None, partitions: int) -> dict[str, Any]:
    """Where the grid ran, for run.json."""
    sc = session.sparkContext
    return {
        "master": sc.master,
        "requested_master": master,
        "default_parallelism": sc.defaultParallelism,
        "partitions": partitions,
        "spark_version": sc.version,
        "java_version": _java_version(session),
    }


def _write_summary(summary: list[SummaryRow], out: Path) -> str:
    """summary.csv and summary.md (every column, with intervals); returns the markdown table."""
    markdown = markdown_table(summary)
    write_csv(summary, out / "summary.csv")
    (out / "summary.md").write_text(
        "# swarm sim summary\n\n"
        "Mean ± half-width of the 95% Student t interval over runs, per network size N and strategy; "
        "where that interval would leave what the quantity can be (a Gini or a share outside [0, 1], "
        "a count below 0) it is shown clipped, as mean [low, high]. "
        "↑: higher is better, ↓: lower is better.\n\n" + markdown + "\n" + FAILED_NOTE + "\n"
    )
    return markdown


def _write_run_json(
    out: Path,
    parameters: dict[str, Any],
    grid_keys: int,
    spark_info: dict[str, Any],
    timing: dict[str, Any],
    files: list[Path],
) -> Path:
    """Write run.json (what was run, how it was seeded, on what, how long, what it wrote)."""
    run_json: dict[str, Any] = {
        "command": "swarm sim",
        "argv": sys.argv,
        "parameters": parameters,
        "grid_keys": grid_keys,
        "seeding": SEEDING,
        "spark": spark_info,
        "versions": _versions(),
        "started": timing["started"],
        "seconds": round(timing["seconds"], 3),
        "grid_seconds": round(timing["grid_seconds"], 3),
        "files": [p.name for p in files],
    }
    path = out / "run.json"
    path.write_text(json.dumps(run_json, indent=2) + "\n")
    return path


def run_simulation(
    *,
    sizes: Sequence[int],
    runs: int,
    strategies: Sequence[str],
    params: SimParams,
    out: Path,
    master: str | None = None,
    partitions: int = 0,
    progress: Callable[[int, int], None] | None = None,
    spark: SparkSession | None = None,
) -> SimReport:
    """Run the grid and write every output file into ``out`` (created if missing).

    With ``spark`` given that session is used (and left running); otherwise a session on ``master`` is
    started (see :func:`swarm.sim.sparkstart.start_session`) and stopped at the end.
    """
    started_at = datetime.now(UTC)
    t0 = time.perf_counter()
    keys = make_grid(strategies, sizes, runs)
    out = out.resolve()  # executors do not share the driver's working directory
    out.mkdir(parents=True, exist_ok=True)
    own = spark is None
    session = start_session(master, log_path=out / "spark.log") if spark is None else spark
    try:
        sc = session.sparkContext
        t_grid = time.perf_counter()
        outcome = run_grid(sc, keys, params, partitions=partitions, progress=progress)
        grid_seconds = time.perf_counter() - t_grid
        rank = {s: i for i, s in enumerate(strategies)}
        write_tables(session, outcome, out, order=lambda r: (rank[r[0]], r[1], r[2]))
        outcome.results.unpersist()
        spark_info = _spark_info(
            session, master, len(keys) if partitions <= 0 else min(partitions, len(keys))
        )
    finally:
        if own:
            session.stop()
    summary = summarise(outcome.runs, strategies)
    markdown = _write_summary(summary, out)
    plots = write_plots(summary, out, strategies)
    seconds = time.perf_counter() - t0
    files = [out / RUNS_TABLE, out / NODES_TABLE, out / "summary.csv", out / "summary.md", *plots]
    parameters = {"nodes": sorted(set(sizes)), "runs": runs, "strategies": list(strategies)}
    parameters |= {**params.to_dict(), "partitions": partitions}
    timing = {
        "started": started_at.isoformat(timespec="seconds"),
        "seconds": seconds,
        "grid_seconds": grid_seconds,
    }
    files.append(_write_run_json(out, parameters, len(keys), spark_info, timing, files))
    return SimReport(out, summary, markdown, str(spark_info["master"]), seconds, grid_seconds, files)
