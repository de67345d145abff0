"""Single-owner chunk validation speed beside content-chunk (BMT) validation.

Every figure is ``Chunk.verify()`` calls per second on one core, best of ``--repeats`` passes:

- ``cac_full_per_s``: content chunks with full 4096-byte payloads (the BMT baseline: 128 Keccaks);
- ``soc_full_per_s``: SOCs with full payloads (4201 bytes: BMT of the wrapped chunk, then the
  secp256k1 public-key recovery);
- ``soc_feed_update_per_s``: v1 feed updates (a 40-byte payload, 145 bytes of data), which
  ``verify`` first hashes as a content chunk (it fails) and then checks as a SOC: what a feed
  update costs on the sync path;
- ``recover_per_s``: the recovery alone (libsecp256k1 through coincurve);
- ``sign_per_s``: ``make_soc`` of a feed update (BMT + signature).

Prints one JSON line. Run ``python -m benches.bmt`` beside it on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence

import coincurve

from chunks.chunk import Chunk
from chunks.ethkey import Secp256k1Key, recover_owner
from chunks.feeds import make_update_v1
from chunks.soc import make_soc


def per_second(call: Callable[[int], object], count: int, repeats: int) -> float:
    """Best of ``repeats`` passes of ``call(0) .. call(count - 1)`` (the least disturbed by other load)."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for i in range(count):
            call(i)
        best = min(best, time.perf_counter() - started)
    return count / best


def verifications_per_second(chunks: Sequence[Chunk], repeats: int) -> int:
    for chunk in chunks[:20]:
        chunk.verify()  # valid before timing: a bench of the failure path would be meaningless
    return round(per_second(lambda i: chunks[i].verify(), len(chunks), repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=1000, help="chunks per timed pass")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes (best counts)")
    args = parser.parse_args()
    count, repeats = args.chunks, args.repeats
    key = Secp256k1Key.generate()
    topic, reference = os.urandom(32), os.urandom(32)
    cacs = [Chunk.from_payload(os.urandom(4096)) for _ in range(count)]
    socs = [Chunk.from_soc(make_soc(key, os.urandom(32), os.urandom(4096))) for _ in range(count)]
    updates = [Chunk.from_soc(make_update_v1(key, topic, i, os.urandom(32), i)) for i in range(count)]
    signature = key.sign(bytes(64))
    result = {
        "cac_full_per_s": verifications_per_second(cacs, repeats),
        "soc_full_per_s": verifications_per_second(socs, repeats),
        "soc_feed_update_per_s": verifications_per_second(updates, repeats),
        "recover_per_s": round(per_second(lambda i: recover_owner(signature, bytes(64)), count, repeats)),
        "sign_per_s": round(
            per_second(lambda i: make_update_v1(key, topic, i, reference, 0), count, repeats)
        ),
        "coincurve": coincurve.__version__,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
