"""Downstream peak memory syncing a large store vs a small one: does memory stay bounded?

For each size (``--small``, then ``--large``) preloads one upstream's data directory with that many
distinct full 4 KiB chunks (generated deterministically, hashed in a process pool and streamed
into the store, never held in memory all at once), starts the upstream and a downstream with
``--peer`` to it, and polls the downstream's ``/sync`` until it holds every chunk and is fully
synced, sampling its VmRSS at every poll. Peak RSS is the kernel's VmHWM of the downstream process
read at the end (the sampled maximum is reported beside it). Each size's directory is deleted
before the next starts (the large one needs ~2 x 0.85 GB of disk at the default 200,000).

Prints one JSON line: {"small", "large", "small_peak_rss_mb", "large_peak_rss_mb", "ratio"
(large/small VmHWM), "ratio_anon" (large/small sampled peak RssAnon), and per size the sampled
peaks of VmRSS, RssAnon and RssFile, sync seconds, the downstream's CPU seconds, the VmHWM and
CPU seconds of its verifier worker processes (separate processes, not in its RSS; each holds at
most one batch of chunks), the upstream's peak RSS, the preload time and the downstream's log
events}.

Reading the numbers: RssAnon is the process's own memory (Python objects, LevelDB memtables
and block cache). RssFile is file pages mapped into the process: shared libraries, and LevelDB's
tables (LevelDB 1.22, as bundled with plyvel, mmaps its table files for reading, and every page
that a lookup or a compaction touched counts until the file is deleted). Since store format 3
LevelDB holds only cursors and sync state; chunk data, pull index and address index are files read
and written with pread/pwrite, so they are page cache but not RSS (docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benches.sync import (
    cpu_seconds,
    iter_chunks,
    log_events,
    pid_of,
    proc_status_kb,
    start_downstream,
    watch_sync,
)
from swarm.testing import NodeProcess, preload

# VmRSS = RssAnon (heap: Python objects, LevelDB memtables and caches) + RssFile (mapped files:
# libraries, and LevelDB's tables, which it mmaps for reading) + RssShmem.
SAMPLED = ("VmRSS", "RssAnon", "RssFile")


def measure(count: int, args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix=f"bench-memory-{count}-", dir=args.tmp))
    try:
        started = time.perf_counter()
        preload(tmp / "up", iter_chunks(count, seed=args.seed))
        preload_s = time.perf_counter() - started
        with NodeProcess(tmp / "up") as up:
            down, watch = start_downstream(tmp / "down", [up])
            with down:
                pid = pid_of(down)
                sampled = dict.fromkeys(SAMPLED, 0)

                def sample(*_: object) -> None:
                    for key in SAMPLED:
                        sampled[key] = max(sampled[key], proc_status_kb(pid, key))

                watch_sync(down, count, watch, timeout=args.timeout, interval=args.interval, on_sample=sample)
                peak_kb = proc_status_kb(pid, "VmHWM")
                cpu_s = cpu_seconds(pid)
                workers = down.verify_worker_pids()
                workers_kb = [proc_status_kb(w, "VmHWM") for w in workers]
                workers_cpu_s = sum(cpu_seconds(w) for w in workers)
                up_peak_kb = proc_status_kb(pid_of(up), "VmHWM")
            events = log_events(down)
        assert watch.synced is not None
        return {
            "peak_rss_mb": round(peak_kb / 1024, 1),
            "sampled_peak_rss_mb": round(sampled["VmRSS"] / 1024, 1),
            "sampled_peak_anon_mb": round(sampled["RssAnon"] / 1024, 1),
            "sampled_peak_file_mb": round(sampled["RssFile"] / 1024, 1),
            "upstream_peak_rss_mb": round(up_peak_kb / 1024, 1),
            "sync_s": round(watch.synced - watch.spawned, 2),
            "downstream_cpu_s": round(cpu_s, 1),
            "workers_peak_rss_mb": [round(kb / 1024, 1) for kb in workers_kb],
            "workers_cpu_s": round(workers_cpu_s, 1),
            "preload_s": round(preload_s, 1),
            "log": events,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--small", type=int, default=20_000, help="chunks of the small run (default 20000)")
    parser.add_argument("--large", type=int, default=200_000, help="chunks of the large run (default 200000)")
    parser.add_argument("--seed", type=int, default=0, help="payload seed (default 0)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="give up after this (default 1800 s)")
    parser.add_argument(
        "--interval", type=float, default=0.25, help="/sync and RSS poll interval (default 0.25 s)"
    )
    parser.add_argument("--tmp", default=None, help="parent of the temporary directories (default: system)")
    args = parser.parse_args()
    os.environ.setdefault("SWARM_LOG_LEVEL", "INFO")  # the nodes log connects and disconnects
    started = time.perf_counter()
    small = measure(args.small, args)
    large = measure(args.large, args)
    print(
        json.dumps(
            {
                "small": args.small,
                "large": args.large,
                "small_peak_rss_mb": small["peak_rss_mb"],
                "large_peak_rss_mb": large["peak_rss_mb"],
                "ratio": round(large["peak_rss_mb"] / small["peak_rss_mb"], 3),
                "ratio_anon": round(large["sampled_peak_anon_mb"] / small["sampled_peak_anon_mb"], 3),
                "small_detail": small,
                "large_detail": large,
                "bench_s": round(time.perf_counter() - started, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
