"""Provable streams (issue 16): what the bin logs cost on disk and in memory, and how fast proofs
are made and checked. Prints one JSON line.

- ``log``: ``--leaves`` random addresses (default 100,000) spread over the 32 bins as a node's are
  (half in bin 0, a quarter in bin 1, ...) appended to a pull index and its logs in batches of
  128 (as put_many does): the tree files' bytes per 100,000 leaves (and what other values of
  ``TREE_LEVEL`` would store), the frontiers' bytes in memory, the Python heap the logs hold
  (tracemalloc) and the process's RSS growth; appends per second; the time to rebuild the logs
  from the pull index (what an unclean stop costs).
- ``store``: put_many of ``--store-chunks`` real chunks (already verified) with and without logs:
  the store-side cost of keeping them.
- ``proofs_per_s``: audit paths (random leaf at the full size), consistency proofs (random sizes),
  historical offers' proofs (the compact range to the state at the end of a random subscription),
  state replies, signed states.
- ``checks_per_s``: RFC 6962 inclusion checks, consistency checks, a downstream's check of a
  128-entry historical offer and of a live offer (which includes one Ed25519 verification), and
  bare state signature checks.
- ``sync_proof_bytes_per_chunk``: the bytes provable streams add to a historical sync of the
  log's entries, offers of 128 from 1 up to each bin's cursor (hole masks, proof hashes, one state
  request and reply per bin, one receipt per batch), per chunk; and of live sync in offers of
  ``--live-batch`` entries.

Run `python -m benches.bmt` beside it and note the load: the VM's speed varies.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chunks.merkle import leaf_hash, verify_consistency, verify_inclusion
from localstore.binlog import TREE_LEVEL, BinLogs, stored_nodes
from localstore.pullindex import PullIndex, encode_entry
from localstore.store import LocalStore
from pot import MAX_PO
from streamer.codec import encode
from streamer.identity import NodeIdentity
from streamer.messages import ProvenOffer, StateRequest
from streamer.states import StateSigner, verify_state
from syncer.provable import ProvenLogs
from syncer.proving import proven_offer, state_reply

BINS = MAX_PO + 1
BATCH = 128


def bin_sizes(leaves: int) -> list[int]:
    """How a node's chunks spread over its bins: half in bin 0, a quarter in bin 1, ..."""
    sizes = [leaves >> (b + 1) for b in range(BINS)]
    sizes[0] += leaves - sum(sizes)
    return sizes


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def rate(fn: Callable[[], object], seconds: float = 1.0) -> float:
    """Calls per second of ``fn`` over about ``seconds`` (the median of three thirds)."""
    rates = []
    for _ in range(3):
        count, started = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - started) < seconds / 3:
            fn()
            count += 1
        rates.append(count / elapsed)
    return round(statistics.median(rates))


