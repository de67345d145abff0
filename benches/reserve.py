"""The bounded reserve: eviction throughput, pull syncing into a node at capacity, and push-sync
uploads with receipts through six nodes against storing locally. Prints one JSON line.

``--part evict`` (in this process): a store of ``--chunks`` full chunks with a reserve of half
that; ``evict_chunks_per_s`` is the rate of `Reserve.evict` in batches of 256 (the node's batch)
down to the capacity, ``evict_batch_ms_median``/``_max`` how long one batch holds the node's trio
thread (syncing and the API wait at most that long for eviction);
``put_at_capacity_chunks_per_s`` stores as many new chunks again, evicting
after each batch of 128 as the node does, against ``put_chunks_per_s`` into a store with room:
``at_capacity_ratio`` is what evicting costs the ingest.

``--part sync`` (two `swarm node` processes): A holds ``--chunks`` chunks; B pulls from A once
with room (it takes them all) and once with ``--capacity`` of a quarter of them: its reserve fills,
its radius rises (B has no neighbourhood yet, so nothing caps it), it evicts what fell outside
and wants only what lies within. ``sync_ratio_at_capacity`` = B's pull rate at capacity / with
room, both in chunks delivered by pull syncing per second from the first to the last.

``--part push`` (processes): ``--mib`` MiB uploaded with ``POST /bytes`` to a lone node (every
chunk its own receipt: storing locally), and to node 0 of six nodes (one under each 3-bit
prefix but two, neighbourhood size 1), waiting for every receipt: ``push_ratio`` = the swarm's
upload rate / the lone node's; ``receipts`` are those node 0 received from others (every chunk
durable: two storers, one not node 0). Then as much again (other bytes) with ``Swarm-Receipts: 1``,
a single-receipt upload (Bee's direct upload: one storer's receipt per chunk, node 0's own for
a chunk of its neighbourhood): ``single_ratio`` = its rate / the lone node's, ``single_cpu_s``
the six nodes' CPU seconds during it. ``push_s``/``single_s`` are the two uploads' seconds to
the answer, ``push_replicated_s``/``single_replicated_s`` from the same start to the last copy
pull syncing made (the last change of any node's chunk count before they all stood still for
1.5 s; at radius 0 the sync rule sends chunks to more nodes than their neighbourhood's: after the
answer when the nodes put uploads first, ``swarm node --replication-wait``); the bench waits for
them before the next upload. Then as much again with ``Swarm-Deferred-Upload: true``:
``deferred_answer_mib_per_s`` to the answer, ``deferred_durable_mib_per_s`` until the tag says
every chunk is durable. ``chunks_per_batch``: chunks receipted per batch push (swarm/net/push_batches.py);
``pulled_from_uploader``: chunks the other nodes got from node 0 by pull syncing besides the pushes
during the durable upload (``single_pulled_from_uploader`` during the single-receipt one);
``pull_repeats``: pulled deliveries of chunks the puller held by then (a push came first: hashed
again, not stored again), ``pushes_held``: chunks pushed in batches to a node that held them
already (pulled first: neither hashed nor stored again), summed over the five other nodes
(``single_`` the same during the single-receipt upload);
``local_cpu_s`` the lone node's CPU seconds during its upload, ``push_cpu_s`` each of the six
nodes' during the durable upload (node 0 first). ``--py-spy FILE`` profiles node 0 and node 1
during the durable upload (FILE.uploader, FILE.storer; ``--native`` samples exact stacks) and
the single-receipt one (FILE.single.uploader, FILE.single.storer).

``--replication-wait S`` (push only) starts every node with it (0: live offers go out at once, as
before uploads came first). ``--verify-workers N`` (push only) gives every node N verifier
processes (``swarm node``'s own default is one per core, at most 4: 2 here); the default 0
verifies in the node's process, as the bench's figures so far were taken (six nodes on two cores
have no spare core).

``load`` is the 1-minute load average at the start; compare figures with ``python -m benches.bmt``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benches.sync import cpu_seconds, load_average, make_chunks, peer_stats, pid_of, py_spy
from localstore.reserve import Reserve
from localstore.store import LocalStore
from swarm.testing import NodeProcess, poll, preload
from tests.reserve_helpers import spread_identities, write_identity

PLAIN = ["--channel", "plain", "--verify-workers", "0"]


def bench_evict(count: int, workdir: Path) -> dict[str, Any]:
    chunks = make_chunks(2 * count, seed=31)
    first, second = chunks[:count], chunks[count:]
    with LocalStore(workdir / "room", bytes(32)) as store:
        started = time.perf_counter()
        for i in range(0, count, 128):
            store.put_many(second[i : i + 128], verified=True)
        put_rate = count / (time.perf_counter() - started)
    with LocalStore(workdir / "full", bytes(32)) as store:
        for i in range(0, count, 1024):
            store.put_many(first[i : i + 1024], verified=True)
        reserve = Reserve(store, count // 2)
        started = time.perf_counter()
        evicted = 0
        batch_s: list[float] = []  # how long each batch holds the node's trio thread
        while True:
            began = time.perf_counter()
            batch = reserve.evict(256)
            if not batch:
                break
            batch_s.append(time.perf_counter() - began)
            evicted += batch
        evict_rate = evicted / (time.perf_counter() - started)
        started = time.perf_counter()
        for i in range(0, count, 128):
            store.put_many(second[i : i + 128], verified=True)
            while reserve.evict(256):
                pass
        at_capacity = count / (time.perf_counter() - started)
        assert len(store) <= count // 2 + 128
    return {
        "evict_chunks": evicted,
        "evict_chunks_per_s": round(evict_rate),
        "evict_batch_ms_median": round(1000 * statistics.median(batch_s), 2),
        "evict_batch_ms_max": round(1000 * max(batch_s), 2),
        "put_chunks_per_s": round(put_rate),
        "put_at_capacity_chunks_per_s": round(at_capacity),
        "at_capacity_ratio": round(at_capacity / put_rate, 3),
    }


def pull_rate(workdir: Path, upstream: NodeProcess, extra: list[str]) -> tuple[float, int, int]:
    """B pulls from ``upstream`` until fully synced and quiet for a second: chunks delivered by
    pull syncing per second (first delivery to the last), how many, and B's evictions."""
    node = NodeProcess(workdir, peers=[upstream.p2p], extra=[*PLAIN, *extra])
    with node:  # the context starts it
        trace: list[tuple[float, int]] = []

        def done() -> bool:
            doc = node.get("/sync").json()
            delivered = peer_stats(doc, upstream.overlay).get("delivered", 0)
            now = time.monotonic()
            if not trace or delivered != trace[-1][1]:
                trace.append((now, delivered))
            quiet = now - trace[-1][0] >= 1.0
            return bool(delivered and doc["fully_synced"] and doc["peers"] and quiet)

        poll(done, timeout=900, interval=0.05)
        first = next(t for t, n in trace if n)
        last, delivered = trace[-1]
        evicted = node.get("/sync").json()["reserve"]["evicted"]
        return delivered / (last - first), delivered, evicted


