"""Sync throughput and protocol overhead between two real `swarm node` processes.

Preloads ``--chunks`` distinct full 4 KiB chunks into node A's data directory (before A starts),
starts A, then starts B with ``--peer A`` and polls B's ``GET /sync`` until B holds every chunk
and reports ``fully_synced``. Before the nodes start (on a quiet machine) it measures the local
ingest limit: the same chunks verified and stored into a fresh LocalStore in this process with
``put_many`` in batches of 128 (and, for comparison, one ``put`` per chunk).

Prints one JSON line. Times are seconds:

- ``sync_s``: headline, from spawning B's process (interpreter start, imports, store open,
  connect, handshake, cursors) until B's ``/sync`` shows all chunks; ``sync_chunks_per_s`` and
  ``ratio`` (= sync rate / ``ingest_chunks_per_s``) use it.
- ``sync_from_up_s``: from B answering ``/health`` (``startup_s`` after the spawn). B dials its
  ``--peer`` before it starts the API (since the branch ``syncspeed``), so its first handshake
  may be under way or done by then: ``startup_s`` is when the bench can first ask, not when the
  sync could start.
- ``sync_from_first_s``: from the first poll that saw a chunk at B (polled every 20 ms until
  then) to all chunks; ``steady_chunks_per_s`` uses it; ``quarter_chunks_per_s`` is the rate over
  each quarter of the chunks (the last quarter is mostly bin 0, one stream: a slow tail shows).
- ``fully_synced_s``: from spawning B until ``fully_synced`` is also true.

The ingest rates are the best of ``--ingest-repeats`` passes; ``ratio_vs_put`` compares with one
``put`` per chunk. The ingest runs in one process, as the task defines the local ingest limit; B
verifies deliveries in verifier worker processes (``swarm node --verify-workers``, by default one
per core: two on a 2-core machine, sharing the cores with B's own process), so it uses the second
core the way any node would. ``--verify-workers 0`` measures B verifying in its own process, like the ingest.

Overhead, from B's ``/sync`` stats for peer A (payload = span + payload bytes of chunk deliveries):

- ``overhead``: ``protocol_bytes_in / payload_bytes_in``: the framing and the offers that moved
  the data to B (headline).
- ``overhead_out``: ``protocol_bytes_out / payload_bytes_in``: everything B sent A that is not
  chunk data. With two nodes each is the other's neighbour (depth 0), so A also pulls every bin
  from B: this is B's wants *and* the traffic of A syncing from B (cursor replies, and live
  offers of every chunk B stores, which A already has and never wants). Split as
  ``overhead_out_wants`` (the wants, computed exactly: one fixed-size ``WantedHashes`` frame per
  historical offer of A) and ``overhead_out_reverse`` (the rest: the reverse direction and
  control messages); ``reverse_offered_hashes``/``reverse_wanted`` are A's counters for B.

``cpu_chunks_per_s``: chunks B stored after the first poll that saw one / the CPU seconds of B
and its verifier workers over the same stretch: the rate B would reach with CPUs to itself (its
serving A and answering the polls included); ``cpu_ratio`` = that / ``ingest_cpu_chunks_per_s``
(the put_many ingest per CPU second of the bench process; both count LevelDB's compaction
thread). Unlike the wall-clock numbers it hardly moves with other load on the machine.

``cpu_a_s`` is A's user+system CPU seconds from B's spawn to the end, ``cpu_b_s`` B's whole life
(start-up included), ``cpu_b_workers_s`` its verifier workers' (``verify_workers`` of them); with 2
CPUs a total near ``2 * sync_s`` means CPU-bound. ``loss_b`` holds
B's non-zero loss counters for A, ``log`` the disconnects and warnings in each node's log (the
nodes run at INFO level). ``--py-spy FILE`` records B's CPU profile during the sync, ``--py-spy-a FILE`` A's.

``--channel plain`` runs both nodes without TLS (``--channel tls``, the default, is how nodes
are deployed): the difference is what the secure channel costs.

``--provable-sync off|sign|verify`` (default verify, as deployed) runs both nodes so: ``off`` keeps
no bin logs and sends plain offers, the difference is what provable streams cost (issue 16).
``proof_bytes_in``/``proof_bytes_out`` count what provable streams add to B's traffic with A,
computed from the offers B received (ProvenOffer instead of OfferedHashes: the hole mask, the
proof hashes, a live offer's signed state), its state requests and replies, and its receipts
(``receipts``); ``proof_bytes_per_chunk`` is both over the chunks synced.

``--runs N`` repeats the whole measurement (fresh directories, ingest passes, sync) N times, for
this bench's run-to-run noise on a shared VM; the line is then the first run's, plus ``runs``,
``ratios`` and ``sync_rates`` (every run's, in order) and ``ratio_median``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import multiprocessing
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from chunks import CHUNK_SIZE, SPAN_SIZE, Chunk
from localstore.store import LocalStore
from localstore.storefiles import BINS
from streamer.codec import encode
from streamer.messages import MAX_DELIVERY_BATCH, ChunkDeliveries, DeliveredChunk, WantedHashes
from swarm.testing import NodeProcess, preload

BATCH = 128
CHUNK_BYTES = SPAN_SIZE + CHUNK_SIZE  # payload bytes of one full chunk on the wire and on disk


# -- chunks -------------------------------------------------------------------------------------


def _make_chunk(index_seed: tuple[int, int]) -> tuple[bytes, bytes]:
    index, seed = index_seed
    payload = hashlib.shake_128(b"bench-%d-%d" % (seed, index)).digest(CHUNK_SIZE)
    chunk = Chunk.from_payload(payload)
    return chunk.address, chunk.data


def iter_chunks(count: int, *, seed: int = 0, workers: int | None = None) -> Iterator[Chunk]:
    """``count`` distinct, BMT-valid full chunks, chunk ``i`` a pure function of ``(seed, i)``.

    Payloads are SHAKE-128 streams of a counter (incompressible, cheap); the BMT hashing, which is
    the real cost (~0.1 ms a chunk), runs in a process pool of ``workers`` (default: CPU count).
    """
    workers = workers or os.cpu_count() or 1
    jobs = ((i, seed) for i in range(count))
    if workers == 1 or count < 2000:
        for job in jobs:
            yield Chunk(*_make_chunk(job))
        return
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        for address, data in pool.imap(_make_chunk, jobs, chunksize=256):
            yield Chunk(address, data)


def make_chunks(count: int, *, seed: int = 0) -> list[Chunk]:
    return list(iter_chunks(count, seed=seed))


# -- local ingest limit -------------------------------------------------------------------------


def ingest_rates(chunks: list[Chunk], workdir: Path, repeats: int = 2) -> dict[str, float]:
    """Chunks/s verifying and storing into fresh stores: put_many in batches of 128, and put.

    Best of ``repeats`` passes each (the least disturbed by other load on the machine); also the
    rate per CPU second of this process (``cpu_put_many``), to compare with B's CPU rate.
    """
    overlay = hashlib.sha256(b"bench ingest overlay").digest()
    best = {"put_many": float("inf"), "put": float("inf"), "cpu_put_many": float("inf")}
    for i in range(repeats):
        for way in ("put_many", "put"):
            path = workdir / f"ingest-{way}-{i}"
            with LocalStore(path, overlay) as store:
                started = time.perf_counter()
                cpu_started = time.process_time()
                if way == "put_many":
                    for j in range(0, len(chunks), BATCH):
                        store.put_many(chunks[j : j + BATCH])
                else:
                    for chunk in chunks:
                        store.put(chunk)
                best[way] = min(best[way], time.perf_counter() - started)
                if way == "put_many":
                    best["cpu_put_many"] = min(best["cpu_put_many"], time.process_time() - cpu_started)
                assert len(store) == len(chunks)
            shutil.rmtree(path)
    return {way: len(chunks) / seconds for way, seconds in best.items()}


# -- processes ----------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status_kb(pid: int, key: str) -> int:
    """A ``kB`` field of /proc/PID/status (VmRSS, VmHWM ...)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def pid_of(node: NodeProcess) -> int:
    assert node.proc is not None
    return node.proc.pid


