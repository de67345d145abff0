"""Bench the forwarding rules (``kademlia.forwarding``) in the simulation: how evenly they spread load.

For each rule the same networks (``--nodes``, ``--runs``, one ``--strategy``; the seeds of
``swarm sim``) are simulated serially with ``swarm.sim.simulate.simulate`` and every lookup routed by
that rule. Prints one JSON line: per rule and N the means over the runs with the half-width of their
95 % Student t interval (``_ci95``) of relay Gini, relay max/mean, retrieval Gini, hops, failed; and
``gini_floor``: the Gini the same number of relays would have if every one went to a node drawn
uniformly at random (a multinomial draw): no rule can do better than that on average, and with few
lookups per node it is high (0.76 with 2,000 lookups on 16,384 nodes), whatever the rule.

Run as ``python -m benches.balance [--nodes 1024] [--runs 3] [--lookups 2000]
[--rules closest,spread,spread1,spread2] [--strategy temperature] [--churn 0]``.
"""

from __future__ import annotations

import argparse
import json
import random
import time

from kademlia.forwarding import FORWARDING
from swarm.sim.grid import GridKey, SimParams
from swarm.sim.metrics import gini
from swarm.sim.report import mean_interval
from swarm.sim.simulate import NODE_COLUMNS, RUN_COLUMNS, simulate

COLUMNS = (
    "gini",
    "max_over_mean",
    "retrieval_gini",
    "hops_mean",
    "failed",
    "retrieval_failed",
    "gap_po_mean",
)
NAMES = [name for name, _ in RUN_COLUMNS]
RELAYED = [name for name, _ in NODE_COLUMNS].index("relayed")


def uniform_floor(relays: int, nodes: int, seed: int) -> float:
    """The Gini of ``relays`` relays each sent to one of ``nodes`` nodes uniformly at random."""
    rng = random.Random(seed)
    counts = [0] * nodes
    for _ in range(relays):
        counts[rng.randrange(nodes)] += 1
    return gini(counts)


def measure(rule: str, n: int, runs: int, params: SimParams, strategy: str) -> dict[str, float]:
    rows = []
    floors = []
    for run in range(runs):
        result = simulate(GridKey(strategy, n, run), params)
        row = dict(zip(NAMES, result.run, strict=True))
        rows.append(row)
        relays = sum(node[RELAYED] for node in result.nodes)
        floors.append(uniform_floor(relays, n, run))
    out: dict[str, float] = {}
    for column in COLUMNS:
        m, half = mean_interval([row[column] for row in rows])
        out[column], out[f"{column}_ci95"] = round(m, 4), round(half, 4)
    m, half = mean_interval(floors)
    out["gini_floor"], out["gini_floor_ci95"] = round(m, 4), round(half, 4)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", default="1024", help="network sizes, comma-separated")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--lookups", type=int, default=2000)
    p.add_argument("--rules", default=",".join(FORWARDING), help="forwarding rules, comma-separated")
    p.add_argument("--strategy", default="temperature")
    p.add_argument("--churn", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    results: dict[str, dict[str, dict[str, float]]] = {}
    start = time.perf_counter()
    for n in (int(x) for x in args.nodes.split(",")):
        for rule in args.rules.split(","):
            params = SimParams(seed=args.seed, lookups=args.lookups, churn=args.churn, forwarding=rule)
            results.setdefault(str(n), {})[rule] = measure(rule, n, args.runs, params, args.strategy)
    line = {
        "bench": "balance",
        "strategy": args.strategy,
        "runs": args.runs,
        "lookups": args.lookups,
        "churn": args.churn,
        "results": results,
        "seconds": round(time.perf_counter() - start, 1),
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()
