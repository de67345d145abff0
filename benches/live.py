"""Live propagation through a 6-node swarm of `swarm node` processes: latency, throughput, duplicates.

Starts ``--nodes`` nodes (a local swarm: node 0 the bootnode, gossip on, TLS, as `swarm up` runs
them), waits until every node knows every other, then follows one feed at every node but node 0
(``GET /live/feeds/...``, server-sent events, read by this process) and publishes its updates at
node 0 (``POST /live/feeds/...``, signed here):

- **latency**: ``--latency`` updates one at a time, ``--gap`` seconds apart; for each, the time
  from just before the POST to the moment each follower's stream delivers it (all on one machine,
  one clock): ``latency_ms`` median and p95 over every (update, follower).
- **throughput**: ``--burst`` updates posted as fast as ``--concurrency`` clients can, timed from
  the first POST until every follower has shown the last one, in order: ``updates_per_s``.
- **duplicates**: every node's ``/loss`` traffic after both: ``received`` (pushes that reached a
  node, repeats included) / ``accepted`` (new ones): ``messages_per_unique`` and the same in
  bytes. With Kademlia's bins a small swarm is a full mesh, and a relay pushes to every peer that
  wants a stream, so each follower hears an update from several peers until it has paused all but
  ``--eager`` of them (`swarm node --live-eager`, docs/live.md "Pruning"); ``pauses``, ``resumes``
  and ``pruned`` (pushes not sent) say how much that did.

Also reported: what the followers lost or filled, the uptime load and a ``benches.bmt`` figure
for context (``--no-bmt`` skips it). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import trio

from chunks.ethkey import Secp256k1Key
from chunks.feeds import make_update_v2
from swarm.cli.localswarm import LocalSwarm
from swarm.live.pruning import DEFAULT_EAGER

TOPIC = b"\x6c" * 32


def load() -> float:
    return os.getloadavg()[0]


def bmt_figure() -> Any:
    out = subprocess.run([sys.executable, "-m", "benches.bmt"], capture_output=True, text=True, timeout=300)
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def wait_meshed(apis: list[str], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        counts = [len(httpx.get(f"{api}/sync", timeout=10).json()["peers"]) for api in apis]
        if all(c >= min(len(apis) - 1, 4) for c in counts):
            return
        time.sleep(0.5)
    raise RuntimeError(f"the swarm did not connect within {timeout:g}s: {counts}")


class Followers:
    """One SSE stream per node, recording when each update index arrived."""

    def __init__(self, apis: list[str], owner: bytes) -> None:
        self.apis = apis
        self.url = f"/live/feeds/{owner.hex()}/{TOPIC.hex()}"
        self.arrived: list[dict[int, float]] = [{} for _ in apis]
        self.order_ok = True
        self.started = 0

    async def follow(self, i: int, task_status: trio.TaskStatus[None]) -> None:
        async with (
            httpx.AsyncClient(base_url=self.apis[i], timeout=httpx.Timeout(10, read=None)) as client,
            client.stream("GET", self.url, params={"from": "0"}) as response,
        ):
            name, last = "", -1
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: ") and name == "start":
                    self.started += 1
                    task_status.started()
                elif line.startswith("data: ") and name == "update":
                    index = json.loads(line[6:])["index"]
                    self.arrived[i][index] = time.perf_counter()
                    self.order_ok &= index == last + 1
                    last = index

    def have(self, index: int) -> bool:
        return all(index in arrived for arrived in self.arrived)


async def publish(client: httpx.AsyncClient, key: Secp256k1Key, index: int) -> None:
    data = make_update_v2(key, TOPIC, index, f"update {index}".encode()).data
    response = await client.post(f"/live/feeds/{key.owner.hex()}/{TOPIC.hex()}/{index}", content=data)
    if response.status_code != 201:
        raise RuntimeError(f"publishing {index}: {response.status_code} {response.text}")


async def measure(apis: list[str], args: argparse.Namespace) -> dict[str, Any]:
    key = Secp256k1Key.generate()
    followers = Followers(apis[1:], key.owner)
    result: dict[str, Any] = {}
    async with trio.open_nursery() as nursery:
        for i in range(len(followers.apis)):
            await nursery.start(followers.follow, i)
        with trio.fail_after(60):
            while followers.started < len(followers.apis):
                await trio.sleep(0.05)
            async with httpx.AsyncClient(base_url=apis[0]) as probe:
                while (await probe.get("/loss")).json()["interest"]["relayed"] < 1:
                    await trio.sleep(0.1)
            await trio.sleep(1.0)  # let interest settle everywhere
        async with httpx.AsyncClient(base_url=apis[0], timeout=30) as client:
            latencies: list[float] = []
            for index in range(args.latency):
                sent = time.perf_counter()
                await publish(client, key, index)
                with trio.fail_after(30):
                    while not followers.have(index):
                        await trio.sleep(0.001)
                latencies += [arrived[index] - sent for arrived in followers.arrived]
                await trio.sleep(args.gap)
            first, last = args.latency, args.latency + args.burst - 1
            queue_in, queue_out = trio.open_memory_channel[int](args.burst)
            for index in range(first, last + 1):
                queue_in.send_nowait(index)
            queue_in.close()

            async def worker() -> None:
                async for index in queue_out:
                    await publish(client, key, index)

            started = time.perf_counter()
            async with trio.open_nursery() as posting:
                for _ in range(args.concurrency):
                    posting.start_soon(worker)
            posted = time.perf_counter() - started
            with trio.fail_after(120):
                while not followers.have(last):
                    await trio.sleep(0.005)
            elapsed = max(arrived[last] for arrived in followers.arrived) - started
        latencies.sort()
        result["latency_ms"] = {
            "median": round(1000 * statistics.median(latencies), 2),
            "p95": round(1000 * latencies[int(0.95 * (len(latencies) - 1))], 2),
            "max": round(1000 * latencies[-1], 2),
            "samples": len(latencies),
        }
        result["updates_per_s"] = round(args.burst / elapsed, 1)
        result["post_per_s"] = round(args.burst / posted, 1)
        result["in_order"] = followers.order_ok
        nursery.cancel_scope.cancel()
    return result


def duplicates(apis: list[str]) -> dict[str, Any]:
    docs = [httpx.get(f"{api}/loss", timeout=10).json() for api in apis]
    received = sum(d["traffic"]["received"] for d in docs)
    accepted = sum(d["traffic"]["accepted"] for d in docs)
    bytes_received = sum(d["traffic"]["bytes_received"] for d in docs)
    bytes_accepted = sum(d["traffic"]["bytes_accepted"] for d in docs)
    return {
        "received": received,
        "accepted": accepted,
        "messages_per_unique": round(received / accepted, 2) if accepted else None,
        "bytes_per_unique": round(bytes_received / bytes_accepted, 2) if bytes_accepted else None,
        "msg_loss": sum(d["totals"]["msg_loss"] for d in docs),
        "gaps_filled": sum(d["totals"]["gaps_filled"] for d in docs),
        "dropped": sum(d["traffic"]["dropped"] for d in docs),
        "pruned": sum(d["traffic"]["pruned"] for d in docs),
        "pauses": sum(d["pruning"]["pauses_sent"] for d in docs),
        "resumes": sum(d["pruning"]["resumes_sent"] for d in docs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=6)
    parser.add_argument("--latency", type=int, default=100, help="updates published one at a time")
    parser.add_argument("--gap", type=float, default=0.05, help="seconds between them")
    parser.add_argument("--burst", type=int, default=1000, help="updates published as fast as possible")
    parser.add_argument("--concurrency", type=int, default=8, help="clients posting the burst")
    parser.add_argument(
        "--eager", type=int, default=DEFAULT_EAGER, help="swarm node --live-eager (0: no pruning)"
    )
    parser.add_argument("--no-bmt", action="store_true")
    args = parser.parse_args()
    result: dict[str, Any] = {
        "nodes": args.nodes,
        "followers": args.nodes - 1,
        "eager": args.eager,
        "load_before": load(),
    }
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        node_args = ["--live-eager", str(args.eager)]
        swarm = LocalSwarm(
            Path(tmp), args.nodes, base_port=0, node_args=node_args, restart=False, say=lambda line: None
        )
        swarm.start()
        try:
            apis = [f"http://127.0.0.1:{m.api_port}" for m in swarm.members]
            wait_meshed(apis)
            result.update(trio.run(measure, apis, args))
            result["duplicates"] = duplicates(apis)
        finally:
            problems = swarm.stop()
        result["clean_stop"] = not problems
    result["load_after"] = load()
    if not args.no_bmt:
        result["bmt"] = bmt_figure()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
