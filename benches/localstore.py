"""LocalStore speed: put one by one vs put_many in batches (both including verification), and get.

Makes ``--chunks`` random full 4 KiB chunks in advance, stores them into a fresh temporary store
with put(), and again into another fresh store with put_many() in batches of ``--batch``, then
reads every chunk back from it in random order, checks every slot as the upstream does before
offering a chunk, and looks up as many absent addresses (what most offered hashes are to a
downstream). Then reopens that store as after a clean close, and again after deleting its address
index, as after a crash, which rebuilds it from the pull index. Last, what checking a slot's data
on read would cost per 4 KiB chunk with each candidate, over 128 distinct chunks as a batch of
reads or writes touches them: the XXH3-64 the slots keep, CRC-32 (zlib), BLAKE2b-8, and the
chunk's BMT address (localstore/chunkfile.py says why XXH3).
Prints one JSON line: {"chunks", "puts_per_s", "put_many_per_s", "verify_per_s",
"write_only_per_s" (put_many into a third store with Chunk.verify replaced by a no-op in this
process: the store's own cost), "gets_per_s" (each checks the slot's checksum), "checks_per_s"
(check_slot), "misses_per_s", "open_s", "rebuild_open_s", "checksum_us": {"xxh3", "crc32",
"blake2b8", "bmt"}, "batch", "backend", "load" (the 1-minute load average at the start)}.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import random
import tempfile
import time
import timeit
import zlib
from collections.abc import Callable

from chunks import KECCAK_BACKEND, Chunk
from localstore.addressindex import INDEX_FILE_NAME
from localstore.chunkfile import checksum
from localstore.store import LocalStore


def checksum_costs(chunks: list[Chunk]) -> dict[str, float]:
    """Microseconds per chunk to check ``chunks``' data by each candidate (best of 5 runs)."""
    pairs = [(chunk.address, chunk.data) for chunk in chunks]

    def over_all(check: Callable[[bytes, bytes], object]) -> Callable[[], None]:
        def run() -> None:
            for address, data in pairs:
                check(address, data)

        return run

    candidates = {
        "xxh3": over_all(checksum),
        "crc32": over_all(lambda address, data: zlib.crc32(data, zlib.crc32(address))),
        "blake2b8": over_all(lambda address, data: hashlib.blake2b(address + data, digest_size=8).digest()),
        "bmt": over_all(lambda address, data: Chunk(address, data).verify()),
    }
    costs = {}
    for name, run in candidates.items():
        number = 1 if name == "bmt" else 50
        best = min(timeit.repeat(run, number=number, repeat=5))
        costs[name] = round(best / number / len(pairs) * 1e6, 2)
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=100_000, help="chunks to store (default 100000)")
    parser.add_argument("--batch", type=int, default=128, help="put_many batch size (default 128)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    chunks = [Chunk.from_payload(os.urandom(4096)) for _ in range(args.chunks)]
    overlay = os.urandom(32)

    started = time.perf_counter()
    for chunk in chunks:
        chunk.verify()
    verify_s = time.perf_counter() - started

    with tempfile.TemporaryDirectory(prefix="bench-localstore-") as tmp:
        with LocalStore(os.path.join(tmp, "put"), overlay) as store:
            started = time.perf_counter()
            for chunk in chunks:
                store.put(chunk)
            put_s = time.perf_counter() - started
            assert len(store) == len(chunks)
        with LocalStore(os.path.join(tmp, "put_many"), overlay) as store:
            started = time.perf_counter()
            for i in range(0, len(chunks), args.batch):
                store.put_many(chunks[i : i + args.batch])
            put_many_s = time.perf_counter() - started
            assert len(store) == len(chunks)
            addresses = [chunk.address for chunk in chunks]
            random.Random(0).shuffle(addresses)
            started = time.perf_counter()
            for address in addresses:
                store.get(address)
            get_s = time.perf_counter() - started
            started = time.perf_counter()
            for address in addresses:
                store.check_slot(address)
            check_s = time.perf_counter() - started
            absent = [os.urandom(32) for _ in addresses]
            started = time.perf_counter()
            for address in absent:
                store.has(address)
            miss_s = time.perf_counter() - started
        verify = Chunk.verify
        Chunk.verify = lambda self: None  # type: ignore[method-assign]
        try:
            with LocalStore(os.path.join(tmp, "write_only"), overlay) as store:
                started = time.perf_counter()
                for i in range(0, len(chunks), args.batch):
                    store.put_many(chunks[i : i + args.batch])
                write_only_s = time.perf_counter() - started
        finally:
            Chunk.verify = verify  # type: ignore[method-assign]
        started = time.perf_counter()
        with LocalStore(os.path.join(tmp, "put_many"), overlay) as store:
            open_s = time.perf_counter() - started
        pathlib.Path(tmp, "put_many", INDEX_FILE_NAME).unlink()
        started = time.perf_counter()
        with LocalStore(os.path.join(tmp, "put_many"), overlay) as store:
            rebuild_s = time.perf_counter() - started
            assert len(store) == len(chunks)
    costs = checksum_costs(chunks[:128])

    print(
        json.dumps(
            {
                "chunks": len(chunks),
                "puts_per_s": round(len(chunks) / put_s),
                "put_many_per_s": round(len(chunks) / put_many_s),
                "verify_per_s": round(len(chunks) / verify_s),
                "write_only_per_s": round(len(chunks) / write_only_s),
                "gets_per_s": round(len(chunks) / get_s),
                "checks_per_s": round(len(chunks) / check_s),
                "misses_per_s": round(len(chunks) / miss_s),
                "open_s": round(open_s, 3),
                "rebuild_open_s": round(rebuild_s, 3),
                "checksum_us": costs,
                "batch": args.batch,
                "backend": KECCAK_BACKEND,
                "load": round(load, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