def build_log(directory: Path, leaves: int, rng: random.Random) -> tuple[PullIndex, BinLogs, dict[str, Any]]:
    sizes = bin_sizes(leaves)
    directory.mkdir(parents=True, exist_ok=True)
    index = PullIndex(str(directory), [0] * BINS)
    tracemalloc.start()
    before_heap = tracemalloc.get_traced_memory()[0]
    rss_before = rss_kb()
    logs = BinLogs(str(directory), index, [0] * BINS, rebuild=False)
    pending = [(b, n) for b, n in enumerate(sizes) if n]
    cursors = [0] * BINS
    started = time.perf_counter()
    appended = 0.0
    while pending:
        b, left = pending.pop(0)
        count = min(left, BATCH)
        addresses = [rng.randbytes(32) for _ in range(count)]
        index.append(
            b, cursors[b] + 1, [encode_entry(a, cursors[b] + i, 4104) for i, a in enumerate(addresses)]
        )
        t = time.perf_counter()
        logs.append(b, cursors[b] + 1, addresses)
        appended += time.perf_counter() - t
        cursors[b] += count
        if left > count:
            pending.append((b, left - count))
    build_s = time.perf_counter() - started
    heap = tracemalloc.get_traced_memory()[0] - before_heap
    tracemalloc.stop()
    stats = logs.statistics()
    per = 100_000 / leaves
    figures = {
        "leaves": leaves,
        "tree_level": TREE_LEVEL,
        "tree_bytes_per_100k": round(stats.tree_bytes * per),
        "tree_bytes_per_leaf": round(stats.tree_bytes / leaves, 2),
        "pull_index_bytes_per_100k": round(40 * leaves * per),
        "tree_bytes_per_100k_if_level": {
            level: round(32 * sum(stored_nodes(n >> level) for n in sizes) * per) for level in (0, 2, 4, 7)
        },
        "frontier_bytes": stats.frontier_bytes,
        "heap_bytes": heap,
        "rss_growth_kb": rss_kb() - rss_before,
        "appends_per_s": round(leaves / appended),
        "build_s": round(build_s, 2),
    }
    logs.close()
    index.close()
    index = PullIndex(str(directory), cursors)
    started = time.perf_counter()
    logs = BinLogs(str(directory), index, cursors, rebuild=True)
    figures["rebuild_s"] = round(time.perf_counter() - started, 2)
    return index, logs, figures


def store_cost(directory: Path, count: int) -> dict[str, Any]:
    """put_many of real chunks, verified already, with and without the logs."""
    from benches.sync import make_chunks

    chunks = make_chunks(count, seed=7)
    overlay = bytes(32)
    best: dict[bool, float] = {}
    for attempt in range(2):
        for logs in (True, False):
            path = directory / f"store-{logs}-{attempt}"
            with LocalStore(path, overlay, logs=logs) as store:
                started = time.perf_counter()
                for i in range(0, count, BATCH):
                    store.put_many(chunks[i : i + BATCH], verified=True)
                best[logs] = min(best.get(logs, 1e9), time.perf_counter() - started)
    return {
        "chunks": count,
        "writes_per_s_with_logs": round(count / best[True]),
        "writes_per_s_without": round(count / best[False]),
        "us_per_chunk_for_logs": round((best[True] - best[False]) / count * 1e6, 2),
    }


def proof_rates(logs: BinLogs, signer: StateSigner, rng: random.Random) -> dict[str, Any]:
    n = logs.size(0)
    state = signer.state(0, 1, n, logs.root(0))
    return {
        "audit_path": rate(lambda: logs.audit_path(0, rng.randrange(n), n)),
        "consistency": rate(lambda: logs.consistency(0, rng.randrange(1, n), n)),
        "historical_offer": rate(lambda: historical_offer(logs, 0, rng)),
        "state_reply": rate(lambda: state_reply(logs, StateRequest(0, n, rng.randrange(1, n)), state)),
        "signed_state": rate(lambda: signer.state(0, 1, n, logs.root(0, rng.randrange(1, n)))),
    }


def historical_offer(logs: BinLogs, bin: int, rng: random.Random, anchor: int | None = None) -> ProvenOffer:
    """The first offer of 128 entries of a historical subscription ending at ``anchor``."""
    n = logs.size(bin)
    anchor = anchor or rng.randrange(BATCH + 1, n + 1)
    start = rng.randrange(1, anchor - BATCH + 1)
    end = start + BATCH - 1
    addresses = [a for a, _ in logs.entries(bin, start, end)]
    return proven_offer(logs, bin, start, end, addresses, [], anchor=anchor, first=True)


def accepted(logs: BinLogs, signer: StateSigner, identity: NodeIdentity, size: int) -> ProvenLogs:
    """A downstream's view of the log that accepted our state at ``size`` (its latest)."""
    proven = ProvenLogs(signer.overlay, identity.public_key, 1)
    request = proven.request(0, size)
    proven.on_reply(state_reply(logs, request, signer.state(0, 1, size, logs.root(0, size))))
    return proven