def workers_cpu_seconds(node: NodeProcess) -> float:
    """CPU seconds of the node's live verifier worker processes."""
    return sum(cpu_seconds(pid) for pid in node.verify_worker_pids())


def log_events(node: NodeProcess) -> dict[str, Any]:
    """Connection churn and trouble in a node's log (the benches run nodes at INFO level)."""
    try:
        lines = (node.data_dir / "node.log").read_text(errors="replace").splitlines()
    except OSError:
        return {}
    trouble = [line for line in lines if "WARNING" in line or "ERROR" in line or "Traceback" in line]
    return {
        "disconnects": sum("disconnected by" in line for line in lines),
        "problems": len(trouble),
        "first_problem": trouble[0][:300] if trouble else None,
    }


def peer_stats(doc: dict[str, Any], overlay: str) -> dict[str, int]:
    """The ``stats`` of peer ``overlay`` in a ``/sync`` document."""
    for peer in doc["peers"]:
        if peer["overlay"] == overlay:
            return dict(peer["stats"])
    raise KeyError(f"peer {overlay[:12]} not in /sync")


@dataclass
class SyncWatch:
    """Timestamps of one downstream's progress, from polling its /sync (monotonic seconds)."""

    spawned: float
    up: float = 0.0
    first: float | None = None
    all_chunks: float | None = None
    synced: float | None = None
    doc: dict[str, Any] = field(default_factory=dict)
    samples: int = 0
    trace: list[tuple[float, int]] = field(default_factory=list)  # (time, chunks held)

    def quarter_rates(self, expected: int) -> list[int]:
        """Chunks/s over each quarter of the chunks (from the first delivered one): a slow tail shows."""
        marks = [self.first] + [
            next((t for t, n in self.trace if n >= expected * q / 4), None) for q in (1, 2, 3, 4)
        ]
        return [
            round(expected / 4 / (b - a)) if a is not None and b is not None and b > a else 0
            for a, b in itertools.pairwise(marks)
        ]


