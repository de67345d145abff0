"""The verifier worker's round trip: CPU per chunk of the node's side and of the worker process.

A `ChunkVerifier` with one real worker process (as a syncing node runs it) verifies ``--chunks``
full content chunks in batches of ``--batch``, keeping ``--in-flight`` batches submitted ahead of
the verdicts awaited (the downstream's delivery pipeline keeps two). Counted from the first
verdict on (the worker's start-up apart): this process's CPU (`time.process_time`: encoding the
requests, writing them, reading and decoding the replies, trio's scheduling) and the worker's
user and system CPU from /proc. The same chunks are then verified inline here with
`syncer.verify_worker.check`, exactly the worker's per-chunk work without any IPC: the worker's
figure less that one (``worker_overhead_us``) is what the process boundary costs it a chunk, but
it is taken at another moment, so it carries the machine's drift in hashing speed (a few µs
either way on a shared VM): compare builds by alternated runs, not by one figure.
``worker_start_cpu_s`` is the worker's CPU up to its first verdict (start-up and one batch).
Take the lock (`flock /tmp/bench.lock`) so no other bench shares the cores.

Prints one JSON line, medians over ``--runs``: ``{"chunks", "batch", "runs", "node_us_per_chunk",
"worker_us_per_chunk", "worker_user_us", "worker_sys_us", "inline_check_us_per_chunk",
"worker_overhead_us", "worker_start_cpu_s", "wall_chunks_per_s", "load"}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import trio

from chunks import Chunk
from swarm.testing import random_chunks
from syncer.verifier import ChunkVerifier, Verdicts
from syncer.verify_worker import check

TICK = os.sysconf("SC_CLK_TCK")


def worker_cpu(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of a live process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / TICK, int(fields[12]) / TICK


async def round_trip(batches: list[list[Chunk]], in_flight: int) -> dict[str, float]:
    """One verifier with one worker: CPU of both sides over ``batches`` (all must verify)."""
    async with trio.open_nursery() as nursery:
        verifier = await nursery.start(ChunkVerifier(1).run)
        (worker,) = verifier._workers
        assert await (await verifier.submit(batches[0])).wait() == [None] * len(batches[0])
        start_user, start_sys = worker_cpu(worker.process.pid)
        node_started, wall_started = time.process_time(), time.perf_counter()
        pending: list[Verdicts] = []
        for batch in batches:
            if len(pending) >= in_flight and any(await pending.pop(0).wait()):
                raise RuntimeError("a valid chunk was refused")
            pending.append(await verifier.submit(batch))
        for verdicts in pending:
            if any(await verdicts.wait()):
                raise RuntimeError("a valid chunk was refused")
        node = time.process_time() - node_started
        wall = time.perf_counter() - wall_started
        user, system = worker_cpu(worker.process.pid)
        if verifier.live_workers != 1:
            raise RuntimeError("the worker failed during the run")
        nursery.cancel_scope.cancel()
    return {
        "node": node,
        "worker_user": user - start_user,
        "worker_sys": system - start_sys,
        "worker_start": start_user + start_sys,
        "wall": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=20_000, help="chunks verified per run")
    parser.add_argument("--unique", type=int, default=2048, help="distinct chunks made (and repeated)")
    parser.add_argument("--batch", type=int, default=128, help="chunks per request")
    parser.add_argument("--in-flight", type=int, default=2, help="requests submitted ahead")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    unique = random_chunks(args.unique, seed=31)
    chunks = [unique[i % len(unique)] for i in range(args.chunks)]
    batches = [chunks[i : i + args.batch] for i in range(0, len(chunks), args.batch)]
    n = len(chunks)
    figures: dict[str, list[float]] = {}
    for _ in range(args.runs):
        result = trio.run(round_trip, batches, args.in_flight)
        started = time.process_time()
        if any(check(chunk) for chunk in chunks):
            raise RuntimeError("a valid chunk was refused inline")
        inline = time.process_time() - started
        worker = result["worker_user"] + result["worker_sys"]
        for key, value in {
            "node_us_per_chunk": result["node"] / n * 1e6,
            "worker_us_per_chunk": worker / n * 1e6,
            "worker_user_us": result["worker_user"] / n * 1e6,
            "worker_sys_us": result["worker_sys"] / n * 1e6,
            "inline_check_us_per_chunk": inline / n * 1e6,
            "worker_overhead_us": (worker - inline) / n * 1e6,
            "worker_start_cpu_s": result["worker_start"],
            "wall_chunks_per_s": n / result["wall"],
        }.items():
            figures.setdefault(key, []).append(value)
    summary: dict[str, object] = {"chunks": n, "batch": args.batch, "runs": args.runs}
    for key, values in figures.items():
        summary[key] = round(statistics.median(values), 3 if key == "worker_start_cpu_s" else 1)
    summary["load"] = round(os.getloadavg()[0], 2)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
