"""Chunker throughput: split 16 MiB of random bytes, then join them back through a dict.

Prints one JSON line: {"bytes", "split_mib_per_s", "join_mib_per_s"}. Joining verifies every
chunk (BMT hash), so both directions are dominated by hashing.
"""

from __future__ import annotations

import json
import os
import time

from chunks.chunk import Chunk
from swarm.files.chunker import Splitter
from swarm.files.joiner import join_sync

SIZE = 16 << 20
PIECE = 1 << 20


def main() -> None:
    data = os.urandom(SIZE)
    store: dict[bytes, Chunk] = {}

    started = time.perf_counter()
    splitter = Splitter()
    for i in range(0, SIZE, PIECE):
        for chunk in splitter.feed(data[i : i + PIECE]):
            store[chunk.address] = chunk
    root, rest = splitter.finish()
    store.update((chunk.address, chunk) for chunk in rest)
    split_s = time.perf_counter() - started

    started = time.perf_counter()
    joined = b"".join(join_sync(root, store.__getitem__))
    join_s = time.perf_counter() - started
    assert joined == data

    mib = SIZE / (1 << 20)
    print(
        json.dumps(
            {
                "bytes": SIZE,
                "split_mib_per_s": round(mib / split_s, 2),
                "join_mib_per_s": round(mib / join_s, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
