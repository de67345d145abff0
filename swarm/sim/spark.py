"""Running the grid on Spark: the session, the job (one task per group of grid keys), the Parquet tables.

The grid is built on the driver and spread over partitions with ``mapPartitions``; every task computes
its keys with :func:`swarm.sim.simulate.simulate`, whose randomness is seeded by the key alone, so the
numbers do not depend on the master, the partitioning or the order tasks run in.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
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
    "SparkUnavailable",
    "find_java",
    "node_schema",
    "run_grid",
    "run_schema",
    "start_context",
    "start_session",
    "under_spark_submit",
]

RUNS_TABLE = "runs.parquet"
NODES_TABLE = "nodes.parquet"
MIN_JAVA = 17

_QUIET_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""


class SparkUnavailable(Exception):
    """Spark cannot run here (no Java, an old Java, no pyspark): the message is one line for the user."""


def under_spark_submit() -> bool:
    """Whether this process was launched by ``spark-submit`` (the JVM exists and holds the config)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def find_java() -> str:
    """The ``java`` Spark will use (``$JAVA_HOME/bin/java``, else ``java`` on PATH), checked to be >= 17."""
    home = os.environ.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        if not os.access(java, os.X_OK):
            raise SparkUnavailable(
                f"JAVA_HOME is {home} but {java} is not an executable: Spark needs Java {MIN_JAVA}+;"
                " fix JAVA_HOME or unset it to use java on PATH"
            )
    else:
        found = shutil.which("java")
        if found is None:
            raise SparkUnavailable(
                f"Java not found: Spark needs Java {MIN_JAVA}+ (put java on PATH or set JAVA_HOME)"
            )
        java = found
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SparkUnavailable(f"cannot run {java} -version: {exc}") from None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if match:
        major = int(match.group(1))
        if major == 1 and match.group(2):  # "1.8.0_…" is Java 8
            major = int(match.group(2))
        if major < MIN_JAVA:
            raise SparkUnavailable(f"{java} is Java {major}; Spark needs Java {MIN_JAVA}+")
    return java


def _is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def start_session(
    master: str | None, *, app_name: str = "swarm-sim", log_path: Path | None = None
) -> SparkSession:
    """A quiet SparkSession (for the Parquet tables) over :func:`start_context`."""
    from pyspark.sql import SparkSession

    return SparkSession(start_context(master, app_name=app_name, log_path=log_path))


def start_context(
    master: str | None, *, app_name: str = "swarm-sim", log_path: Path | None = None
) -> SparkContext:
    """A quiet SparkContext: ``master`` (None: ``local[*]``, or whatever ``spark-submit`` was given).

    The grid needs only this; the SQL session on top of it (about 2 s more here) only writes the tables.

    Logs at ERROR only, no console progress bar, no web UI. When this process starts the JVM itself and
    ``log_path`` is given, the JVM's stderr (its log and the Python workers' stderr) goes to that file
    instead of the terminal; the JVM then lives as long as this process and later sessions reuse it.
    Raises :class:`SparkUnavailable` with one line when Java or pyspark is missing. On a non-local master
    the simulation code (``pot``, ``kademlia``, ``swarm``) is shipped to the executors as a zip.
    """
    submitted = under_spark_submit()
    if not submitted:
        find_java()
    try:
        from pyspark import SparkConf, SparkContext
        from pyspark.java_gateway import launch_gateway
    except ImportError as exc:
        raise SparkUnavailable(f"pyspark is not installed ({exc}); pip install pyspark") from None
    conf = SparkConf().setAppName(app_name)
    chosen = master or ("" if submitted else "local[*]")
    if chosen:
        conf.setMaster(chosen)
    conf.set("spark.ui.enabled", "false")
    conf.set("spark.ui.showConsoleProgress", "false")
    conf.set("spark.sql.session.timeZone", "UTC")
    gateway = None
    if not submitted and SparkContext._gateway is None:
        # this process starts the driver JVM: make it quiet from its first line
        conf_dir = Path(tempfile.mkdtemp(prefix="swarm-sim-"))
        log4j = conf_dir / "log4j2.properties"
        log4j.write_text(_QUIET_LOG4J2)
        # C1 only: the driver JVM just schedules and writes small tables, so a fast start-up and warm-up
        # matter more than peak JIT speed (a measured 1-2 s less start-up, first job and first write each)
        conf.set(
            "spark.driver.extraJavaOptions",
            f"-Dlog4j2.configurationFile={log4j.as_uri()} -XX:TieredStopAtLevel=1",
        )
        if _is_local(chosen):
            # local workers run this interpreter, which has this package installed
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        try:
            if log_path is None:
                gateway = launch_gateway(conf)
            else:
                with log_path.open("ab") as log:  # the child keeps its own copy of the descriptor
                    gateway = launch_gateway(conf, popen_kwargs={"stderr": log, "stdout": log})
        except Exception as exc:
            reason = _jvm_error(log_path) or str(exc)
            where = f" (see {log_path})" if log_path is not None else ""
            raise SparkUnavailable(f"cannot start Spark on master {chosen}: {reason}{where}") from None
    try:
        sc = SparkContext.getOrCreate(conf) if gateway is None else SparkContext(conf=conf, gateway=gateway)
    except Exception as exc:  # a bad master URL or a failed start surfaces as various py4j errors
        java = getattr(exc, "java_exception", None)  # py4j's Py4JJavaError: the JVM's own message
        text = str(java.toString()) if java is not None else str(exc)
        first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        raise SparkUnavailable(
            f"cannot start Spark on master {chosen or '(from spark-submit)'}: {first}"
        ) from None
    sc.setLogLevel("ERROR")
    if not _is_local(str(sc.master)):
        sc.addPyFile(str(_code_zip()))
    return sc


def _jvm_error(log_path: Path | None) -> str | None:
    """The JVM's own reason for dying, from its log: the message of the last ``Exception in thread``."""
    if log_path is None or not log_path.is_file():
        return None
    found = None
    for line in log_path.read_text(errors="replace").splitlines():
        if line.startswith("Exception in thread"):
            found = line.split(": ", 1)[-1].strip()
    return found


def _code_zip() -> Path:
    """A zip of the packages the tasks import, for ``addPyFile`` on a cluster."""
    import kademlia
    import pot
    import swarm

    target = Path(tempfile.mkdtemp(prefix="swarm-sim-code-")) / "swarm_sim_code.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for module in (pot, kademlia, swarm):
            root = Path(module.__file__ or "").parent
            for path in sorted(root.rglob("*.py")):
                zf.write(path, path.relative_to(root.parent).as_posix())
    return target


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
