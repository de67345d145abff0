"""Start-up of a syncing node: from spawning it to its first dial, first chunks and all chunks.

Preloads ``--chunks`` chunks into node A's data directory and starts A (as `benches.sync` does),
then spawns node B with ``--peer A`` ``--runs`` times, each with a fresh data directory, and reads
the milestones B's process reaches (`benches/startup_node.py`, which runs the real `swarm node`
and prints each milestone once: seconds since the spawn, and B's CPU seconds then):

- ``imported``: the command line and `swarm.node` imported;
- ``dial`` / ``connected``: the first dial begins / its handshake is done;
- ``first_chunks``: the first synced chunks entered B's store;
- ``api``: B's API answers (node.json written);
- ``all_stored``: B stored every chunk (the end of `benches.sync`'s headline ``sync_s``, which
  is seen by polling the API; this is seen inside B, without polling);
- ``cpu_b_s``: B's own CPU seconds at ``all_stored`` (its verifier worker not counted).

`benches.sync` sees B's first chunk only through B's API, so its ``first_chunk_s`` is no
earlier than the API's time: this bench says when the chunks really came. ``--tree DIR``
(repeatable) runs B from each source tree in turn, every run (``PYTHONPATH=DIR``): alternated
before/after comparisons against one A, on the same minutes' load. Prints one JSON line: per
tree the median of each milestone, and every run's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benches.sync import interrupt, load_average, make_chunks
from swarm.testing import NodeProcess, preload

PROBE = Path(__file__).with_name("startup_node.py")
MILESTONES = ("imported", "dial", "connected", "first chunks", "api", "all stored")


def run_b(
    tree: str, data_dir: Path, upstream: tuple[str, int], chunks: int, timeout: float
) -> dict[str, float]:
    """Spawn B from source ``tree`` against ``upstream``; its milestones (s since spawn), CPU."""
    host, port = upstream
    cmd = [sys.executable, str(PROBE), "node", "--data-dir", str(data_dir), "--port", "0", "--api-port", "0"]
    cmd += ["--peer", f"{host}:{port}"]
    env = {**os.environ, "PYTHONPATH": tree, "STARTUP_CHUNKS": str(chunks), "STARTUP_T0": repr(time.time())}
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    marks: dict[str, tuple[float, float]] = {}
    deadline = time.monotonic() + timeout
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("MARK "):
                _, seconds, cpu, name = line.rstrip("\n").split(" ", 3)
                marks[name] = (float(seconds), float(cpu))
                if name == "all stored":
                    break
            if time.monotonic() > deadline:
                break
    finally:
        interrupt(proc, 15)
    missing = [name for name in MILESTONES if name not in marks]
    if missing:
        raise RuntimeError(f"B from {tree} did not reach {missing}; see {data_dir}")
    row = {name.replace(" ", "_"): round(marks[name][0], 3) for name in MILESTONES}
    row["cpu_b_s"] = round(marks["all stored"][1], 3)
    return row


def main() -> None:
    os.environ.setdefault("SWARM_LOG_LEVEL", "INFO")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--chunks", type=int, default=20_000, help="chunks preloaded into A (default 20000)")
    parser.add_argument("--runs", type=int, default=5, help="B's spawned per tree (default 5)")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="DIR",
        help="source tree B runs from (PYTHONPATH; repeatable, alternated; default: this one)",
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="per B (default 120 s)")
    args = parser.parse_args()
    trees = args.tree or [str(Path(__file__).resolve().parent.parent)]
    tmp = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    runs: dict[str, list[dict[str, float]]] = {tree: [] for tree in trees}
    try:
        preload(tmp / "a", make_chunks(args.chunks))
        load_before = load_average()
        with NodeProcess(tmp / "a") as a:
            for number in range(args.runs):
                for index, tree in enumerate(trees):
                    data_dir = tmp / f"b-{number}-{index}"
                    runs[tree].append(run_b(tree, data_dir, a.p2p, args.chunks, args.timeout))
                    shutil.rmtree(data_dir, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def medians(rows: list[dict[str, float]]) -> dict[str, float]:
        return {key: round(statistics.median(row[key] for row in rows), 3) for key in rows[0]}

    line: dict[str, Any] = {
        "bench": "startup",
        "chunks": args.chunks,
        "runs": args.runs,
        "medians": {tree: medians(rows) for tree, rows in runs.items()},
        "every_run": runs,
        "loadavg_before": load_before,
        "loadavg_after": load_average(),
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()