def bench_sync(count: int, workdir: Path) -> dict[str, Any]:
    chunks = make_chunks(count, seed=32)
    preload(workdir / "a", chunks)
    with NodeProcess(workdir / "a", extra=PLAIN) as a:
        room, _, _ = pull_rate(workdir / "b-room", a, [])
        full, delivered, evicted = pull_rate(workdir / "b-full", a, ["--capacity", str(count // 4)])
    return {
        "sync_chunks": count,
        "sync_chunks_per_s_room": round(room),
        "sync_delivered_at_capacity": delivered,
        "sync_chunks_per_s_at_capacity": round(full),
        "sync_evicted": evicted,
        "sync_ratio_at_capacity": round(full / room, 3),
    }


def upload(node: NodeProcess, data: bytes, receipts: int = 2) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    headers = {"swarm-receipts": str(receipts)}
    response = httpx.post(f"{node.api}/bytes", content=data, headers=headers, timeout=600)
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    doc: dict[str, Any] = response.json()
    assert doc["tag"]["without_receipt"] == 0, doc["tag"]
    return elapsed, doc


def deferred_upload(node: NodeProcess, data: bytes) -> tuple[float, float]:
    """``Swarm-Deferred-Upload: true``: seconds to the answer, and to every chunk durable (tag)."""
    started = time.perf_counter()
    response = httpx.post(
        f"{node.api}/bytes", content=data, headers={"swarm-deferred-upload": "true"}, timeout=600
    )
    answered = time.perf_counter() - started
    response.raise_for_status()
    uid = response.json()["tag"]["uid"]

    def durable() -> bool:
        tag = node.get(f"/tags/{uid}").json()
        return bool(tag["synced"] == tag["split"])

    poll(durable, timeout=600, interval=0.05)
    return answered, time.perf_counter() - started


def copies(nodes: list[NodeProcess]) -> tuple[int, int, int]:
    """Counters of the other nodes so far: chunks pulled from node 0, pulled deliveries of chunks
    already held (``repeat``: hashed again, stored no more), pushed chunks already held."""
    pulled = repeats = held = 0
    for node in nodes[1:]:
        doc = node.get("/sync").json()
        pulled += peer_stats(doc, nodes[0].overlay).get("delivered", 0)
        repeats += sum(peer["stats"].get("repeat", 0) for peer in doc["peers"])
        held += doc["reserve"].get("pushes_held", 0)
    return pulled, repeats, held


def replicated(nodes: list[NodeProcess], started: float, still: float = 1.5) -> float | None:
    """Seconds from ``started`` to the last change of any node's chunk count, once the counts have
    stood still for ``still`` seconds: when pull syncing made the upload's last copy (the sync
    rule decides which nodes get one). None if they never stand still within two minutes."""
    counts: list[int] = []
    changed = time.perf_counter()
    deadline = changed + 120.0
    while time.perf_counter() < deadline:
        now_counts = [node_chunks(node) for node in nodes]
        now = time.perf_counter()
        if now_counts != counts:
            counts, changed = now_counts, now
        elif now - changed >= still:
            return changed - started
        time.sleep(0.25)  # /sync costs each node a few ms: polled gently
    return None


def node_chunks(node: NodeProcess) -> int:
    return int(node.get("/sync").json()["chunks"])


def bench_push(
    mib: int,
    workdir: Path,
    spy: str | None = None,
    native: bool = False,
    verify_workers: int = 0,
    replication_wait: float | None = None,
) -> dict[str, Any]:
    data = random.Random(33).randbytes(mib << 20)
    plain = ["--channel", "plain", "--verify-workers", str(verify_workers)]
    if replication_wait is not None:
        plain += ["--replication-wait", str(replication_wait)]
    with NodeProcess(workdir / "lone", extra=plain) as lone:
        lone_cpu = cpu_seconds(pid_of(lone))
        local_s, doc = upload(lone, data)
        lone_cpu = cpu_seconds(pid_of(lone)) - lone_cpu
    identities = [identity for i, identity in enumerate(spread_identities(3)) if i not in (3, 6)]
    nodes: list[NodeProcess] = []
    try:
        for i, identity in enumerate(identities):
            write_identity(workdir / f"n{i}", identity)
            peers = [nodes[0].p2p] if nodes else []
            extra = [*plain, "--neighbourhood-size", "1"]
            nodes.append(NodeProcess(workdir / f"n{i}", peers=peers, extra=extra).start())
        poll(lambda: all(len(n.get("/sync").json()["peers"]) == len(nodes) - 1 for n in nodes), timeout=60)
        counted = copies(nodes)
        cpu_before = [cpu_seconds(pid_of(n)) for n in nodes]
        with (
            py_spy(pid_of(nodes[0]), spy and spy + ".uploader", native=native),
            py_spy(pid_of(nodes[1]), spy and spy + ".storer", native=native),
        ):
            started = time.perf_counter()
            swarm_s, doc = upload(nodes[0], data)
        cpu = [round(cpu_seconds(pid_of(n)) - b, 2) for n, b in zip(nodes, cpu_before, strict=True)]
        reserve = nodes[0].get("/sync").json()["reserve"]
        receipts = reserve["receipts"]
        attempts, failures = reserve["push_attempts"], reserve["push_failures"]
        # chunks the other nodes got from node 0 by pull syncing besides the pushes; twice-sent ones
        after = copies(nodes)
        pulled, repeats, held = (b - a for a, b in zip(counted, after, strict=True))
        batched = reserve.get("push_batched", 0) / max(1, reserve.get("push_batches", 0))
        replicated_s = replicated(nodes, started)
        after = copies(nodes)  # the copies made after the answer are not the next upload's
        cpu_before = [cpu_seconds(pid_of(n)) for n in nodes]
        with (
            py_spy(pid_of(nodes[0]), spy and spy + ".single.uploader", native=native),
            py_spy(pid_of(nodes[1]), spy and spy + ".single.storer", native=native),
        ):
            started = time.perf_counter()
            single_s, _ = upload(nodes[0], random.Random(35).randbytes(mib << 20), receipts=1)
        single_cpu = [round(cpu_seconds(pid_of(n)) - b, 2) for n, b in zip(nodes, cpu_before, strict=True)]
        single_pulled, single_repeats, single_held = (
            b - a for a, b in zip(after, copies(nodes), strict=True)
        )
        single_replicated_s = replicated(nodes, started)
        answered_s, durable_s = deferred_upload(nodes[0], random.Random(34).randbytes(mib << 20))
    finally:
        for node in nodes:
            node.kill()
    return {
        "push_mib": mib,
        "verify_workers": verify_workers,
        "replication_wait": replication_wait,
        "push_chunks": doc["chunks"],
        "local_mib_per_s": round(mib / local_s, 2),
        "push_mib_per_s": round(mib / swarm_s, 2),
        "receipts": receipts,
        "chunks_per_batch": round(batched, 1),
        "pulled_from_uploader": pulled,
        "pull_repeats": repeats,
        "pushes_held": held,
        "push_attempts": attempts,
        "push_failures": failures,
        "local_cpu_s": round(lone_cpu, 2),
        "push_cpu_s": cpu,  # per node process during the durable upload, node 0 the uploader
        "push_ratio": round(local_s / swarm_s, 3),
        "push_replicated_s": replicated_s and round(replicated_s, 2),
        "push_s": round(swarm_s, 2),
        "single_mib_per_s": round(mib / single_s, 2),
        "single_cpu_s": single_cpu,  # per node process during the single-receipt upload
        "single_ratio": round(local_s / single_s, 3),
        "single_replicated_s": single_replicated_s and round(single_replicated_s, 2),
        "single_s": round(single_s, 2),
        "single_pulled_from_uploader": single_pulled,
        "single_pull_repeats": single_repeats,
        "single_pushes_held": single_held,
        "deferred_answer_mib_per_s": round(mib / answered_s, 2),
        "deferred_durable_mib_per_s": round(mib / durable_s, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--part", choices=["evict", "sync", "push", "all"], default="all")
    parser.add_argument(
        "--chunks", type=int, default=20_000, help="chunks for evict and sync (default 20000)"
    )
    parser.add_argument("--mib", type=int, default=16, help="MiB uploaded for push (default 16)")
    parser.add_argument(
        "--py-spy", metavar="FILE", help="push: profile node 0 and node 1 (FILE.uploader/.storer)"
    )
    parser.add_argument(
        "--native", action="store_true", help="with --py-spy: native frames too (and stacks sampled exactly)"
    )
    parser.add_argument(
        "--verify-workers", type=int, default=0, metavar="N", help="push: verifier processes per node (0)"
    )
    parser.add_argument(
        "--replication-wait",
        type=float,
        metavar="S",
        help="push: every node's `swarm node --replication-wait` (default: the node's; 0: copies at once)",
    )
    args = parser.parse_args()
    result: dict[str, Any] = {"load": load_average(), "cpus": os.cpu_count()}
    tmp = Path(tempfile.mkdtemp(prefix="bench-reserve-"))
    try:
        if args.part in ("evict", "all"):
            result.update(bench_evict(args.chunks, tmp / "evict"))
        if args.part in ("sync", "all"):
            result.update(bench_sync(args.chunks, tmp / "sync"))
        if args.part in ("push", "all"):
            pushed = bench_push(
                args.mib, tmp / "push", args.py_spy, args.native, args.verify_workers, args.replication_wait
            )
            result.update(pushed)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
