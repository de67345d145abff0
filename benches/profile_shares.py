"""Where a node's CPU goes, from a py-spy profile: the share of samples per part of the node.

Reads the raw (collapsed) stacks that ``--py-spy FILE`` of ``benches.sync`` and
``benches.reserve`` writes and files each sample under the first part (in the order of
:data:`PARTS`) that its innermost matching frame belongs to: TLS, signatures, BMT hashing,
proofs, verifier IPC, the store, framing, socket I/O, the HTTP API, sync sessions, push sync,
the chunker, trio's scheduling. Waiting (trio's epoll wait, idle worker threads) is counted
apart, and every other share is also given as a share of the busy samples. A flush (``fsync``)
is mostly waiting for the disk in a worker thread, not CPU. Prints one JSON line:
{"samples", "busy", "parts": {part: share of busy samples}}.

    python -m benches.profile_shares FILE
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

IDLE = "idle"
PARTS: list[tuple[str, tuple[str, ...]]] = [
    (IDLE, ("_io_epoll.py:243", "_thread_cache.py:211")),
    ("fsync (flush for signed states)", ("PullIndex.sync", "LocalStore.make_durable")),
    ("TLS", ("ssl.py", "trio/_ssl.py")),
    ("signatures", ("identity.py", "Crypto/", "cryptography", "eddsa")),
    ("BMT hashing", ("chunks/bmt.py",)),
    (
        "proofs",
        (
            *("chunks/merkle.py", "syncer/provable.py", "syncer/proving.py", "syncer/proof_store.py"),
            *("localstore/binlog", "syncer/signing.py", "syncer/receipts.py", "streamer/states.py"),
        ),
    ),
    ("verifier IPC", ("syncer/verifier.py", "syncer/verify_worker.py", "_unix_pipes.py")),
    ("store", ("localstore/",)),
    ("framing and codec", ("streamer/framing.py", "streamer/codec.py", "streamer/wire/")),
    ("socket I/O", ("trio/_socket.py", "_highlevel_socket.py")),
    ("HTTP API", ("json/", "starlette", "hypercorn", "h11", "swarm/api/")),
    ("sync sessions", ("syncer/",)),
    ("push sync", ("swarm/net/push", "swarm/reserve/pusher.py", "push_receipts.py")),
    ("chunker", ("swarm/files/",)),
    ("trio scheduling", ("trio/",)),
]


def part_of(frames: list[str]) -> str:
    for frame in reversed(frames):
        for part, keys in PARTS:
            if any(key in frame for key in keys):
                return part
    return "other"


def shares(lines: list[str]) -> dict[str, object]:
    counts: Counter[str] = Counter()
    for line in lines:
        stack, _, count = line.rstrip().rpartition(" ")
        if stack:
            counts[part_of(stack.split(";"))] += int(count)
    total = sum(counts.values())
    busy = total - counts[IDLE]
    parts = {part: round(n / busy, 3) for part, n in counts.most_common() if part != IDLE and busy}
    return {"samples": total, "busy": round(busy / total, 3) if total else 0.0, "parts": parts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("file", help="raw py-spy output (collapsed stacks)")
    args = parser.parse_args()
    with open(args.file) as f:
        print(json.dumps(shares(f.readlines())))


if __name__ == "__main__":
    main()