def check_rates(logs: BinLogs, identity: NodeIdentity, rng: random.Random) -> dict[str, Any]:
    signer = StateSigner(identity, identity.overlay(1))
    n = logs.size(0)
    index = rng.randrange(n)
    leaf = leaf_hash(index + 1, logs.entries(0, index + 1, index + 1)[0][0])
    path, root = logs.audit_path(0, index, n), logs.root(0)
    a = n // 3
    proof, root_a = logs.consistency(0, a, n), logs.root(0, a)
    state = signer.state(0, 1, n, root)

    anchor = rng.randrange(BATCH + 1, n + 1)
    offer = historical_offer(logs, 0, rng, anchor)
    history = accepted(logs, signer, identity, anchor)

    def check_historical() -> None:
        history.subscribe(0, False, offer.start, anchor)
        history.check_offer(offer)
        history.unsubscribe(0, False)

    before = n - BATCH
    addresses = [x for x, _ in logs.entries(0, before + 1, n)]
    live = proven_offer(logs, 0, before + 1, n, addresses, [], live_state=state)
    streaming = accepted(logs, signer, identity, before)
    entry = streaming._bins[0]  # the bench puts the state back after each check (not an API)
    latest, frontier = entry.latest, entry.frontier

    def check_live() -> None:
        assert frontier is not None
        entry.latest, entry.frontier = latest, frontier.copy()
        streaming.subscribe(0, True, before + 1, 0)
        streaming.check_offer(live)
        streaming.unsubscribe(0, True)

    return {
        "inclusion": rate(lambda: verify_inclusion(leaf, index, n, path, root)),
        "consistency": rate(lambda: verify_consistency(a, root_a, n, root, proof)),
        "historical_offer_128": rate(check_historical),
        "live_offer_128": rate(check_live),
        "state_signature": rate(lambda: verify_state(identity.public_key, signer.overlay, state)),
    }


def sync_bytes(logs: BinLogs, live_batch: int) -> dict[str, Any]:
    """Bytes provable streams add to syncing every bin from 1 (and, live, in batches)."""
    identity = NodeIdentity.generate()
    signer = StateSigner(identity, identity.overlay(1))
    extra = 0
    chunks = 0
    for bin in range(BINS):
        n = logs.size(bin)
        if not n:
            continue
        chunks += n
        reply = state_reply(logs, StateRequest(bin, n, 0), signer.state(bin, 1, n, logs.root(bin)))
        extra += len(encode(StateRequest(bin, n, 0))) + len(encode(reply))
        for start in range(1, n + 1, BATCH):
            end = min(n, start + BATCH - 1)
            offer = proven_offer(
                logs, bin, start, end, [bytes(32)] * (end - start + 1), [], anchor=n, first=start == 1
            )
            extra += 16 + 1 + 32 * (len(offer.left) + len(offer.right)) + 126  # mask, proof, receipt
    live = 16 + 8 + 32 + 64 + 126  # mask, signed state, receipt: per live offer
    return {
        "historical": round(extra / chunks, 2),
        "live": round(live / live_batch, 2),
        "live_batch": live_batch,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--leaves", type=int, default=100_000)
    parser.add_argument("--store-chunks", type=int, default=20_000)
    parser.add_argument("--live-batch", type=int, default=16, help="entries per live offer (default 16)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    load = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory(prefix="bench-proofs-") as tmp:
        index, logs, log_figures = build_log(Path(tmp) / "log", args.leaves, rng)
        try:
            identity = NodeIdentity.generate()
            line = {
                "log": log_figures,
                "proofs_per_s": proof_rates(logs, StateSigner(identity, identity.overlay(1)), rng),
                "checks_per_s": check_rates(logs, identity, rng),
                "sync_proof_bytes_per_chunk": sync_bytes(logs, args.live_batch),
            }
        finally:
            logs.close()
            index.close()
        line["store"] = store_cost(Path(tmp), args.store_chunks)
    line["loadavg"] = {"before": load, "after": round(os.getloadavg()[0], 2)}
    print(json.dumps(line))


if __name__ == "__main__":
    main()