def watch_sync(
    node: NodeProcess,
    expected: int | None,
    watch: SyncWatch,
    *,
    timeout: float,
    interval: float,
    peers: int = 1,
    settle: float = 1.0,
    first_interval: float = 0.02,
    on_sample: Callable[[SyncWatch, dict[str, Any]], None] | None = None,
) -> SyncWatch:
    """Poll ``node``'s /sync until it is fully synced with ``peers`` peers and holds ``expected`` chunks.

    ``expected=None`` (the depth rule decides what the node keeps): until it is fully synced with
    ``peers`` peers and its chunk count has not moved for ``settle`` seconds; ``all_chunks`` and
    ``synced`` are then the start of that quiet stretch.
    """
    deadline = time.monotonic() + timeout
    quiet_since: float | None = None
    quiet_count = -1
    with httpx.Client(base_url=node.api, timeout=10) as client:
        while True:
            doc = client.get("/sync").json()
            now = time.monotonic()
            watch.samples += 1
            chunks = doc["chunks"]
            watch.trace.append((now, chunks))
            if watch.first is None and chunks > 0:
                watch.first = now
            if on_sample is not None:
                on_sample(watch, doc)
            synced = bool(doc["fully_synced"]) and len(doc["peers"]) >= peers
            if expected is not None:
                if watch.all_chunks is None and chunks >= expected:
                    watch.all_chunks = now
                if watch.all_chunks is not None and synced:
                    watch.synced = now
                    watch.doc = doc
                    return watch
            elif synced and chunks == quiet_count:
                assert quiet_since is not None
                if now - quiet_since >= settle:
                    watch.all_chunks = next(t for t, n in watch.trace if n == chunks)
                    watch.synced = quiet_since
                    watch.doc = doc
                    return watch
            else:
                quiet_since, quiet_count = (now, chunks) if synced else (None, -1)
            if now > deadline:
                raise TimeoutError(
                    f"downstream holds {chunks} of {expected or 'its share of the'} chunks after "
                    f"{timeout:g}s (fully_synced {doc['fully_synced']}, {len(doc['peers'])} peers); "
                    f"see {node.data_dir / 'node.log'}"
                )
            time.sleep(first_interval if watch.first is None else interval)


def quiet_loss(stats: dict[str, int]) -> dict[str, int]:
    """The loss counters of one peer's stats that are not zero."""
    names = ("repeat", "unsolicited", "invalid", "missing", "resets")
    return {name: stats[name] for name in names if stats.get(name)}


def start_downstream(
    data_dir: Path, upstreams: Iterable[NodeProcess], extra: Iterable[str] = ()
) -> tuple[NodeProcess, SyncWatch]:
    node = NodeProcess(data_dir, peers=[u.p2p for u in upstreams], extra=extra)
    watch = SyncWatch(spawned=time.monotonic())
    node.start()
    watch.up = time.monotonic()
    return node, watch


