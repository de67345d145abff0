"""Starting Spark for the simulation quietly: Java found and checked, the driver JVM's log at
ERROR only and into a file, no web UI or progress bar, the code shipped to a cluster's executors.
Missing Java or pyspark, or a master that does not start, is one `SparkUnavailable` line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from py4j.java_gateway import JavaGateway
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

__all__ = ["SparkUnavailable", "find_java", "start_context", "start_session", "under_spark_submit"]

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
    context = start_context(master, app_name=app_name, log_path=log_path)  # says if pyspark is missing
    from pyspark.sql import SparkSession

    return SparkSession(context)


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
    try:  # first: a node-only install (no sim extra) should hear about that, not about Java
        from pyspark import SparkConf, SparkContext
    except ImportError:
        raise SparkUnavailable(
            "pyspark is not installed: swarm sim needs the sim extra, pip install 'swarm-sync[sim]'"
        ) from None
    submitted = under_spark_submit()
    if not submitted:
        find_java()
    conf = SparkConf().setAppName(app_name)
    chosen = master or ("" if submitted else "local[*]")
    if chosen:
        conf.setMaster(chosen)
    conf.set("spark.ui.enabled", "false")
    conf.set("spark.ui.showConsoleProgress", "false")
    conf.set("spark.sql.session.timeZone", "UTC")
    starts_jvm = not submitted and SparkContext._gateway is None
    gateway = _launch_quiet_gateway(conf, chosen, log_path) if starts_jvm else None
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


def _launch_quiet_gateway(conf: SparkConf, master: str, log_path: Path | None) -> JavaGateway:
    """Start the driver JVM for ``conf``, quiet from its first line; its stderr and stdout into
    ``log_path`` if given. SparkUnavailable with the JVM's reason if it does not start."""
    from pyspark.java_gateway import launch_gateway

    conf_dir = Path(tempfile.mkdtemp(prefix="swarm-sim-"))
    log4j = conf_dir / "log4j2.properties"
    log4j.write_text(_QUIET_LOG4J2)
    # C1 only: the driver JVM just schedules and writes small tables, so a fast start-up and warm-up
    # matter more than peak JIT speed (a measured 1-2 s less start-up, first job and first write each)
    conf.set(
        "spark.driver.extraJavaOptions",
        f"-Dlog4j2.configurationFile={log4j.as_uri()} -XX:TieredStopAtLevel=1",
    )
    if _is_local(master):
        # local workers run this interpreter, which has this package installed
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    try:
        if log_path is None:
            return launch_gateway(conf)
        with log_path.open("ab") as log:  # the child keeps its own copy of the descriptor
            return launch_gateway(conf, popen_kwargs={"stderr": log, "stdout": log})
    except Exception as exc:
        reason = _jvm_error(log_path) or str(exc)
        where = f" (see {log_path})" if log_path is not None else ""
        raise SparkUnavailable(f"cannot start Spark on master {master}: {reason}{where}") from None


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
