"""Redundant transfer when several upstreams offer the same content ("one transfer per chunk").

Preloads the same ``--chunks`` full 4 KiB chunks into ``--upstreams`` data directories (each its
own identity, so each has its own overlay and bins), starts those nodes, then one downstream with
``--peer`` to all of them, and polls its ``/sync`` until it is fully synced with all of them and
its chunk count has settled.

With 4 peers the downstream's depth may rise above 0 (``neighbourhood_size`` 3), and then the sync
rule has it keep only part of the content: bin ``p`` of a peer at PO ``p < depth``, bins ``>= depth``
of a neighbour. (While fewer peers are connected, depth is 0 and it pulls every bin, so it may keep
more than the rule asks for; what it has stored stays.) So the denominator is what it stored.

Prints one JSON line: ``redundancy`` = chunk payload bytes the downstream received (sum of
``payload_bytes_in`` over its upstreams) / unique payload bytes stored (chunks stored * 4104);
``delivered_per_peer`` = chunks each upstream delivered (in the order of ``--peer``); ``seconds``
from spawning the downstream until it is fully synced; ``depth`` its final depth; ``rule_chunks``
how many of the chunks the sync rule at that depth assigns it, and ``rule_missing`` how many of
those it does not hold (checked with ``HEAD /chunks/{address}``, which reads the local store only).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benches.sync import (
    CHUNK_BYTES,
    log_events,
    make_chunks,
    peer_stats,
    quiet_loss,
    start_downstream,
    watch_sync,
)
from kademlia import sync_bins
from localstore.storefiles import MAX_BIN
from pot import proximity
from swarm.testing import NodeProcess, preload


def rule_share(addresses: list[bytes], doc: dict[str, Any]) -> list[bytes]:
    """The addresses the sync rule at the downstream's final depth has it pull from its peers."""
    depth = doc["depth"]
    pulls = []
    for peer in doc["peers"]:
        overlay = bytes.fromhex(peer["overlay"])
        pulls.append((overlay, set(sync_bins(peer["po"], depth))))
    return [
        address
        for address in addresses
        if any(min(proximity(overlay, address), MAX_BIN) in bins for overlay, bins in pulls)
    ]


def missing_locally(node: NodeProcess, addresses: list[bytes]) -> int:
    with httpx.Client(base_url=node.api, timeout=10) as client:
        return sum(client.head(f"/chunks/{a.hex()}").status_code != 200 for a in addresses)


def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-redundancy-", dir=args.tmp))
    try:
        chunks = make_chunks(args.chunks, seed=args.seed)
        addresses = [chunk.address for chunk in chunks]
        for i in range(args.upstreams):
            preload(tmp / f"up{i}", chunks)
        del chunks
        with contextlib.ExitStack() as stack:
            ups = [stack.enter_context(NodeProcess(tmp / f"up{i}")) for i in range(args.upstreams)]
            down, watch = start_downstream(tmp / "down", ups)
            stack.enter_context(down)
            watch_sync(down, None, watch, timeout=args.timeout, interval=args.interval, peers=args.upstreams)
            share = rule_share(addresses, watch.doc)
            rule_missing = missing_locally(down, share)
        events = log_events(down)
        assert watch.synced is not None
        doc = watch.doc
        stats = [peer_stats(doc, up.overlay) for up in ups]
        received = sum(s["payload_bytes_in"] for s in stats)
        stored = doc["chunks"]
        loss: dict[str, int] = {}
        for s in stats:
            for name, value in quiet_loss(s).items():
                loss[name] = loss.get(name, 0) + value
        return {
            "upstreams": args.upstreams,
            "chunks": args.chunks,
            "redundancy": round(received / (stored * CHUNK_BYTES), 5) if stored else None,
            "delivered_per_peer": [s["delivered"] for s in stats],
            "seconds": round(watch.synced - watch.spawned, 3),
            "stored": stored,
            "depth": doc["depth"],
            "peer_po": [next(p["po"] for p in doc["peers"] if p["overlay"] == up.overlay) for up in ups],
            "rule_chunks": len(share),
            "rule_missing": rule_missing,
            "offered_per_peer": [s["offered"] for s in stats],
            "wanted_per_peer": [s["wanted"] for s in stats],
            "loss": loss,
            "payload_bytes_in_total": doc["totals"]["payload_bytes_in"],
            "log": events,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--upstreams", type=int, default=4, help="upstream nodes (default 4)")
    parser.add_argument("--chunks", type=int, default=5_000, help="chunks each upstream holds (default 5000)")
    parser.add_argument("--seed", type=int, default=0, help="payload seed (default 0)")
    parser.add_argument("--timeout", type=float, default=600.0, help="give up after this (default 600 s)")
    parser.add_argument("--interval", type=float, default=0.1, help="/sync poll interval (default 0.1 s)")
    parser.add_argument("--tmp", default=None, help="parent of the temporary directory (default: system)")
    args = parser.parse_args()
    os.environ.setdefault("SWARM_LOG_LEVEL", "INFO")  # the nodes log connects and disconnects
    started = time.perf_counter()
    result = run(args)
    result["bench_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
