"""Bench `swarm sim`: the same grid serially in one process and on Spark ``local[2]``.

Both sides run the same per-key function (``swarm.sim.simulate.simulate``) over the same grid, the serial
side as a plain loop. The Spark time is reported with and without starting the session (the JVM start
counts against the speed-up); the bench also checks that both sides produced identical per-run rows.
The machine may be shared: ``other_cores_*`` is the CPU (in cores) that processes other than this bench
and its JVM and workers used during each phase (from /proc; null elsewhere). Prints one JSON line.
Run as ``python -m benches.sim [--nodes 256,1024] [--runs 8] [--master local[2]]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from swarm.sim.grid import SimParams, make_grid
from swarm.sim.simulate import simulate
from swarm.sim.spark import run_grid, start_session

STRATEGIES = ["first", "gap", "temperature"]


def _busy_jiffies() -> int | None:
    """CPU time spent by every process of the machine (all CPUs), in clock ticks; None without /proc."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return user + nice + system + irq + softirq + steal


def _our_jiffies() -> int:
    """CPU ticks of this process and all its descendants (live ones, and reaped ones via cutime)."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2 :].split()
        pid = int(entry)
        parents[pid] = int(rest[1])
        ticks[pid] = sum(int(x) for x in rest[11:15])  # utime stime cutime cstime
    me = os.getpid()
    total = 0
    for pid, t in ticks.items():
        p = pid
        while p > 1 and p != me:
            p = parents.get(p, 0)
        if p == me:
            total += t
    return total


class _Others:
    """CPU used by processes other than ours over a phase, in cores."""

    def __init__(self) -> None:
        self.busy = _busy_jiffies()
        self.ours = _our_jiffies() if self.busy is not None else 0
        self.t = time.perf_counter()

    def cores(self) -> float | None:
        busy = _busy_jiffies()
        if busy is None or self.busy is None:
            return None
        others = (busy - self.busy) - (_our_jiffies() - self.ours)
        return round(others / os.sysconf("SC_CLK_TCK") / (time.perf_counter() - self.t), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", default="256,1024")
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--lookups", type=int, default=2000)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    sizes = [int(n) for n in args.nodes.split(",")]
    params = SimParams(lookups=args.lookups)
    keys = make_grid(STRATEGIES, sizes, args.runs)

    t0 = time.perf_counter()
    others = _Others()
    serial = [simulate(key, params).run for key in keys]
    serial_s = time.perf_counter() - t0
    other_serial = others.cores()

    t0 = time.perf_counter()
    spark = start_session(args.master)
    t1 = time.perf_counter()
    try:
        others = _Others()
        outcome = run_grid(spark, keys, params)
        t2 = time.perf_counter()
        other_spark = others.cores()  # before stop(): the workers are still alive and counted as ours
        master = spark.sparkContext.master
        outcome.results.unpersist()
    finally:
        spark.stop()
    start_s, grid_s = t1 - t0, t2 - t1
    print(
        json.dumps(
            {
                "bench": "sim",
                "grid": {
                    "strategies": STRATEGIES,
                    "nodes": sizes,
                    "runs": args.runs,
                    "lookups": args.lookups,
                },
                "networks": len(keys),
                "cpus": os.cpu_count(),
                "serial_s": round(serial_s, 2),
                "spark_master": master,
                "spark_start_s": round(start_s, 2),
                "spark_grid_s": round(grid_s, 2),
                "spark_total_s": round(start_s + grid_s, 2),
                "speedup": round(serial_s / (start_s + grid_s), 2),
                "speedup_without_start": round(serial_s / grid_s, 2),
                "identical": sorted(serial) == sorted(outcome.runs),
                "other_cores_serial": other_serial,
                "other_cores_spark": other_spark,
            }
        )
    )


if __name__ == "__main__":
    main()
