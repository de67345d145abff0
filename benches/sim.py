"""Bench `swarm sim`: the same grid serially in one process and on Spark ``local[2]``.

Both sides run the same per-key function (``swarm.sim.simulate.simulate``) over the same grid, the
serial side as a plain loop. The Spark time is reported with and without starting Spark (the JVM and
the SparkContext count against the speed-up; the SQL session, which only the table writing needs,
is not started); the bench also checks that both sides produced identical per-run rows.
With ``--pool N`` the same grid also runs on a plain ``multiprocessing`` pool (no Spark): the ceiling
this machine's cores allow. The machine may be shared: ``other_cores_*`` is the CPU (in cores) that
processes other than this bench and its JVM and workers used during each phase (from /proc; null
elsewhere). Prints one JSON line.
By default the grid is that of ``swarm sim`` with its defaults (N = 1024, 4096, 16384; 3 runs; the four
strategies: 36 networks; the serial pass alone takes about as long as ``swarm sim`` on two cores, times
two); ``--nodes 256,1024 --runs 2`` is a quick one. ``--churn RATE`` runs the grid under churn.
Run as ``python -m benches.sim [--nodes N,...] [--runs R] [--churn RATE] [--master local[2]] [--pool 0]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
from functools import partial

from kademlia import STRATEGIES as REGISTRY
from swarm.cli.sim import DEFAULT_NODES, DEFAULT_RUNS
from swarm.sim.grid import GridKey, SimParams, make_grid
from swarm.sim.simulate import simulate
from swarm.sim.spark import run_grid
from swarm.sim.sparkstart import start_context

STRATEGIES = ["first", "gap", "temperature", "hottest"]  # the default grid's; `loaded` is measured apart
assert set(STRATEGIES) <= set(REGISTRY)


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


def _pool_rows(keys: list[GridKey], params: SimParams, workers: int) -> list[tuple[object, ...]]:
    """The same grid on a plain process pool: what this machine's cores give without Spark."""
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return pool.map(partial(_run_row, params=params), keys, chunksize=1)


def _run_row(key: GridKey, params: SimParams) -> tuple[object, ...]:
    return simulate(key, params).run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", default=DEFAULT_NODES, help="network sizes (default: as swarm sim)")
    parser.add_argument(
        "--runs", type=int, default=DEFAULT_RUNS, help="runs per size and strategy (as swarm sim)"
    )
    parser.add_argument("--lookups", type=int, default=2000)
    parser.add_argument("--churn", type=float, default=0.0, help="churn rate (as swarm sim --churn)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--pool", type=int, default=0, help="also run the grid on a process pool of this size (0: skip)"
    )
    args = parser.parse_args()
    sizes = [int(n) for n in args.nodes.split(",")]
    params = SimParams(lookups=args.lookups, churn=args.churn)
    keys = make_grid(STRATEGIES, sizes, args.runs)

    t0 = time.perf_counter()
    others = _Others()
    serial = [simulate(key, params).run for key in keys]
    serial_s = time.perf_counter() - t0
    other_serial = others.cores()

    pool_s = other_pool = None
    if args.pool > 0:
        t0 = time.perf_counter()
        others = _Others()
        pooled = _pool_rows(keys, params, args.pool)
        pool_s = time.perf_counter() - t0
        other_pool = others.cores()
        assert pooled == serial, "the process pool computed other rows"

    t0 = time.perf_counter()
    sc = start_context(args.master)  # the grid needs no SQL session (only writing the tables does)
    t1 = time.perf_counter()
    try:
        others = _Others()
        outcome = run_grid(sc, keys, params)
        t2 = time.perf_counter()
        other_spark = others.cores()  # before stop(): the workers are still alive and counted as ours
        master = sc.master
        outcome.results.unpersist()
    finally:
        sc.stop()
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
                    "churn": args.churn,
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
                "pool_workers": args.pool,
                "pool_s": None if pool_s is None else round(pool_s, 2),
                "pool_speedup": None if pool_s is None else round(serial_s / pool_s, 2),
                "other_cores_serial": other_serial,
                "other_cores_pool": other_pool,
                "other_cores_spark": other_spark,
            }
        )
    )


if __name__ == "__main__":
    main()
