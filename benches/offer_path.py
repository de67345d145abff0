"""An upstream's work per offered chunk: finding what it can offer, and delivering it.

Fills two stores with ``--chunks`` random 4 KiB chunks, in batches of 128 as ``put_many`` takes
a synced batch: one in random order (the bins' chunks interleave in the slots, like the bench
sync's preloaded upstream A) and one a bin at a time (each batch the chunks of one bin, like a
downstream storing an upstream's offers: B, whose live streams offer them all back to A). Over
every bin's offers of 128 bin IDs, through the reserve's `LeasedStore` as a node has it, it times
(CPU, best of ``--repeats``):

- ``check_slot_us``: the way an upstream found what to offer before (the log's entries, then
  `check_slot` of each address: an address-index lookup and a slot read);
- ``offerable_us``: `LocalStore.offerable` (one pull-index read, a ``pread`` per run of
  consecutive slots, no address-index lookup);

each with the index's recent answers holding the chunks (``fresh``: they were just stored) and
not (``cold``: the upstream has been up longer than its last 8,192 lookups); then ``get_us`` and
``get_at_us``: delivering each chunk by its address (the index looked up, cold) or from the slot
its offer found it in.

Prints one JSON line of microseconds per chunk: ``{"chunks", "check_slot_us": {"random":
{"fresh", "cold"}, "by_bin": {...}}, "offerable_us": {...}, "get_us", "get_at_us"}``.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections.abc import Callable

from chunks import Chunk
from localstore.store import LocalStore
from pot import proximity
from swarm.reserve.offer_leases import LeasedStore, OfferLeases

OVERLAY = bytes(32)
Range = tuple[int, int, int]


def filled(directory: str, chunks: list[Chunk]) -> LocalStore:
    store = LocalStore(directory, OVERLAY)
    for i in range(0, len(chunks), 128):
        store.put_many(chunks[i : i + 128], verified=True)
    return store


def best_us(run: Callable[[], None], before: Callable[[], None], per: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        before()
        started = time.process_time()
        run()
        best = min(best, time.process_time() - started)
    return round(best / per * 1e6, 2)


def offers(store: LocalStore) -> list[Range]:
    """Every bin's offers of 128 bin IDs."""
    return [
        (b, s, min(s + 127, store.cursor(b))) for b in range(32) for s in range(1, store.cursor(b) + 1, 128)
    ]


def layout_costs(order: list[Chunk], repeats: int) -> dict[str, dict[str, float]]:
    """Both ways of finding what to offer, fresh and cold; and both ways of delivering (cold)."""
    with tempfile.TemporaryDirectory() as directory:
        store = filled(directory, order)
        view, ranges, logs, index = LeasedStore(store, OfferLeases()), offers(store), store.logs, store._index
        assert logs is not None
        count = len(order)

        def by_check_slot() -> None:
            for bin, start, end in ranges:
                for address, hole in logs.entries(bin, start, end):
                    if not hole:
                        view.check_slot(address)

        def by_offerable() -> None:
            for bin, start, end in ranges:
                view.offerable(bin, start, end)

        costs = {
            name: {
                "fresh": best_us(run, lambda: None, count, repeats),
                "cold": best_us(run, index._recent.clear, count, repeats),
            }
            for name, run in (("check_slot_us", by_check_slot), ("offerable_us", by_offerable))
        }
        found = [view.offerable(*r).slots for r in ranges]

        def by_get() -> None:
            for slots in found:
                for address in slots:
                    view.get(address)

        def by_get_at() -> None:
            for slots in found:
                for address, (slot, length) in slots.items():
                    view.get_at(address, slot, length)

        costs["deliver_us"] = {
            "get": best_us(by_get, index._recent.clear, count, repeats),
            "get_at": best_us(by_get_at, index._recent.clear, count, repeats),
        }
        store.close()
        return costs


def measure(chunks: list[Chunk], repeats: int) -> dict[str, object]:
    by_bin = sorted(chunks, key=lambda c: min(proximity(c.address, OVERLAY), 31))
    random_costs, by_bin_costs = layout_costs(chunks, repeats), layout_costs(by_bin, repeats)
    return {
        "chunks": len(chunks),
        **{
            name: {"random": random_costs[name], "by_bin": by_bin_costs[name]}
            for name in ("check_slot_us", "offerable_us")
        },
        "get_us": random_costs["deliver_us"]["get"],
        "get_at_us": random_costs["deliver_us"]["get_at"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--chunks",
        type=int,
        default=8_192,
        help="chunks per store (default 8192: the index's recent answers hold them)",
    )
    parser.add_argument("--repeats", type=int, default=5, help="timed passes, the best kept (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    chunks = [Chunk.from_payload(rng.randbytes(4096)) for _ in range(args.chunks)]
    print(json.dumps(measure(chunks, args.repeats)))


if __name__ == "__main__":
    main()
