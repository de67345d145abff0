"""Feed lookup: how long a node takes to find the latest of 1,000 updates, in a local swarm.

Starts ``--nodes`` `swarm node` processes (node 0 the bootnode), writes ``--updates`` sequence-feed
updates at node 0 (POST /soc, as `swarm feed update` and bee-js do), and times
``GET /feeds/{owner}/{topic}`` (the lookup of the latest index, bee's concurrent sequence finder,
then the content):

- ``lookup_local_s``: at node 0, which holds every update;
- ``lookup_remote_s``: at the last node, as soon as the writes are done (updates it does not hold
  yet are fetched through the swarm);
- ``lookup_synced_s``: at the last node once it holds them all.

Each is the median of ``--repeats`` lookups; the line also has every sample, the write rate and the
load average.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from chunks.ethkey import Secp256k1Key
from chunks.feeds import make_update_v1, topic_from_text, update_address
from swarm.testing import NodeProcess, poll


def timed_lookups(client: httpx.Client, api: str, path: str, repeats: int, expect: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        response = client.get(f"{api}{path}")
        samples.append(time.perf_counter() - started)
        assert response.status_code == 200, response.text
        assert int(response.headers["swarm-feed-index"], 16) == expect, response.headers
    return samples


def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-feed-"))
    nodes: list[NodeProcess] = []
    try:
        nodes.append(NodeProcess(tmp / "n0").start())
        for i in range(1, args.nodes):
            nodes.append(NodeProcess(tmp / f"n{i}", peers=[nodes[0].p2p]).start())
        poll(lambda: all(len(n.sync()["peers"]) >= 1 for n in nodes), timeout=60)
        key, topic = Secp256k1Key.generate(), topic_from_text("bench")
        path = f"/feeds/{key.owner.hex()}/{topic.hex()}?swarm-only-root-chunk=true"
        with httpx.Client(timeout=60) as client:
            started = time.perf_counter()
            for index in range(args.updates):
                soc = make_update_v1(key, topic, index, index.to_bytes(32, "big"), 1_700_000_000 + index)
                url = f"{nodes[0].api}/soc/{key.owner.hex()}/{soc.id.hex()}"
                response = client.post(url, params={"sig": soc.signature.hex()}, content=soc.wrapped)
                assert response.status_code == 201, response.text
            write_s = time.perf_counter() - started
            last = args.updates - 1
            remote = timed_lookups(client, nodes[-1].api, path, 1, last)
            local = timed_lookups(client, nodes[0].api, path, args.repeats, last)
            latest = update_address(key.owner, topic, last)
            held = f"{nodes[-1].api}/chunks/{latest.hex()}"
            poll(lambda: client.head(held).status_code == 200, timeout=120)
            poll(lambda: nodes[-1].sync()["fully_synced"], timeout=120)
            synced = timed_lookups(client, nodes[-1].api, path, args.repeats, last)
        return {
            "bench": "feed_lookup",
            "nodes": args.nodes,
            "updates": args.updates,
            "write_updates_per_s": round(args.updates / write_s, 1),
            "lookup_local_s": round(statistics.median(local), 4),
            "lookup_remote_s": round(remote[0], 4),
            "lookup_synced_s": round(statistics.median(synced), 4),
            "samples_local_s": [round(s, 4) for s in local],
            "samples_synced_s": [round(s, 4) for s in synced],
            "loadavg": os.getloadavg(),
        }
    finally:
        for node in nodes:
            node.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--nodes", type=int, default=4, help="nodes in the local swarm (default 4)")
    parser.add_argument("--updates", type=int, default=1000, help="feed updates written (default 1000)")
    parser.add_argument("--repeats", type=int, default=5, help="lookups per measurement (default 5)")
    print(json.dumps(run(parser.parse_args())))


if __name__ == "__main__":
    main()
