"""Where running local swarms are recorded, so client commands find them without `--data-dir`.

`swarm up` writes a small record naming its data directory into the runtime directory
(`$XDG_RUNTIME_DIR/swarm`, else `~/.swarm/run`) and removes it when it stops. A record whose
`swarm up` process is gone (it was killed) is stale: it is ignored and removed when read.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from swarm.cli.localswarm import default_data_dir
from swarm.node_info import pid_alive

__all__ = ["RunningSwarm", "find_data_dir", "record_running", "running_swarms", "runtime_dir"]


@dataclass(frozen=True)
class RunningSwarm:
    """One `swarm up` process and the data directory of its nodes."""

    pid: int
    data_dir: Path
    nodes: int


def runtime_dir() -> Path:
    """The directory holding the records: $XDG_RUNTIME_DIR/swarm, else ~/.swarm/run."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "swarm"
    return Path.home() / ".swarm" / "run"


@contextlib.contextmanager
def record_running(data_dir: Path, nodes: int) -> Iterator[Path | None]:
    """Record this process as running the swarm in `data_dir` for the duration of the block;
    yields the record's path (None where none could be written: commands then need --data-dir)."""
    directory = runtime_dir()
    path: Path | None = directory / f"up-{os.getpid()}.json"
    doc = {"pid": os.getpid(), "data_dir": str(Path(data_dir).resolve()), "nodes": nodes, "at": time.time()}
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f"up-{os.getpid()}.tmp"
        tmp.write_text(json.dumps(doc) + "\n")
        tmp.replace(directory / f"up-{os.getpid()}.json")
    except OSError:
        path = None
    try:
        yield path
    finally:
        if path is not None:
            path.unlink(missing_ok=True)


def running_swarms() -> list[RunningSwarm]:
    """The live recorded swarms (stale records are removed on the way)."""
    found = []
    for path in sorted(runtime_dir().glob("up-*.json")):
        try:
            doc = json.loads(path.read_text())
            record = RunningSwarm(int(doc["pid"]), Path(doc["data_dir"]), int(doc["nodes"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if pid_alive(record.pid):
            found.append(record)
        else:
            path.unlink(missing_ok=True)
    return found


def find_data_dir() -> tuple[Path, str]:
    """The data directory a client command means when given none, and a clause saying how it
    was found (for messages).

    The one running swarm recorded; among several, the one in the default directory; with none
    running, the default directory. Raises ValueError naming them when several run elsewhere.
    """
    default = default_data_dir()
    running = running_swarms()
    if len(running) == 1:
        return running[0].data_dir, f"the directory of the running `swarm up` (pid {running[0].pid})"
    if not running:
        return default, f"the default directory, as no running `swarm up` is recorded in {runtime_dir()}"
    for record in running:
        if record.data_dir == default.resolve():
            return record.data_dir, f"the default directory, of the running `swarm up` (pid {record.pid})"
    dirs = ", ".join(str(r.data_dir) for r in running)
    raise ValueError(f"{len(running)} local swarms are running ({dirs}): choose one with --data-dir")
