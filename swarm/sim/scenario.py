"""The life of one simulated network: it grows and settles, then (with churn) loses and gains nodes while
lookups run.

1. **Growth.** With gossip (the default), the first ``bootnodes`` nodes come online knowing each other
   and connect; then the network doubles round by round: each joining node asks bootnode
   ``index % bootnodes`` for peers (``Hive.contact``) and the round gives every node with a suggestion
   one turn. Joiners keep at most ``known_per_bin`` candidates per bin, bootnodes all they hear of.
   With ``known`` (the old set-up) all nodes are online from the start, each knowing its random known
   set, and nobody gossips.
2. **Settling.** Rounds until no node has a suggestion (at most ``MAX_SETTLE_ROUNDS``).
3. **Churn** (``churn > 0``): ``churn_rounds`` times, ``round(churn * online)`` random online nodes (never
   a bootnode) leave for good and as many new nodes join (by a bootnode, or knowing a random known set of
   the online nodes); then ``turns`` rounds give every node with a suggestion a turn each (reconnecting by
   its strategy; dialling a node that left wastes the turn); then that event's share of the lookups runs
   on the network as it is.
   Without churn all lookups run on the settled network.

After settling, ``swarm.sim.storage.CHUNKS`` chunks at random addresses are uploaded to the nodes
responsible for them; under churn, a sync step after each event's turns lets nodes pull the chunks of
their neighbourhood from connected peers. Lookups retrieve a uniformly chosen uploaded chunk from an
origin chosen uniformly among the nodes online at the time. Who leaves, who joins, the chunks and the
lookups are drawn from seeds of ``(seed, nodes, run)`` and the (strategy independent) online set only,
so every strategy faces the same population and the same requests.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from kademlia import get_strategy
from kademlia.forwarding import get_forwarding

from .gossip import Hive
from .grid import GridKey, SimParams, derived_seed, overlay_of
from .metrics import Lookup, route
from .network import SimNetwork
from .storage import ChunkStore

__all__ = ["MAX_SETTLE_ROUNDS", "Observer", "known_sets", "run_scenario"]

MAX_SETTLE_ROUNDS = 10_000

# called once per lookup round with the network, the chunk holders and that round's (lookup, chunk)s
Observer = Callable[[SimNetwork, ChunkStore, list[tuple[Lookup, int]]], None]


def known_sets(params: SimParams, nodes: int, run: int) -> list[list[int]]:
    """The old set-up: for each node, the indices of the nodes it knows, in the order it learns them."""
    rng = random.Random(derived_seed("known", params.seed, nodes, run))
    k = params.known_count(nodes)
    sets = []
    for i in range(nodes):
        picked = rng.sample(range(nodes - 1), k)  # among the others: skip i
        sets.append([j + 1 if j >= i else j for j in picked])
    return sets


class _Population:
    """Creates the nodes of one network and brings them online (by gossip or with known sets)."""

    def __init__(self, key: GridKey, params: SimParams) -> None:
        self.key = key
        self.params = params
        self.hive: Hive | None = None
        if params.gossip:
            rng = random.Random(derived_seed("gossip", params.seed, key.nodes, key.run))
            self.hive = Hive(rng, params.gossip_bin_size)
        self.net = SimNetwork(
            get_strategy(key.strategy),
            saturation=params.saturation,
            neighbourhood_size=params.neighbourhood_size,
            max_po=params.max_po,
            announce=self.hive,
            forwarding=get_forwarding(params.forwarding),
        )
        self.bootnodes = min(params.bootnodes, key.nodes)

    def overlay(self, i: int) -> bytes:
        return overlay_of(self.params.seed, self.key.nodes, self.key.run, i)

    def grow(self) -> None:
        """Bring the first ``nodes`` nodes online (step 1 of the module docstring)."""
        net, n = self.net, self.key.nodes
        if self.hive is None:
            for i in range(n):
                net.join(self.overlay(i))
            for i, known in enumerate(known_sets(self.params, n, self.key.run)):
                for j in known:
                    net.tables[i].add_known(net.overlays[j])
            return
        for i in range(self.bootnodes):
            net.join(self.overlay(i), range(i))  # bootnodes keep every peer they hear of
        for i in range(self.bootnodes):
            for j in range(i + 1, self.bootnodes):
                net.learn(i, net.overlays[j])
        net.settle(MAX_SETTLE_ROUNDS)  # the bootnodes connect among themselves first
        size = self.bootnodes
        while size < n:
            for _ in range(size, min(n, 2 * size)):
                self.join_one(None)
            size = len(net.overlays)
            net.run_round()

    def join_one(self, rng: random.Random | None) -> None:
        """One new node: by a bootnode with gossip, else knowing a random known set of the online nodes."""
        net = self.net
        i = len(net.overlays)
        if self.hive is not None:
            net.join(self.overlay(i), max_known_per_bin=self.params.known_per_bin)
            self.hive.contact(net, i, i % self.bootnodes)
            return
        assert rng is not None
        online = net.online_nodes()
        k = min(len(online), self.params.known_count(self.key.nodes))
        net.join(self.overlay(i), rng.sample(online, k))

    def churn(self, rng: random.Random, store: ChunkStore) -> int:
        """One churn event: random non-bootnode online nodes leave, as many new ones join; how many."""
        net = self.net
        leavers = [i for i in net.online_nodes() if i >= self.bootnodes]
        count = min(len(leavers), round(self.params.churn * net.size))
        for i in rng.sample(leavers, count):
            net.leave(i)
            store.leave(i)
        for _ in range(count):
            self.join_one(rng)
        return count


def _lookups(net: SimNetwork, store: ChunkStore, rng: random.Random, count: int, observe: Observer) -> None:
    """``count`` retrievals of uploaded chunks, from uniform origins among the online nodes."""
    online = net.online_nodes()
    batch = []
    for _ in range(count):
        origin = online[rng.randrange(len(online))]
        c = rng.randrange(len(store.addresses))
        batch.append((route(net, origin, store.addresses[c], store.holders[c]), c))
    observe(net, store, batch)


def run_scenario(key: GridKey, params: SimParams, observe: Observer) -> tuple[SimNetwork, int]:
    """Grow, settle and (with churn) churn the network of ``key``; ``observe`` sees every lookup round.

    Returns the network at the end and the rounds it took to settle (before any churn).
    """
    population = _Population(key, params)
    net = population.net
    population.grow()
    net.settle(MAX_SETTLE_ROUNDS)
    settled_after = net.rounds
    lookups = random.Random(derived_seed("lookups", params.seed, key.nodes, key.run))
    chunks = random.Random(derived_seed("chunks", params.seed, key.nodes, key.run))
    store = ChunkStore(net, chunks, storage=params.storage)
    if params.churn <= 0:
        _lookups(net, store, lookups, params.lookups, observe)
        return net, settled_after
    churn = random.Random(derived_seed("churn", params.seed, key.nodes, key.run))
    rounds = params.churn_rounds
    for r in range(rounds):
        population.churn(churn, store)
        for _ in range(params.turns):
            net.run_round()
        store.sync(net)
        share = params.lookups // rounds + (1 if r < params.lookups % rounds else 0)
        if share:
            _lookups(net, store, lookups, share, observe)
    return net, settled_after
