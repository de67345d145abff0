"""Bench the pot: build, add, and the biggest-gap and hottest-gap searches on 10,000 random addresses.

Searches run over the whole space and over each of the first 8 bins of a random node (the kademlia use).
Prints one JSON line; times are the best of several rounds (``*_us`` per call, ``build_s`` per build).
The two searches are timed in alternating rounds, so that their ratio sees the same machine noise.
``visits`` is the mean number of trie nodes a search looks at (the descent to the region's subtree: both
searches read their answer from that node's gap caches), ``bytes_per_member`` what the built pot holds.
"""

from __future__ import annotations

import json
import random
import time
import timeit
import tracemalloc
from collections.abc import Callable

from pot import Pot

MEMBERS = 10_000
NBYTES = 32
BINS = 8
ROUNDS = 5


def _best_per_call(fn: Callable[[], object], calls: int) -> float:
    """Best of ``ROUNDS`` rounds of ``calls`` calls, in seconds per call."""
    return min(timeit.repeat(fn, number=calls, repeat=ROUNDS)) / calls


def _best_per_call_alternating(fns: list[Callable[[], object]], calls: int) -> list[float]:
    """As ``_best_per_call`` for each of ``fns``, their rounds interleaved."""
    best = [float("inf")] * len(fns)
    for _ in range(ROUNDS):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            best[i] = min(best[i], (time.perf_counter() - start) / calls)
    return best


def _visits(pot: Pot, prefix: bytes, bits: int) -> int:
    """Trie nodes a search of the region looks at: those on the way down to the region's subtree."""
    node = pot._root
    head = int.from_bytes(prefix) >> (len(prefix) * 8 - bits)
    visits = 1
    while node is not None and node.bit < bits and node.kids is not None:
        node = node.kids[head >> (bits - 1 - node.bit) & 1]
        visits += 1
    return visits


def _bytes_per_member(addresses: list[bytes]) -> float:
    """Memory the pot of ``addresses`` holds beyond the addresses themselves, per member."""
    tracemalloc.start()
    pot = Pot.from_addresses(addresses)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return held / len(pot)


def _regions(node: bytes) -> list[tuple[bytes, int]]:
    """The whole space, then bins 0 .. BINS - 1 of ``node``: (prefix, bits) pairs."""
    key = int.from_bytes(node)
    nbits = len(node) * 8
    bins = [((key ^ (1 << (nbits - 1 - k))).to_bytes(len(node)), k + 1) for k in range(BINS)]
    return [(b"", 0), *bins]


def main() -> None:
    rng = random.Random(20240611)
    addresses = [rng.randbytes(NBYTES) for _ in range(MEMBERS)]
    node = rng.randbytes(NBYTES)
    extra = [rng.randbytes(NBYTES) for _ in range(1000)]

    build_s = _best_per_call(lambda: Pot.from_addresses(addresses), 1)
    pot = Pot.from_addresses(addresses)
    regions = _regions(node)

    def biggest() -> None:
        for prefix, bits in regions:
            pot.biggest_address_gap(prefix, bits)

    def hottest() -> None:
        for prefix, bits in regions:
            pot.hottest_gap(prefix, bits)

    def add() -> None:
        for address in extra:
            pot.add(address)

    def remove() -> None:
        for address in addresses[:1000]:
            pot.remove(address)

    def closest() -> None:
        for address in extra[:100]:
            it = pot.closest(address)
            for _ in range(16):
                next(it)

    biggest_s, hottest_s = _best_per_call_alternating([biggest, hottest], 200)
    biggest_us = biggest_s / len(regions) * 1e6
    hottest_us = hottest_s / len(regions) * 1e6
    gaps = [pot.biggest_address_gap(prefix, bits) for prefix, bits in regions]
    print(
        json.dumps(
            {
                "members": len(pot),
                "build_s": round(build_s, 4),
                "biggest_gap_us": round(biggest_us, 1),
                "hottest_gap_us": round(hottest_us, 1),
                "hottest_over_biggest": round(hottest_us / biggest_us, 2),
                "add_us": round(_best_per_call(add, 1) / len(extra) * 1e6, 2),
                "remove_us": round(_best_per_call(remove, 1) / 1000 * 1e6, 2),
                "closest16_us": round(_best_per_call(closest, 1) / 100 * 1e6, 1),
                "biggest_gap_pos": [gap.po if gap else None for gap in gaps],
                "visits": round(
                    sum(_visits(pot, prefix, bits) for prefix, bits in regions) / len(regions), 1
                ),
                "bytes_per_member": round(_bytes_per_member(addresses)),
            }
        )
    )


if __name__ == "__main__":
    main()
