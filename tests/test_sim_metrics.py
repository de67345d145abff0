"""swarm.sim metrics against hand-computed cases and brute force: Gini, percentiles, greedy routing, gaps."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kademlia import PeerTable, get_strategy
from kademlia.forwarding import get_forwarding
from pot import proximity
from swarm.sim.grid import SimParams
from swarm.sim.metrics import (
    gap_po,
    gap_temperature,
    gini,
    max_over_mean,
    mean,
    percentile,
    route,
)
from swarm.sim.network import SimNetwork
from swarm.sim.storage import ChunkStore


def a(bits: str) -> bytes:
    """A 1-byte address from its 8-bit string."""
    return bytes([int(bits, 2)])


# -- Gini -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1, 1, 1, 1], 0.0),
        ([0, 0, 0, 4], 0.75),  # one of four carries all: 1 - 1/n
        ([0, 0, 0, 0], 0.0),
        ([1, 3], 0.25),  # |1-3| twice / (2 * 2^2 * 2)
        ([5], 0.0),
        ([0, 10], 0.5),
        ([1, 2, 3, 4], 0.25),  # sum |xi - xj| = 20, / (2 * 16 * 2.5)
    ],
)
def test_gini_hand_computed(values: list[int], expected: float) -> None:
    assert gini(values) == pytest.approx(expected, abs=1e-12)


def test_gini_is_order_free_and_scale_free_and_matches_the_double_sum() -> None:
    rng = random.Random(7)
    for _ in range(200):
        xs = [rng.randrange(0, 20) for _ in range(rng.randrange(1, 30))]
        total = sum(xs)
        naive = (
            0.0
            if total == 0
            else sum(abs(x - y) for x in xs for y in xs) / (2 * len(xs) ** 2 * (total / len(xs)))
        )
        assert gini(xs) == pytest.approx(naive, abs=1e-12)
        assert gini(list(reversed(xs))) == pytest.approx(gini(xs), abs=1e-12)
        assert gini([3 * x for x in xs]) == pytest.approx(gini(xs), abs=1e-12)


def test_gini_rejects_empty_and_negative() -> None:
    with pytest.raises(ValueError):
        gini([])
    with pytest.raises(ValueError):
        gini([1, -1])


# -- percentile, mean, max/mean ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        (list(range(1, 21)), 95, 19),  # rank ceil(0.95 * 20) = 19
        (list(range(1, 101)), 95, 95),
        (list(range(1, 102)), 95, 96),  # rank ceil(95.95) = 96
        ([5], 95, 5),
        ([3, 1, 2], 95, 3),  # rank ceil(2.85) = 3
        ([4, 3, 2, 1], 50, 2),  # rank 2: nearest rank, no interpolation
        ([0] * 95 + [9] * 5, 95, 0),  # exactly 95 % at or below 0
        ([0] * 94 + [9] * 6, 95, 9),
        ([7, 7, 1], 100, 7),
    ],
)
def test_percentile_nearest_rank(values: list[int], q: int, expected: int) -> None:
    assert percentile(values, q) == expected


def test_percentile_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        percentile([], 95)
    with pytest.raises(ValueError):
        percentile([1], 0)
    with pytest.raises(ValueError):
        percentile([1], 101)


def test_mean_and_max_over_mean() -> None:
    assert mean([1, 2, 3, 6]) == 3.0
    assert max_over_mean([1, 1, 1, 1]) == 1.0
    assert max_over_mean([0, 0, 0, 4]) == 4.0
    assert max_over_mean([0, 0]) == 0.0


# -- greedy routing on a hand-made network ----------------------------------------------------------


def hand_network(nodes: Sequence[str], links: Sequence[tuple[str, str]]) -> SimNetwork:
    net = SimNetwork(get_strategy("first"), saturation=4, neighbourhood_size=3, max_po=7)
    for n in nodes:
        net.join(a(n))
    for x, y in links:
        net.connect(net.index[a(x)], net.index[a(y)])
    return net


A, B, C, D, E = "00000000", "10000000", "11000000", "11100000", "01000000"
CHAIN = hand_network([A, B, C, D, E], [(A, B), (B, C), (C, D), (A, E)])


def test_route_follows_the_closest_peer_to_the_closest_node() -> None:
    lookup = route(CHAIN, 0, a("11110000"))  # from A: B (po 1), C (po 2), D (po 3), D has nobody closer
    assert lookup.path == (0, 1, 2, 3)
    assert lookup.hops == 3
    assert lookup.relays == (1, 2)
    assert lookup.closest == 3
    assert not lookup.failed


def test_route_two_hops_through_the_origin_side() -> None:
    lookup = route(CHAIN, 1, a("01111111"))  # from B: A, then E
    assert lookup.path == (1, 0, 4)
    assert lookup.hops == 2
    assert lookup.relays == (0,)
    assert not lookup.failed


def test_route_fails_when_stuck_before_the_closest_node() -> None:
    # D knows only C; for 01100000 D itself is closer than C, so the request stops at D, but E is closest
    lookup = route(CHAIN, 3, a("01100000"))
    assert lookup.path == (3,)
    assert lookup.hops == 0
    assert lookup.relays == ()
    assert lookup.closest == 4
    assert lookup.failed


def test_route_at_the_target_itself_is_zero_hops_and_succeeds() -> None:
    lookup = route(CHAIN, 2, a(C))
    assert lookup.path == (2,)
    assert not lookup.failed


def test_route_on_a_random_network_is_greedy_against_brute_force() -> None:
    rng = random.Random(3)
    addresses = rng.sample(range(256), 40)
    overlays = [bytes([x]) for x in addresses]
    links = {(i, j) for i in range(40) for j in rng.sample(range(40), 4) if i != j}
    net = hand_network(
        [f"{x:08b}" for x in addresses], [(f"{addresses[i]:08b}", f"{addresses[j]:08b}") for i, j in links]
    )
    neighbours: dict[int, set[int]] = {i: set() for i in range(40)}
    for i, j in links:
        neighbours[i].add(j)
        neighbours[j].add(i)
    for target in range(256):
        t = bytes([target])
        for origin in range(0, 40, 7):
            lookup = route(net, origin, t)
            dist = [overlays[v][0] ^ target for v in lookup.path]
            assert dist == sorted(dist, reverse=True) and len(set(dist)) == len(dist)
            for v, w in itertools.pairwise(lookup.path):
                assert w in neighbours[v]
                assert overlays[w][0] ^ target == min(overlays[u][0] ^ target for u in neighbours[v])
            last = lookup.path[-1]
            assert all(overlays[u][0] ^ target > dist[-1] for u in neighbours[last])
            best = min(range(40), key=lambda u: overlays[u][0] ^ target)
            assert lookup.closest == best
            assert lookup.failed == (last != best)


# -- retrieval and storage ----------------------------------------------------------------------------


def test_retrieval_at_the_origin_when_it_stores_the_chunk() -> None:
    # every CHAIN node has fewer than 3 peers: depth 0, so each stores every chunk
    for target in ("11110000", "01111111", "00000001"):
        lookup = route(CHAIN, 0, a(target))
        assert lookup.stored_at == 0 and lookup.retrieval_path == () and lookup.retrieved


def kademlia_like(seed: int, n: int = 48) -> SimNetwork:
    """An 8-bit network where each node is linked to its 4 nearest and 3 random others (depths > 0)."""
    rng = random.Random(seed)
    addresses = rng.sample(range(256), n)
    links = set()
    for x in addresses:
        nearest = sorted((y for y in addresses if y != x), key=lambda y: x ^ y)[:4]
        for y in nearest + rng.sample(addresses, 3):
            if y != x:
                links.add((f"{x:08b}", f"{y:08b}"))
    return hand_network([f"{x:08b}" for x in addresses], sorted(links))


def test_retrieval_stops_at_the_first_node_on_the_route_storing_the_chunk() -> None:
    net = kademlia_like(9)
    depths = [t.depth() for t in net.tables]
    assert max(depths) > 0
    travelled = 0
    for target in range(256):
        t = bytes([target])
        for origin in range(0, 48, 5):
            lookup = route(net, origin, t)
            storers = [k for k, v in enumerate(lookup.path) if proximity(net.overlays[v], t) >= depths[v]]
            assert lookup.stored_at == (storers[0] if storers else -1)
            assert lookup.retrieved == bool(storers)
            assert lookup.retrieval_path == lookup.path[1 : lookup.stored_at + 1]
            travelled += lookup.stored_at > 0
    assert travelled > 100  # chunks do travel over hops


def test_uploaded_chunks_are_held_by_the_responsible_nodes_and_move_a_hop_per_sync() -> None:
    net = kademlia_like(4)
    store = ChunkStore(net, random.Random(1), count=200)
    for c in range(200):
        assert sorted(store.holders[c]) == store.responsible(net, c)
        assert store.replication(c) >= 1
    # the holders of chunk 0 leave: its newly responsible nodes pull it only from a connected holder
    c = 0
    for i in sorted(store.holders[c]):
        net.leave(i)
        store.leave(i)
    assert store.replication(c) == 0 and store.lost() >= 1
    assert all(c not in chunks for chunks in store.held.values())
    store.sync(net)
    assert store.replication(c) == 0  # nobody has it to pass on: lost for good
    # a chunk still held spreads to a newly responsible node through a connected holder
    held = next(k for k in range(200) if store.holders[k])
    newcomer = net.join(bytes([store.addresses[held][0] ^ 1]))
    for j in sorted(store.holders[held]):
        net.connect(newcomer, j)
    assert newcomer in store.responsible(net, held) and newcomer not in store.holders[held]
    store.sync(net)
    assert newcomer in store.holders[held]


def test_route_uses_the_holders_given() -> None:
    net = kademlia_like(9)
    target = bytes([0x5A])
    full = route(net, 0, target)
    assert route(net, 0, target, holders=()).stored_at == -1  # nobody holds it: not retrieved
    assert route(net, 0, target, holders={full.path[-1]}).stored_at == full.hops
    assert route(net, 0, target, holders=set(full.path)).stored_at == 0


# -- gap metrics --------------------------------------------------------------------------------------


def table_with(base: str, peers: Sequence[str]) -> PeerTable:
    t = PeerTable(a(base), max_po=7)
    for p in peers:
        t.connect(a(p))
    return t


def test_gap_metrics_hand_computed() -> None:
    # S = {00000000, 10000000, 10000001, 10000010}: 01xxxxxx (PO 1, served by the base alone: 1/4) is both
    # the biggest (11xxxxxx is PO 1 too but anchored higher) and the hottest gap (11xxxxxx: 1/4 / 3)
    t = table_with("00000000", ["10000000", "10000001", "10000010"])
    assert gap_po(t) == 1
    assert gap_temperature(t) == 0.25
    # fill bin 1 and 11xxxxxx: now the biggest gaps are PO 2 (001xxxxx, 011xxxxx, 111xxxxx...)
    t.connect(a("01000000"))
    t.connect(a("11000000"))
    assert gap_po(t) == 2
    # 001xxxxx served by the base alone: 1/8; 101xxxxx served by three: 1/24
    assert gap_temperature(t) == 0.125
    assert gap_po(PeerTable(a("00000000"), max_po=7)) == 0  # alone: 1xxxxxxx is a gap
    assert gap_temperature(PeerTable(a("00000000"), max_po=7)) == 0.5


def naive_gaps(members: Sequence[int]) -> tuple[int, Fraction]:
    """Biggest gap PO and hottest temperature of 8-bit ``members`` straight from the definition."""
    best_po, hottest = 8, Fraction(0)
    for n in members:
        for p in range(8):
            region = [x for x in range(256) if proximity(bytes([x]), bytes([n])) == p]
            if any(m in region for m in members):
                continue
            serving = sum(1 for m in members if proximity(bytes([m]), bytes([n])) >= p + 1)
            best_po = min(best_po, p)
            hottest = max(hottest, Fraction(1, 2 ** (p + 1) * serving))
    return best_po, hottest


def test_gap_metrics_match_brute_force() -> None:
    rng = random.Random(11)
    for _ in range(30):
        members = rng.sample(range(256), rng.randrange(1, 12))
        t = table_with(f"{members[0]:08b}", [f"{m:08b}" for m in members[1:]])
        po, temperature = naive_gaps(members)
        assert gap_po(t) == po
        assert gap_temperature(t) == float(temperature)


def test_route_spreads_over_equally_close_peers_by_the_nodes_own_rule() -> None:
    # A = 00000000 with 10000000 and 10000001 (seed 003 Fig. 1): targets in 11xxxxxx are at PO 1 from
    # both. Greedy routing always takes 10000000 (closer by XOR); `spread` alternates, least recently
    # used first, as kademlia.forwarding.pick_peer does in the node.
    nodes = ["00000000", "10000000", "10000001"]
    links = [("00000000", "10000000"), ("00000000", "10000001")]
    targets = [a(t) for t in ("11000000", "11100000", "11010000", "11110000")]
    greedy = hand_network(nodes, links)
    assert [route(greedy, 0, t).path for t in targets] == [(0, 1)] * 4
    spread = hand_network(nodes, links)
    spread.forwarding = get_forwarding("spread")
    assert [route(spread, 0, t).path for t in targets] == [(0, 1), (0, 2), (0, 1), (0, 2)]
    assert spread.tables[0].requests.count(0) == 4  # each forward counted in the bin it went through


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_the_pull_model_is_closed_under_the_sync_rule(seed: int) -> None:
    """Under ``pull`` every chunk uploaded is held by its uploader and its responsible nodes, and
    once settled no node lacks a chunk the sync rule would bring it from a connected peer (the naive
    check: every peer, every bin of the rule, every chunk held); it holds at least the copies of
    ``area``, whose chunks are the same."""
    net = kademlia_like(seed)
    area = ChunkStore(net, random.Random(seed), count=60)
    pull = ChunkStore(net, random.Random(seed), count=60, storage="pull")
    assert pull.addresses == area.addresses
    for c in range(60):
        assert set(pull.responsible(net, c)) <= pull.holders[c]
        assert area.holders[c] <= pull.holders[c]
    for i in net.online_nodes():
        table = net.tables[i]
        for peer in table.connected_peers():
            j = net.index[peer]
            for c in pull.held.get(j, ()):
                po = min(proximity(peer, pull.addresses[c]), net.max_po)
                if po in table.sync_bins_for(peer):
                    assert i in pull.holders[c], (i, j, c)
    assert pull.sync(net) == 0  # settled: nothing left to pull


def test_the_pull_model_keeps_the_uploaders_copy_and_more_than_area() -> None:
    net = kademlia_like(3)
    area = ChunkStore(net, random.Random(7), count=200)
    pull = ChunkStore(net, random.Random(7), count=200, storage="pull")
    extra = sum(pull.replication(c) - area.replication(c) for c in range(200))
    assert extra > 0  # the uploaders' copies and what their peers pulled
    assert any(pull.holders[c] - set(pull.responsible(net, c)) for c in range(200))
    with pytest.raises(ValueError, match="storage model"):
        ChunkStore(net, random.Random(7), storage="everywhere")
    with pytest.raises(ValueError, match="storage model"):
        SimParams(storage="everywhere")