@contextmanager
def py_spy(pid: int, output: str | None, *, native: bool = False) -> Iterator[None]:
    """Record a py-spy profile of ``pid`` (collapsed stacks, on-CPU only) while the body runs."""
    if not output:
        yield
        return
    exe = Path(sys.executable).with_name("py-spy")
    cmd = [str(exe), "record", "--pid", str(pid), "--format", "raw", "--rate", "250", "-o", output]
    cmd += ["--native"] if native else ["--nonblocking"]
    spy = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        interrupt(spy, 30)


def interrupt(proc: subprocess.Popen[Any], timeout: float) -> None:
    """Stop ``proc`` as Ctrl-C would (SIGINT), killing it if it is still running after ``timeout`` s."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# -- protocol arithmetic ------------------------------------------------------------------------


def want_frame_size() -> int:
    return len(encode(WantedHashes.from_indices(0, False, 1, BATCH, range(BATCH))))


def delivery_overhead() -> float:
    """Protocol bytes per full chunk delivered in a full `ChunkDeliveries` frame."""
    chunks = tuple(DeliveredChunk(i, bytes(CHUNK_BYTES)) for i in range(MAX_DELIVERY_BATCH))
    return (len(encode(ChunkDeliveries(0, False, 1, chunks))) - len(chunks) * CHUNK_BYTES) / len(chunks)


def historical_offers(cursors: Iterable[int]) -> int:
    """Offers an upstream with these bin cursors makes to cover every bin from 1, 128 IDs each."""
    return sum(-(-cursor // BATCH) for cursor in cursors)


def upstream_cursors(doc: dict[str, Any], overlay: str) -> list[int]:
    """Cursors of peer ``overlay``'s bins as the downstream last learned them."""
    for peer in doc["peers"]:
        if peer["overlay"] == overlay:
            cursors = [0] * BINS
            for entry in peer["bins"]:
                cursors[entry["bin"]] = entry["cursor"]
            return cursors
    raise KeyError(overlay)


def proof_bytes(serving: dict[str, Any], chunks: int) -> dict[str, Any]:
    """What provable streams added to the traffic between A and B, from A's counters of its
    offers to B (A's upstream side reports them: `serving.proof_bytes`)."""
    proof = serving["serving"].get("proof_bytes", {})
    into_b = proof.get("offers", 0) + proof.get("states", 0)
    out_of_b = proof.get("requests", 0) + proof.get("receipts", 0)
    return {
        "proof_bytes_in": into_b,
        "proof_bytes_out": out_of_b,
        "proof_bytes_per_chunk": round((into_b + out_of_b) / chunks, 2),
        "receipts": proof.get("receipt_count", 0),
    }


