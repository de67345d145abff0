"""Bench peer suggestion: suggestions per second with 10, 1,000 and 100,000 known peers.

For each size a node (random 32-byte overlay) learns that many random peers; two states are timed:
``fresh`` (one peer connected: the bin the policy chooses, bin 0, holds about half of all candidates) and
``half`` (half of the connections it makes until settled: bins below depth partly saturated, the
policy's bin deeper and smaller). On each, ``suggest_peer`` is called repeatedly without connecting (each
call is a full suggestion) for every strategy, and, as the reference, the per-candidate ranking the gap
strategies replaced (``kademlia.ranking``: every candidate of the bin the policy chose is scored). The
table's candidate pots are built before the timing (a table builds a bin's pot the first time it is
searched and keeps it current after; ``pots_s`` is that one-time cost for all bins). Prints one JSON line:
suggestions per second (best of 5 rounds) per size, state and strategy, and the candidates in the bin.
Run as ``python -m benches.suggest [--sizes 10,1000,100000]``.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable

from kademlia import STRATEGIES, PeerTable, get_strategy, suggest_peer
from kademlia.ranking import rank_by_gap, rank_by_temperature

ROUNDS = 5
ROUND_SECONDS = 0.2


def _per_second(fn: Callable[[], object]) -> float:
    """Calls per second of ``fn``: the best of ``ROUNDS`` rounds of about ``ROUND_SECONDS`` each."""
    calls = 1
    while True:  # calibrate: enough calls for a round to last ROUND_SECONDS
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= ROUND_SECONDS / 4 or calls >= 1 << 20:
            break
        calls *= 2
    calls = max(1, round(calls * ROUND_SECONDS / max(elapsed, 1e-9)))
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return 1 / best


def table_in_state(known: int, seed: int, state: str) -> PeerTable:
    """A node knowing ``known`` random peers: ``fresh`` with one connection (the policy's bin, bin 0,
    holds about half of all candidates), ``half`` with half of its settling connections made (by
    ``first``, so every strategy is timed on the same table)."""
    rng = random.Random(seed)
    peers = [rng.randbytes(32) for _ in range(known)]
    base = rng.randbytes(32)

    def fresh() -> PeerTable:
        t = PeerTable(base)
        for p in peers:
            t.add_known(p)
        return t

    first = get_strategy("first")
    steps = 1
    if state == "half":
        probe = fresh()
        steps = 0
        while (peer := suggest_peer(probe, first)) is not None:
            probe.connect(peer)
            steps += 1
        steps //= 2
    table = fresh()
    for _ in range(steps):
        peer = suggest_peer(table, first)
        assert peer is not None
        table.connect(peer)
    return table


def bench_state(known: int, seed: int, state: str) -> dict[str, object]:
    table = table_in_state(known, seed, state)
    start = time.perf_counter()
    for po in range(table.max_po + 1):
        table.candidates(po)
    pots_s = time.perf_counter() - start
    open_bins = [po for po in range(table.max_po + 1) if table.unconnected_count(po)]
    unsaturated = [po for po in open_bins if len(table.connected(po)) < table.saturation]
    chosen = (unsaturated or [po for po in open_bins if po >= table.depth()])[0]  # the policy's bin
    result: dict[str, object] = {
        "known": known,
        "state": state,
        "connected": table.connected_count(),
        "depth": table.depth(),
        "bin": chosen,
        "candidates_in_bin": table.unconnected_count(chosen),
        "pots_s": round(pots_s, 4),
    }
    for name in STRATEGIES:
        strategy = get_strategy(name)
        result[f"{name}_per_s"] = round(_per_second(lambda s=strategy: suggest_peer(table, s)))  # type: ignore[misc]
    connected = table.connected_pot()

    def candidates() -> list[bytes]:
        return list(table.unconnected(chosen))

    result["ranking_gap_per_s"] = round(_per_second(lambda: rank_by_gap(connected, candidates())), 1)
    result["ranking_temperature_per_s"] = round(
        _per_second(lambda: rank_by_temperature(connected, candidates())), 1
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10,1000,100000", help="known peers, comma-separated")
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    states = [bench_state(n, args.seed, state) for n in sizes for state in ("fresh", "half")]
    print(json.dumps({"bench": "suggest", "states": states}))


if __name__ == "__main__":
    main()
