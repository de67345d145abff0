"""Retrieval in a swarm of `swarm node` processes, with hung peers, and upload-to-download time.

Starts ``--nodes`` nodes (default 8; node 0 the bootnode, node 1 dialling it, every later node
dialling both, gossip finding the rest; TLS as `swarm up` runs them, ``--verify-workers 0``),
their identities made from ``--seed`` with the overlays spread evenly (eight nodes: one under
each 3-bit prefix, so each has depth 1 and a chunk's neighbourhood is the four nodes of its half),
unless ``--random-identities``; waits until every node has at least ``min(nodes - 1, 6)``
connected peers, then:

- **retrieval with hung peers**: ``--per-scenario`` chunks for each of the scenarios with 0, 1 and
  2 hung peers are uploaded first, at node 0, in one file (``POST /bytes``, waiting for receipts),
  and the swarm is left to pull-sync them (until every node says it is fully synced: ``settled_s``,
  null if not within ``--timeout``, then the scenarios run anyway).
  For a scenario with ``h`` hung peers, the ``h`` nodes (never node 0) that are the closest node to
  the most of its chunks are SIGSTOPped (alive to TCP, silent); each chunk is then retrieved
  (``GET /chunks/{address}``) at a node that is not stopped and does not store it (``HEAD``), the
  one farthest from it; ``--concurrency`` retrievals are in flight at once, each timed on its own,
  from the request to the answer, found or not. The stopped nodes get SIGCONT after the scenario,
  and the swarm is left to reconnect before the next. Per scenario: ``p50_s``, ``p95_s`` and
  ``max_s`` of every retrieval's time, and ``found``, the share answered 200 with the right bytes.
- **upload to download**: ``--uploads`` files of ``--upload-kib`` KiB, each uploaded at a node in
  turn and, from the moment its 201 arrives, downloaded (``GET /bytes/REF``) at the node four
  along, asking again at once until it answers 200 with the right bytes (at most ``--timeout``
  seconds): ``upload_to_download_s`` is the median of those times, ``first_try`` the share
  complete at the first request.

Prints one JSON line. Every node process is killed on the way out (SIGCONT first), whatever
happens, SIGTERM included.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import random
import shutil
import signal
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

from chunks import Chunk
from chunks.keyfile import create_owner_only
from pot import proximity
from streamer.identity import NodeIdentity
from swarm.cli.common import int_in
from swarm.files.chunker import split_bytes
from swarm.testing import NodeProcess, poll

BASE_ARGS = ["--verify-workers", "0", "--cache-mib", "8"]
NETWORK_ID = 1  # swarm node's default
HUNG = (0, 1, 2)


def distance(a: bytes, b: bytes) -> bytes:
    """XOR distance, compared as bytes."""
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def spread_identities(count: int, seed: int) -> list[NodeIdentity]:
    """``count`` identities from seeds derived from ``seed``, their overlays spread evenly over the
    ``bits``-bit prefixes (one per prefix when ``count`` is a power of two): the same swarm shape,
    depths and neighbourhoods on every run."""
    bits = max(1, (count - 1).bit_length())
    wanted = sorted({i * (1 << bits) // count for i in range(count)})
    found: dict[int, NodeIdentity] = {}
    for counter in itertools.count():
        digest = hashlib.sha256(f"benches.retrieval {seed} {counter}".encode()).digest()
        identity = NodeIdentity.from_private_bytes(digest)
        prefix = identity.overlay(NETWORK_ID)[0] >> (8 - bits)
        if prefix in wanted:
            found.setdefault(prefix, identity)
        if len(found) == len(wanted):
            break
    return [found[prefix] for prefix in wanted]


def percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix="bench-retrieval-", dir=args.tmp))
        self.nodes: list[NodeProcess] = []
        self.overlays: list[bytes] = []

    # -- the swarm -------------------------------------------------------------------------------

    def start(self) -> None:
        if not self.args.random_identities:
            for i, identity in enumerate(spread_identities(self.args.nodes, self.args.seed)):
                (self.tmp / f"n{i}").mkdir()
                create_owner_only(self.tmp / f"n{i}" / "node.key", identity.private_bytes())
        hedge = ["--hedge-after", str(self.args.hedge_after)] if self.args.hedge_after else []
        args = [*BASE_ARGS, *hedge]
        first = NodeProcess(self.tmp / "n0", extra=args)
        self.nodes.append(first)
        first.start()
        second = NodeProcess(self.tmp / "n1", peers=[first.p2p], extra=args)
        self.nodes.append(second)
        second.start()
        rest = [
            NodeProcess(self.tmp / f"n{i}", peers=[first.p2p, second.p2p], extra=args)
            for i in range(2, self.args.nodes)
        ]
        self.nodes.extend(rest)  # listed before they start: close() finds every one
        with ThreadPoolExecutor(max(1, len(rest))) as pool:
            for started in [pool.submit(node.start) for node in rest]:
                started.result()
        self.overlays = [bytes.fromhex(node.overlay) for node in self.nodes]
        self.wait_connected()

    def wait_connected(self) -> None:
        want = min(len(self.nodes) - 1, 6)

        def connected() -> bool:
            try:
                return all(len(node.sync()["peers"]) >= want for node in self.nodes)
            except (httpx.HTTPError, ValueError):
                return False

        poll(connected, timeout=self.args.timeout, interval=0.2)

    def close(self) -> None:
        for node in self.nodes:
            if node.proc is not None and node.proc.poll() is None:
                node.proc.send_signal(signal.SIGCONT)
            node.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def signal_nodes(self, indices: Sequence[int], sig: signal.Signals) -> None:
        for i in indices:
            process = self.nodes[i].proc
            if process is not None and process.poll() is None:
                process.send_signal(sig)

    def holds(self, i: int, address: bytes) -> bool:
        return httpx.head(f"{self.nodes[i].api}/chunks/{address.hex()}", timeout=10).status_code == 200

    # -- retrieval with hung peers ---------------------------------------------------------------

    def upload(self, at: int, data: bytes) -> float:
        """POST /bytes at node ``at``; the moment its 201 arrived (time.monotonic)."""
        response = httpx.post(f"{self.nodes[at].api}/bytes", content=data, timeout=self.args.timeout)
        answered = time.monotonic()
        if response.status_code != 201:
            raise RuntimeError(f"upload at node {at} failed: {response.status_code} {response.text[:300]}")
        return answered

    def timed_get(self, i: int, chunk: Chunk) -> tuple[bool, float]:
        started = time.monotonic()
        try:
            response = httpx.get(
                f"{self.nodes[i].api}/chunks/{chunk.address.hex()}", timeout=self.args.timeout
            )
            found = response.status_code == 200 and response.content == chunk.data
        except httpx.HTTPError:
            found = False
        return found, time.monotonic() - started

    def scenario(self, hung: int, chunks: list[Chunk]) -> dict[str, Any]:
        closest = Counter(
            min(range(1, len(self.nodes)), key=lambda i: distance(self.overlays[i], chunk.address))
            for chunk in chunks
        )
        stopped = sorted(i for i, _ in closest.most_common(hung))
        jobs: list[tuple[int, Chunk]] = []
        for chunk in chunks:
            candidates = [
                i for i in range(len(self.nodes)) if i not in stopped and not self.holds(i, chunk.address)
            ]
            if candidates:
                far = min(candidates, key=lambda i: proximity(self.overlays[i], chunk.address))
                jobs.append((far, chunk))
        self.signal_nodes(stopped, signal.SIGSTOP)
        try:
            with ThreadPoolExecutor(self.args.concurrency) as pool:
                results = list(pool.map(lambda job: self.timed_get(*job), jobs))
        finally:
            self.signal_nodes(stopped, signal.SIGCONT)
        times = [seconds for _, seconds in results]
        return {
            "stopped": stopped,
            "retrievals": len(jobs),
            "skipped_held_everywhere": len(chunks) - len(jobs),
            "found": round(sum(found for found, _ in results) / len(results), 3) if results else None,
            "p50_s": round(statistics.median(times), 4) if times else None,
            "p95_s": round(percentile(times, 0.95), 4) if times else None,
            "max_s": round(max(times), 4) if times else None,
        }

    def settle(self) -> float | None:
        """Seconds until every node reports itself fully synced after the upload (None: not within
        --timeout), so that pull syncing does not run under the measurements."""
        started = time.monotonic()
        try:
            poll(lambda: all(node.sync()["fully_synced"] for node in self.nodes), timeout=self.args.timeout)
        except TimeoutError:
            return None
        return round(time.monotonic() - started, 2)

    # -- upload to download ----------------------------------------------------------------------

    def upload_to_download(self, k: int, data: bytes, reference: str) -> tuple[float, int]:
        """Seconds from the 201 at one node to the complete download at another, and requests made."""
        at = k % len(self.nodes)
        there = self.nodes[(at + 4) % len(self.nodes)]
        answered = self.upload(at, data)
        deadline = answered + self.args.timeout
        requests = 0
        with httpx.Client(timeout=self.args.timeout) as client:
            while True:
                requests += 1
                try:
                    response = client.get(f"{there.api}/bytes/{reference}")
                    if response.status_code == 200 and response.content == data:
                        return time.monotonic() - answered, requests
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"upload {k} did not download within {self.args.timeout:g}s")

    # -- the whole run ---------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        started = time.monotonic()
        self.start()
        rng = random.Random(self.args.seed)
        data = rng.randbytes(self.args.per_scenario * len(HUNG) * 4096)
        _, chunks = split_bytes(data)
        leaves = [chunk for chunk in chunks if len(chunk.data) == 8 + 4096][
            : self.args.per_scenario * len(HUNG)
        ]
        self.upload(0, data)
        settled_s = self.settle()
        scenarios = {}
        for n, hung in enumerate(HUNG):
            self.wait_connected()
            part = leaves[n * self.args.per_scenario : (n + 1) * self.args.per_scenario]
            scenarios[str(hung)] = self.scenario(hung, part)
        self.wait_connected()
        samples, first_try = [], 0
        for k in range(self.args.uploads):
            payload = rng.randbytes(self.args.upload_kib * 1024)
            reference = split_bytes(payload)[0].hex()
            seconds, requests = self.upload_to_download(k, payload, reference)
            samples.append(seconds)
            first_try += requests == 1
        return {
            "bench": "retrieval",
            "nodes": len(self.nodes),
            "peers": [len(node.sync()["peers"]) for node in self.nodes],
            "depths": [node.sync()["depth"] for node in self.nodes],
            "settled_s": settled_s,
            "concurrency": self.args.concurrency,
            "hedge_after": self.args.hedge_after,
            "hung": scenarios,
            "uploads": self.args.uploads,
            "upload_kib": self.args.upload_kib,
            "upload_to_download_s": round(statistics.median(samples), 4) if samples else None,
            "upload_to_download_max_s": round(max(samples), 4) if samples else None,
            "first_try": round(first_try / len(samples), 3) if samples else None,
            "samples_s": [round(s, 4) for s in samples],
            "elapsed_s": round(time.monotonic() - started, 1),
            "loadavg": os.getloadavg(),
        }


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through Bench.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int_in("a node count", 4, 64), default=8, help="(default 8)")
    parser.add_argument(
        "--per-scenario",
        type=int_in("a chunk count", 1, 10_000),
        default=40,
        help="chunks retrieved with 0, 1 and 2 hung peers each (default 40)",
    )
    parser.add_argument(
        "--concurrency",
        type=int_in("a request count", 1, 256),
        default=4,
        help="retrievals in flight (default 4)",
    )
    parser.add_argument(
        "--uploads",
        type=int_in("an upload count", 0, 1000),
        default=6,
        help="upload-to-download samples (default 6)",
    )
    parser.add_argument(
        "--upload-kib",
        type=int_in("a size in KiB", 1, 1 << 20),
        default=100,
        help="each upload (default 100 KiB)",
    )
    parser.add_argument(
        "--seed", type=int, default=25, help="seed of the payloads and identities (default 25)"
    )
    parser.add_argument(
        "--random-identities",
        action="store_true",
        help="new random node identities (default: from --seed, spread evenly over the address space)",
    )
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="bound on every wait and request (default 60 s)"
    )
    parser.add_argument(
        "--hedge-after",
        type=float,
        default=None,
        metavar="S",
        help="passed to every node (swarm node --hedge-after; default: the node's default)",
    )
    parser.add_argument("--tmp", default=None, help="parent of the temporary directory (default: system)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    bench = Bench(args)
    try:
        result = bench.run()
    finally:
        bench.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
