"""Running the grid on Spark: the job (one task per group of grid keys), the Parquet tables.

The grid is built on the driver and spread over partitions with ``mapPartitions``; every task computes
its keys with :func:`swarm.sim.simulate.simulate`, whose randomness is seeded by the key alone, so the
numbers do not depend on the master, the partitioning or the order tasks run in.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .grid import GridKey, SimParams
from .simulate import NODE_COLUMNS, RUN_COLUMNS, SimResult, simulate

if TYPE_CHECKING:
    from pyspark import Accumulator, SparkContext
    from pyspark.rdd import RDD
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "NODES_TABLE",
    "RUNS_TABLE",
    "GridOutcome",
    "node_schema",
    "run_grid",
    "run_schema",
]

RUNS_TABLE = "runs.parquet"
NODES_TABLE = "nodes.parquet"


def _struct(columns: Sequence[tuple[str, str]]) -> StructType:
    from pyspark.sql.types import DoubleType, IntegerType, StringType, StructField, StructType

    types = {"string": StringType(), "int": IntegerType(), "double": DoubleType()}
    return StructType([StructField(name, types[kind], nullable=False) for name, kind in columns])


def run_schema() -> StructType:
    """The schema of the per-run table (see ``swarm.sim.simulate.RUN_COLUMNS``)."""
    return _struct(RUN_COLUMNS)


def node_schema() -> StructType:
    """The schema of the per-node table (see ``swarm.sim.simulate.NODE_COLUMNS``)."""
    return _struct(NODE_COLUMNS)


def _compute_partition(
    params: SimParams, done: Accumulator[int], keys: Iterable[GridKey]
) -> Iterator[SimResult]:
    for key in keys:
        result = simulate(key, params)
        done.add(1)
        yield result


def _run_row(result: SimResult) -> tuple[Any, ...]:
    return result.run


def _node_rows(result: SimResult) -> list[tuple[Any, ...]]:
    return result.nodes


class GridOutcome:
    """The computed grid: the per-run rows on the driver (grid order) and the per-node rows as an RDD."""

    def __init__(self, runs: list[tuple[Any, ...]], results: RDD[SimResult]) -> None:
        self.runs = runs
        self.results = results


def run_grid(
    sc: SparkContext,
    keys: Sequence[GridKey],
    params: SimParams,
    *,
    partitions: int = 0,
    progress: Callable[[int, int], None] | None = None,
    poll: float = 0.5,
) -> GridOutcome:
    """Compute every key on Spark (``partitions`` 0: one per key), reporting ``progress(done, total)``.

    The results stay cached in Spark for :func:`write_tables`; call ``outcome.results.unpersist()`` after.
    """
    from pyspark import StorageLevel

    slices = len(keys) if partitions <= 0 else min(partitions, len(keys))
    done = sc.accumulator(0)
    results = (
        sc.parallelize(list(keys), slices)
        .mapPartitions(partial(_compute_partition, params, done))
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    box: dict[str, Any] = {}

    def job() -> None:
        try:
            box["runs"] = results.map(_run_row).collect()
        except BaseException as exc:  # re-raised on the driver thread below
            box["error"] = exc

    worker = threading.Thread(target=job, name="swarm-sim-grid", daemon=True)
    worker.start()
    total = len(keys)
    last = -1
    try:
        while worker.is_alive():
            worker.join(poll)
            if progress is not None and done.value != last:
                last = done.value
                progress(min(last, total), total)
    except KeyboardInterrupt:
        sc.cancelAllJobs()
        worker.join(30)
        raise
    if "error" in box:
        raise box["error"]
    if progress is not None:
        progress(total, total)
    return GridOutcome(list(box["runs"]), results)


def write_tables(
    spark: SparkSession, outcome: GridOutcome, out: Path, order: Callable[[tuple[Any, ...]], Any]
) -> None:
    """Write ``runs.parquet`` (one file, rows sorted by ``order``) and ``nodes.parquet`` (by strategy)."""
    sc = spark.sparkContext
    runs = sorted(outcome.runs, key=order)
    runs_df: DataFrame = spark.createDataFrame(sc.parallelize(runs, 1), run_schema())
    runs_df.write.mode("overwrite").parquet(str(out / RUNS_TABLE))
    nodes_df: DataFrame = spark.createDataFrame(outcome.results.flatMap(_node_rows), node_schema())
    strategies = len({row[0] for row in runs})
    (
        nodes_df.repartition(strategies, "strategy")
        .sortWithinPartitions("nodes", "run", "node")
        .write.mode("overwrite")
        .partitionBy("strategy")
        .parquet(str(out / NODES_TABLE))
    )
