"""BMT hashing speed: the naive reference over pycryptodome vs the production hasher.

Hashes full 4 KiB random payloads (the worst case: 128 Keccak calls each) and prints one JSON line:
{"naive_chunks_per_s", "chunks_per_s", "speedup", "backend", "fallback_chunks_per_s"}.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable

from chunks.bmt import KECCAK_BACKEND, bmt_address, bmt_address_pycryptodome
from chunks.bmt_reference import reference_bmt_address


def chunks_per_second(hasher: Callable[[bytes], bytes], payloads: list[bytes], repeats: int) -> float:
    """Best of ``repeats`` passes over ``payloads`` (the least disturbed by other load)."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for payload in payloads:
            hasher(payload)
        best = min(best, time.perf_counter() - started)
    return len(payloads) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=2000, help="full 4 KiB payloads per timed pass")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per hasher (best counts)")
    args = parser.parse_args()
    payloads = [os.urandom(4096) for _ in range(args.chunks)]
    assert all(bmt_address(p) == reference_bmt_address(p) for p in payloads[:20])
    naive = chunks_per_second(reference_bmt_address, payloads, args.repeats)
    fast = chunks_per_second(bmt_address, payloads, args.repeats)
    fallback = chunks_per_second(bmt_address_pycryptodome, payloads, args.repeats)
    print(
        json.dumps(
            {
                "naive_chunks_per_s": round(naive),
                "chunks_per_s": round(fast),
                "speedup": round(fast / naive, 2),
                "backend": KECCAK_BACKEND,
                "fallback_chunks_per_s": round(fallback),
            }
        )
    )


if __name__ == "__main__":
    main()
