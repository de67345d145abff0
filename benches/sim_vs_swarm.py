"""The simulation against a real local swarm: the same workload on N `swarm node` processes and on
simulated networks of the same size, strategy, forwarding rule and seed.

The real side starts N light nodes (``swarm.cli.localswarm``: no verification workers, no
retrieval cache, no provable streams, hedging only after 10 s), waits until their connections stop
changing (at most 240 s), uploads ``--chunks`` random chunks (``POST /chunks`` at random nodes),
waits until every node is synced (at most 600 s; stderr says how many were, if not all), then runs
``--lookups`` retrievals (``GET /chunks/{address}`` from uniformly chosen origins) in ``--batches``
batches, reading each node's retrieval counters (``swarm_retrievals`` on ``/metrics``: ``served``
from its store, ``forwarded``) before and after every batch. Hops of a retrieval = the forwards it
caused + 1 (0 when the origin holds the chunk); a node's relay load = what it forwarded, its
retrieval load = what it served + what it forwarded, as the simulation counts them.
``served_at_origin``: the share of retrievals the origin answered from its own store;
``hops_when_not``: mean hops of the others. Gap PO and depth from each node's ``/topology``;
replication: the nodes holding each uploaded chunk (``HEAD /chunks/{address}``, the local store).
Intervals: over batches for hops and failures, leave-one-batch-out (jackknife) for the Gini and
max/mean; over ``--runs`` networks on the simulated side.

Prints one JSON line and writes ``OUT/sim_vs_swarm.md`` (the table).
Run as ``python -m benches.sim_vs_swarm [--nodes 32] [--strategy temperature] [--forwarding spread]
[--chunks 40] [--lookups 200] [--batches 10] [--runs 10] [--seed 1] [--known FRACTION] [--storage pull]
[--out sim-vs-swarm]``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import tempfile
import time
from pathlib import Path

import httpx

from kademlia import PeerTable
from swarm.cli.localswarm import LocalSwarm
from swarm.sim.grid import GridKey, SimParams
from swarm.sim.metrics import Lookup, gap_po, gini, max_over_mean, mean
from swarm.sim.network import SimNetwork
from swarm.sim.report import mean_interval, t_quantile
from swarm.sim.scenario import run_scenario
from swarm.sim.storage import ChunkStore

COUNTER = re.compile(r'^swarm_retrievals_total\{outcome="(served|forwarded)"\} ([0-9.e+]+)$', re.M)
LIGHT = ["--verify-workers", "0", "--cache-mib", "0", "--provable-sync", "off", "--hedge-after", "10"]


def counters(client: httpx.Client, api: str) -> tuple[int, int]:
    """(served, forwarded) of one node."""
    found = dict(COUNTER.findall(client.get(f"{api}/metrics").text))
    if "served" not in found or "forwarded" not in found:
        raise RuntimeError(f"{api}/metrics has no swarm_retrievals_total served and forwarded counters")
    return int(float(found.get("served", 0))), int(float(found.get("forwarded", 0)))


def wait(condition, timeout: float, what: str, interval: float = 2.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:g}s")
        time.sleep(interval)


def gap_of(doc: dict) -> int:
    table = PeerTable(bytes.fromhex(doc["baseAddr"]), neighbourhood_size=3, saturation=4)
    for b in doc["bins"].values():
        for peer in b["connectedPeers"]:
            overlay = bytes.fromhex(peer["address"])
            table.add_known(overlay)
            table.connect(overlay)
    return gap_po(table)


def jackknife(values_by_batch: list[list[int]], stat) -> tuple[float, float]:
    """``stat`` of the summed loads, and the 95 % half-width of its leave-one-batch-out estimate."""
    total = [sum(col) for col in zip(*values_by_batch, strict=True)]
    full = stat(total)
    b = len(values_by_batch)
    leave = []
    for k in range(b):
        rest = [t - x for t, x in zip(total, values_by_batch[k], strict=True)]
        leave.append(stat(rest))
    m = mean(leave)
    se = math.sqrt((b - 1) / b * sum((x - m) ** 2 for x in leave))
    return full, t_quantile(0.975, b - 1) * se


def real_swarm(args: argparse.Namespace, workdir: Path) -> dict[str, tuple[float, float]]:
    rng = random.Random(args.seed)
    node_args = ["--suggest", args.strategy, "--forwarding", args.forwarding, *LIGHT]
    swarm = LocalSwarm(
        workdir,
        args.nodes,
        base_port=0,
        node_args=node_args,
        restart=False,
        say=lambda s: print(s, file=sys.stderr),
    )
    swarm.start()
    try:
        apis = [f"http://127.0.0.1:{m.api_port}" for m in swarm.members]
        with httpx.Client(timeout=60) as client:
            return _workload(args, rng, apis, client)
    finally:
        swarm.stop()


def _settle(apis: list[str], client: httpx.Client, limit: float = 240.0) -> list[dict]:
    """Each node's /topology once the total of connections held still for three polls 5 s apart
    (or, on a busy machine, after ``limit`` seconds: then as they are, said on stderr)."""
    seen: list[int] = []

    def stable() -> bool:
        seen.append(sum(client.get(f"{a}/topology").json()["connected"] for a in apis))
        return len(seen) >= 3 and len(set(seen[-3:])) == 1 and seen[-1] > 0

    try:
        wait(stable, limit, "connections settling", interval=5.0)
    except TimeoutError:
        print(f"sim_vs_swarm: connections still changing after {limit:g}s: {seen[-4:]}", file=sys.stderr)
    return [client.get(f"{a}/topology").json() for a in apis]


def _workload(args, rng, apis, client) -> dict[str, tuple[float, float]]:
    topologies = _settle(apis, client)
    addresses = []
    for _ in range(args.chunks):
        payload = rng.randbytes(rng.randrange(1, 4097))
        body = len(payload).to_bytes(8, "little") + payload
        answer = client.post(f"{apis[rng.randrange(len(apis))]}/chunks", content=body)
        answer.raise_for_status()
        addresses.append(answer.json()["reference"])
    synced: list[int] = []

    def all_synced() -> bool:
        synced.append(sum(client.get(f"{a}/sync").json()["fully_synced"] for a in apis))
        return synced[-1] == len(apis)

    try:
        wait(all_synced, 600, "syncing")
    except TimeoutError:
        print(f"sim_vs_swarm: {synced[-1]} of {len(apis)} nodes synced after 600s", file=sys.stderr)
    holders = [sum(client.head(f"{a}/chunks/{c}").status_code == 200 for a in apis) for c in addresses]
    per_batch: list[list[int]] = []
    relays_by_batch: list[list[int]] = []
    hops_by_batch: list[float] = []
    local_by_batch: list[float] = []
    remote_hops_by_batch: list[float] = []
    failed_by_batch: list[float] = []
    size = args.lookups // args.batches
    for _ in range(args.batches):
        before = [counters(client, a) for a in apis]
        failed = 0
        for _ in range(size):
            origin = apis[rng.randrange(len(apis))]
            failed += client.get(f"{origin}/chunks/{rng.choice(addresses)}").status_code != 200
        after = [counters(client, a) for a in apis]
        loads = [(s1 - s0) + (f1 - f0) for (s0, f0), (s1, f1) in zip(before, after, strict=True)]
        forwards = sum(f1 - f0 for (_, f0), (_, f1) in zip(before, after, strict=True))
        remote = sum(s1 - s0 for (s0, _), (s1, _) in zip(before, after, strict=True))
        per_batch.append(loads)
        relays_by_batch.append([f1 - f0 for (_, f0), (_, f1) in zip(before, after, strict=True)])
        hops_by_batch.append((forwards + remote) / size)
        local_by_batch.append((size - failed - remote) / size)
        remote_hops_by_batch.append((forwards + remote) / remote if remote else 0.0)
        failed_by_batch.append(failed / size)
    return {
        "hops": mean_interval(hops_by_batch),
        "served_at_origin": mean_interval(local_by_batch),
        "hops_when_not": mean_interval(remote_hops_by_batch),
        "relay_gini": jackknife(relays_by_batch, gini),
        "relay_max_over_mean": jackknife(relays_by_batch, max_over_mean),
        "retrieval_gini": jackknife(per_batch, gini),
        "retrieval_max_over_mean": jackknife(per_batch, max_over_mean),
        "gap_po": mean_interval([float(gap_of(doc)) for doc in topologies]),
        "depth": mean_interval([float(doc["depth"]) for doc in topologies]),
        "replication": mean_interval([float(h) for h in holders]),
        "failed": mean_interval(failed_by_batch),
    }


class _Retrievals:
    """What the real nodes count, from the simulated lookups: a node relays a retrieval when it
    forwarded it toward the node that served it (``path[1:stored_at]``)."""

    def __init__(self) -> None:
        self.hops: list[int] = []
        self.replication: list[int] = []
        self.relays: list[int] = []
        self.loads: list[int] = []
        self.failed = 0

    def __call__(self, net: SimNetwork, store: ChunkStore, batch: list[tuple[Lookup, int]]) -> None:
        for counts in (self.relays, self.loads):
            counts.extend([0] * (len(net.overlays) - len(counts)))
        for lookup, chunk in batch:
            self.replication.append(store.replication(chunk))
            if not lookup.retrieved:
                self.failed += 1
                continue
            self.hops.append(lookup.stored_at)
            for v in lookup.path[1 : lookup.stored_at]:
                self.relays[v] += 1
            for v in lookup.retrieval_path:
                self.loads[v] += 1


def simulated(args: argparse.Namespace) -> dict[str, tuple[float, float]]:
    """The same metrics on ``--runs`` simulated networks (their seeds: ``swarm sim``'s)."""
    params = SimParams(
        seed=args.seed,
        lookups=args.lookups,
        forwarding=args.forwarding,
        known=args.known,
        storage=args.storage,
    )
    per_run: dict[str, list[float]] = {}
    for run in range(args.runs):
        seen = _Retrievals()
        net, _ = run_scenario(GridKey(args.strategy, args.nodes, run), params, seen)
        online = net.online_nodes()
        values = {
            "hops": mean(seen.hops),
            "served_at_origin": seen.hops.count(0) / args.lookups,
            "hops_when_not": mean([h for h in seen.hops if h]),
            "relay_gini": gini(seen.relays),
            "relay_max_over_mean": max_over_mean(seen.relays),
            "retrieval_gini": gini(seen.loads),
            "retrieval_max_over_mean": max_over_mean(seen.loads),
            "gap_po": mean([gap_po(net.tables[i]) for i in online]),
            "depth": mean([net.tables[i].depth() for i in online]),
            "replication": mean(seen.replication),
            "failed": seen.failed / args.lookups,
        }
        for k, v in values.items():
            per_run.setdefault(k, []).append(float(v))
    return {k: mean_interval(v) for k, v in per_run.items()}


def table(real: dict, sim: dict, args: argparse.Namespace) -> str:
    setup = "gossip" if args.known is None else f"known {args.known:g}"
    head = f"N = {args.nodes}, {args.strategy}, forwarding {args.forwarding}, {args.lookups} lookups"
    head += f"; simulated with {setup}, storage model {args.storage}, {args.runs} runs"
    lines = [head, "", "| metric | real swarm | simulation | within intervals |", "|:--|--:|--:|:--|"]
    for k in real:
        (rm, rh), (sm, sh) = real[k], sim[k]
        overlap = abs(rm - sm) <= rh + sh
        lines.append(f"| {k} | {rm:.3f} ± {rh:.3f} | {sm:.3f} ± {sh:.3f} | {'yes' if overlap else 'no'} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=32)
    p.add_argument("--strategy", default="temperature")
    p.add_argument("--forwarding", default="spread")
    p.add_argument(
        "--storage",
        choices=["area", "pull"],
        default="pull",
        help="the simulation's storage model (swarm/sim/storage.py; pull: as these nodes, reserves not full)",
    )
    p.add_argument("--chunks", type=int, default=40)
    p.add_argument("--lookups", type=int, default=200)
    p.add_argument("--batches", type=int, default=10)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--known",
        type=float,
        default=None,
        help="simulate the old set-up, each node knowing this fraction of the others (default: gossip)",
    )
    p.add_argument("--out", type=Path, default=Path("sim-vs-swarm"))
    args = p.parse_args()
    if args.batches < 2 or args.lookups < args.batches:
        sys.exit("sim_vs_swarm: --batches must be at least 2 and at most --lookups")
    start = time.perf_counter()
    sim = simulated(args)
    with tempfile.TemporaryDirectory(prefix="sim-vs-swarm-") as workdir:
        real = real_swarm(args, Path(workdir))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sim_vs_swarm.md").write_text(table(real, sim, args))
    line = {"bench": "sim_vs_swarm", **{k: v for k, v in vars(args).items() if k != "out"}}
    line |= {"real": real, "sim": sim, "seconds": round(time.perf_counter() - start, 1)}
    print(json.dumps(line))


if __name__ == "__main__":
    main()
