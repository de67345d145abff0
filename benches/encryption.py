"""Encrypted files against plain ones: splitting (upload side) and joining (download side).

Splits the same random file with the plain splitter and with Bee's chunk encryption
(swarm.files.encryption), then joins both back from a dict, verifying every chunk (and
decrypting it); prints one JSON line: {"mib", "plain_split_mib_s", "encrypted_split_mib_s",
"plain_join_mib_s", "encrypted_join_mib_s", "encrypted_chunks", "plain_chunks"}.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from chunks import Chunk
from swarm.files.chunker import Splitter
from swarm.files.encryption import EncryptingSeal, open_encrypted
from swarm.files.joiner import join_sync

T = TypeVar("T")


def split(data: bytes, encrypt: bool) -> tuple[bytes, dict[bytes, Chunk]]:
    splitter = Splitter(EncryptingSeal() if encrypt else None)
    chunks = splitter.feed(data)
    root, rest = splitter.finish()
    return root, {c.address: c for c in chunks + rest}


def timed(work: Callable[[], T]) -> tuple[float, T]:
    started = time.perf_counter()
    value = work()
    return time.perf_counter() - started, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=8, help="size of the file, MiB")
    args = parser.parse_args()
    data = os.urandom(args.mib * 2**20)
    out: dict[str, float | int] = {"mib": args.mib}
    for name, encrypt in (("plain", False), ("encrypted", True)):
        seconds, (root, store) = timed(partial(split, data, encrypt))
        out[f"{name}_split_mib_s"] = round(args.mib / seconds, 2)
        seconds, joined = timed(partial(join_all, root, store))
        assert joined == data
        out[f"{name}_join_mib_s"] = round(args.mib / seconds, 2)
        out[f"{name}_chunks"] = len(store)
    print(json.dumps(out))


def join_all(root: bytes, store: dict[bytes, Chunk]) -> bytes:
    def fetch(ref: bytes) -> Chunk:
        return open_encrypted(store[ref[:32]], ref) if len(ref) == 64 else store[ref]

    return b"".join(join_sync(root, fetch))


if __name__ == "__main__":
    main()