# -- the bench ----------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-sync-", dir=args.tmp))
    try:
        started = time.perf_counter()
        chunks = make_chunks(args.chunks, seed=args.seed)
        generate_s = time.perf_counter() - started
        ingest = ingest_rates(chunks, tmp, args.ingest_repeats)
        started = time.perf_counter()
        preload(tmp / "a", chunks)
        preload_s = time.perf_counter() - started
        del chunks
        load_before = load_average()
        channel = ["--channel", args.channel, "--provable-sync", args.provable_sync]
        with NodeProcess(tmp / "a", extra=channel) as a:
            cpu_a0 = cpu_seconds(pid_of(a))
            workers = [] if args.verify_workers is None else ["--verify-workers", str(args.verify_workers)]
            b, watch = start_downstream(tmp / "b", [a], [*workers, *channel])
            cpu_b_first: list[float] = []

            def note_first(watch: SyncWatch, doc: dict[str, Any]) -> None:
                if watch.first is not None and not cpu_b_first:
                    cpu_b_first.append(cpu_seconds(pid_of(b)) + workers_cpu_seconds(b))
                    cpu_b_first.append(doc["chunks"])

            with (
                b,
                py_spy(pid_of(b), args.py_spy, native=args.native),
                py_spy(pid_of(a), args.py_spy_a, native=args.native),
            ):
                watch_sync(
                    b, args.chunks, watch, timeout=args.timeout, interval=args.interval, on_sample=note_first
                )
                cpu_a, cpu_b = cpu_seconds(pid_of(a)) - cpu_a0, cpu_seconds(pid_of(b))
                cpu_b_workers = workers_cpu_seconds(b)
                verify_workers = b.sync()["verify_workers"]
                rss_b = proc_status_kb(pid_of(b), "VmHWM") / 1024
                a_doc = a.sync()
            events = {"a": log_events(a), "b": log_events(b)}
        doc = watch.doc
        stats = peer_stats(doc, a.overlay)
        assert watch.first is not None and watch.all_chunks is not None and watch.synced is not None
        sync_s = watch.all_chunks - watch.spawned
        steady_s = watch.all_chunks - watch.first
        payload_in = stats["payload_bytes_in"]
        wants = historical_offers(upstream_cursors(doc, a.overlay))
        want_bytes = wants * want_frame_size()
        reverse_bytes = stats["protocol_bytes_out"] - want_bytes
        a_serving_b = next(p for p in a_doc["peers"] if p["overlay"] == b.overlay)
        sync_rate = args.chunks / sync_s
        cpu_spent = cpu_b + cpu_b_workers - cpu_b_first[0]
        cpu_rate = (args.chunks - cpu_b_first[1]) / cpu_spent if cpu_spent > 0 else 0.0
        return {
            "chunks": args.chunks,
            "sync_s": round(sync_s, 3),
            "sync_chunks_per_s": round(sync_rate),
            "ingest_chunks_per_s": round(ingest["put_many"]),
            "ratio": round(sync_rate / ingest["put_many"], 3),
            "overhead": round(stats["protocol_bytes_in"] / payload_in, 5),
            "overhead_out": round(stats["protocol_bytes_out"] / payload_in, 5),
            "overhead_out_wants": round(want_bytes / payload_in, 5),
            "overhead_out_reverse": round(reverse_bytes / payload_in, 5),
            "headline_from": "B process spawn",
            "cpu_chunks_per_s": round(cpu_rate),
            "cpu_ratio": round(cpu_rate / ingest["cpu_put_many"], 3),
            "ingest_cpu_chunks_per_s": round(ingest["cpu_put_many"]),
            "sync_from_up_s": round(watch.all_chunks - watch.up, 3),
            "sync_from_first_s": round(steady_s, 3),
            "steady_chunks_per_s": round(args.chunks / steady_s) if steady_s > 0 else None,
            "quarter_chunks_per_s": watch.quarter_rates(args.chunks),
            "startup_s": round(watch.up - watch.spawned, 3),
            "first_chunk_s": round(watch.first - watch.spawned, 3),
            "fully_synced_s": round(watch.synced - watch.spawned, 3),
            "ingest_put_chunks_per_s": round(ingest["put"]),
            "ratio_vs_put": round(sync_rate / ingest["put"], 3),
            "payload_bytes_in": payload_in,
            "protocol_bytes_in": stats["protocol_bytes_in"],
            "protocol_bytes_out": stats["protocol_bytes_out"],
            "want_frames": wants,
            "delivery_overhead_per_chunk": round(delivery_overhead(), 2),
            "delivered": stats["delivered"],
            "repeat": stats["repeat"],
            "reverse_offered_hashes": a_serving_b["stats"]["offered"],
            "reverse_wanted": a_serving_b["stats"]["wanted"],
            "loss_b": quiet_loss(stats),
            "log": events,
            "cpu_a_s": round(cpu_a, 2),
            "cpu_b_s": round(cpu_b, 2),
            "cpu_b_workers_s": round(cpu_b_workers, 2),
            "verify_workers": verify_workers,
            "channel": args.channel,
            "provable_sync": args.provable_sync,
            **proof_bytes(a_serving_b, args.chunks),
            "proofs_a": {k: v for k, v in a_doc.get("proofs", {}).items() if k != "evidence"},
            "proofs_b": {k: v for k, v in doc.get("proofs", {}).items() if k != "evidence"},
            # B serving A (the reverse direction: A pulls every bin live from B)
            "reverse_proof_bytes": next(
                (p["serving"].get("proof_bytes", {}) for p in doc["peers"] if p["overlay"] == a.overlay), {}
            ),
            "peak_rss_b_mb": round(rss_b, 1),
            "polls": watch.samples,
            "loadavg_before": load_before,
            "loadavg_after": load_average(),
            "generate_s": round(generate_s, 2),
            "preload_s": round(preload_s, 2),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    os.environ.setdefault("SWARM_LOG_LEVEL", "INFO")  # the nodes log connects and disconnects
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--chunks", type=int, default=20_000, help="chunks preloaded into A (default 20000)")
    parser.add_argument("--seed", type=int, default=0, help="payload seed (default 0)")
    parser.add_argument("--timeout", type=float, default=600.0, help="give up after this (default 600 s)")
    parser.add_argument("--interval", type=float, default=0.1, help="/sync poll interval (default 0.1 s)")
    parser.add_argument("--tmp", default=None, help="parent of the temporary directory (default: system)")
    parser.add_argument(
        "--ingest-repeats", type=int, default=2, help="ingest passes per method, best counts (default 2)"
    )
    parser.add_argument(
        "--py-spy",
        metavar="FILE",
        default=None,
        help="profile B with py-spy (pip install py-spy) during the sync; collapsed stacks to FILE",
    )
    parser.add_argument(
        "--py-spy-a",
        metavar="FILE",
        default=None,
        help="profile A (the upstream serving B) the same way during the sync",
    )
    parser.add_argument("--native", action="store_true", help="with --py-spy: include native (C) frames")
    parser.add_argument(
        "--verify-workers",
        type=int,
        default=None,
        metavar="N",
        help="B's verifier worker processes (default: the node's own default, one per core)",
    )
    parser.add_argument(
        "--channel",
        choices=("tls", "plain", "both"),
        default="tls",
        help="both nodes' channel: tls (the default, as deployed) or plain (to measure what TLS costs); "
        "both: each run syncs over tls then plain, and the line compares their medians",
    )
    parser.add_argument(
        "--provable-sync",
        choices=("off", "sign", "verify"),
        default="verify",
        help="both nodes' provable streams: verify (the default, as deployed), sign, or off (to measure "
        "what they cost)",
    )
    parser.add_argument(
        "--runs", type=_positive, default=1, help="repeat the measurement, report every ratio (default 1)"
    )
    args = parser.parse_args()
    if args.channel == "both":
        print(json.dumps(compare_channels(args)))
        return
    results = [run(args) for _ in range(args.runs)]
    line = results[0]
    if args.runs > 1:
        line["runs"] = args.runs
        line["ratios"] = [r["ratio"] for r in results]
        line["sync_rates"] = [r["sync_chunks_per_s"] for r in results]
        line["ratio_median"] = statistics.median(line["ratios"])
        line["cpu_ratios"] = [r["cpu_ratio"] for r in results]
        line["cpu_ratio_median"] = statistics.median(line["cpu_ratios"])
    print(json.dumps(line))


def compare_channels(args: argparse.Namespace) -> dict[str, Any]:
    """Sync over TLS and over plain TCP alternately in one invocation (the machine's speed drifts
    between hours, so the two are compared within the same minutes); medians of each."""
    runs: dict[str, list[dict[str, Any]]] = {"tls": [], "plain": []}
    for _ in range(args.runs):
        for channel in runs:
            runs[channel].append(run(argparse.Namespace(**{**vars(args), "channel": channel})))

    def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
        per_chunk_us = [1e6 / r["cpu_chunks_per_s"] for r in results if r["cpu_chunks_per_s"]]
        return {
            "ratios": [r["ratio"] for r in results],
            "ratio_median": statistics.median(r["ratio"] for r in results),
            "sync_chunks_per_s_median": statistics.median(r["sync_chunks_per_s"] for r in results),
            "cpu_us_per_chunk_b_median": round(statistics.median(per_chunk_us), 1) if per_chunk_us else None,
            "cpu_a_s_median": statistics.median(r["cpu_a_s"] for r in results),
        }

    tls, plain = summary(runs["tls"]), summary(runs["plain"])
    return {
        "bench": "sync_channels",
        "chunks": args.chunks,
        "runs": args.runs,
        "provable_sync": args.provable_sync,
        "tls": tls,
        "plain": plain,
        "tls_rate_vs_plain": round(tls["sync_chunks_per_s_median"] / plain["sync_chunks_per_s_median"], 3),
        "loadavg_after": load_average(),
    }


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(text)


if __name__ == "__main__":
    main()
