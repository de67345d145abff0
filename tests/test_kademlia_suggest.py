"""Peer suggestion: seed 003's examples through suggest_peer, brute force, the old ranking, the policy."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kademlia import (
    STRATEGIES,
    FirstStrategy,
    GapStrategy,
    HottestStrategy,
    PeerTable,
    SuggestionStrategy,
    TemperatureStrategy,
    get_strategy,
    is_settled,
    suggest_peer,
)
from kademlia.binload import BinLoad
from kademlia.ranking import gap_key, rank_by_gap, rank_by_temperature, temperature_key

FIRST = get_strategy("first")
GAP = get_strategy("gap")
TEMPERATURE = get_strategy("temperature")
HOTTEST = get_strategy("hottest")
LOADED = get_strategy("loaded")


def a(bits: str) -> bytes:
    """A 1-byte address from its 8-bit string, e.g. ``a("10000001")``."""
    assert len(bits) == 8
    return bytes([int(bits, 2)])


BASE = a("00000000")


def table_of(connected: Sequence[str] = (), known: Sequence[str] = (), **kwargs: int) -> PeerTable:
    """A table with base 00000000: ``known`` learned first, then ``connected`` connected, in order."""
    t = PeerTable(BASE, **kwargs)
    for k in known:
        t.add_known(a(k))
    for c in connected:
        t.connect(a(c))
    return t


def picks(t: PeerTable) -> dict[str, bytes | None]:
    """Each strategy's pick; ``loaded``, with no request recorded, must pick as ``hottest``."""
    chosen = {name: suggest_peer(t, strategy) for name, strategy in STRATEGIES.items()}
    assert chosen.pop("loaded") == chosen["hottest"]
    return chosen


# -- registry ------------------------------------------------------------------------------------


def test_registry_names_and_lookup() -> None:
    assert sorted(STRATEGIES) == ["first", "gap", "hottest", "loaded", "temperature"]
    assert isinstance(FIRST, FirstStrategy) and isinstance(GAP, GapStrategy)
    assert isinstance(TEMPERATURE, TemperatureStrategy) and isinstance(HOTTEST, HottestStrategy)
    for name, strategy in STRATEGIES.items():
        assert strategy.name == name


def test_unknown_strategy_lists_the_valid_names() -> None:
    with pytest.raises(ValueError, match=r"'coolest'.*first, gap, hottest, loaded, temperature"):
        get_strategy("coolest")


# -- seed 003 "Address space gaps", with 1-byte addresses, through suggest_peer ---------------------------


def test_seed_first_takes_the_first_callable_the_others_the_biggest_gap() -> None:
    # node 00000000, connected only with 10000000 in bin 0, known in bin 0: 10000001 and 11000000
    t = table_of(["10000000"], ["10000001", "11000000"])
    assert picks(t) == {
        "first": a("10000001"),
        "gap": a("11000000"),  # 11xxxxxx (po 1), where 10000001 would leave it the biggest gap
        "temperature": a("11000000"),
        "hottest": a("11000000"),
    }


def test_seed_the_furthest_candidate_covers_the_bigger_gap() -> None:
    # connected 10000000; known 10000001 (po 7 from it, 1/256) and 10010000 (po 3, 1/16)
    t = table_of(["10000000"], ["10000001", "10010000"])
    assert picks(t) == {
        "first": a("10000001"),
        "gap": a("10010000"),
        "temperature": a("10010000"),
        "hottest": a("10010000"),
    }


def test_seed_fig3_hottest_fills_01_before_11() -> None:
    # Fig. 3: node 00000000, connected 10000000 and 10000001, known 11000000 and 01000000. 01xxxxxx (a
    # quarter, served by the node alone: 1/4) is hotter than 11xxxxxx (a quarter, served by two: 1/8)
    t = table_of(["10000000", "10000001"], ["11000000", "01000000"])
    assert suggest_peer(t, HOTTEST) == a("01000000")
    # gap and temperature choose within the shallowest bin that needs a peer (bin 0), as documented
    assert suggest_peer(t, TEMPERATURE) == suggest_peer(t, GAP) == a("11000000")
    t.connect(a("01000000"))
    assert suggest_peer(t, HOTTEST) == a("11000000")  # then the other quarter


def test_hottest_across_bins_when_no_bin_is_empty() -> None:
    # bin 0 holds 10000000, 10000001, 10000010: 11xxxxxx is served by three (1/4 / 3 = 1/12);
    # bin 1 holds 01000000: 011xxxxx is served by one (1/8 / 1). The smaller gap is the hotter one.
    t = table_of(["10000000", "10000001", "10000010", "01000000"], ["11000000", "01100000", "10100000"])
    assert suggest_peer(t, HOTTEST) == a("01100000")
    assert suggest_peer(t, TEMPERATURE) == suggest_peer(t, GAP) == a("11000000")
    assert suggest_peer(t, FIRST) == a("11000000")


def test_hottest_gives_an_empty_bin_its_first_peer_first() -> None:
    # bin 0's 11xxxxxx (1/4 served by 1) is hotter than bin 3 as a whole, but bin 3 holds no peer yet
    t = table_of(["10000000", "01000000", "00100000"], ["11000000", "00010000"])
    assert suggest_peer(t, HOTTEST) == a("00010000")
    t.connect(a("00010000"))
    assert suggest_peer(t, HOTTEST) == a("11000000")


def test_temperature_prefers_a_hotter_smaller_gap_in_a_bin() -> None:
    # bin 0: 101xxxxx (po 2) served by 10000000, 10000001, 10000010: 1/8 / 3 = 1/24;
    # 1101xxxx (po 3) served by 11000000 alone: 1/16 (and 1111xxxx likewise)
    t = table_of(["10000000", "10000001", "10000010", "11000000", "11100000"], ["10100000", "11010000"])
    assert suggest_peer(t, GAP) == a("10100000")
    assert suggest_peer(t, TEMPERATURE) == a("11010000")


def test_ties_go_to_the_lower_po_then_the_lower_anchor_then_the_nearest_to_it() -> None:
    # 111xxxxx (po 2) served by 11000000 and 11000001: 1/16; 1001xxxx (po 3) served by 10000000: 1/16
    t = table_of(["10000000", "10100000", "11000000", "11000001"], ["10010000", "11100000"])
    assert suggest_peer(t, TEMPERATURE) == a("11100000")
    # 101xxxxx and 111xxxxx are both po 2, served by one: the lower anchor (10000000 < 11000000) first
    t = table_of(["10000000", "11000000"], ["11100000", "10100000"])
    assert suggest_peer(t, GAP) == suggest_peer(t, TEMPERATURE) == a("10100000")
    # one gap, several candidates: the nearest to its anchor (10000000), whatever the learning order
    for order in (["10111111", "10100001"], ["10100001", "10111111"]):
        t = table_of(["10000000", "11000000"], order)
        assert suggest_peer(t, GAP) == suggest_peer(t, TEMPERATURE) == a("10100001")


def test_an_empty_bin_takes_the_candidate_nearest_the_base_mirror() -> None:
    # bin 0 holds no connected peer: it is one gap; the candidate nearest to 10000000 (base, bit 0 flipped)
    t = table_of([], ["11110000", "10001000", "10000011"])
    assert suggest_peer(t, GAP) == suggest_peer(t, TEMPERATURE) == suggest_peer(t, HOTTEST) == a("10000011")
    other = PeerTable(a("00111100"))  # another node takes another peer of the same candidates
    for k in ["11110000", "10001000", "10000011"]:
        other.add_known(a(k))
    assert suggest_peer(other, GAP) == a("10001000")  # nearest to 10111100


# -- random tables against brute force from the definitions ----------------------------------------------


def brute_gap(members: list[int], candidate: int, bits: int) -> tuple[int, int, int]:
    """(po, serving, anchor) of the gap ``candidate`` lies in, straight from the definition.

    Enumerates every region R(n, p) of every member, keeps those holding no member (the gaps), and finds
    the one holding the candidate; its serving members share its first p + 1 bits, the lowest anchors it.
    """
    found: set[tuple[int, int]] = set()
    for n in members:
        for p in range(bits):
            shift = bits - p - 1
            head = (n >> shift) ^ 1  # the first p bits of n, then bit p flipped
            if any(m >> shift == head for m in members):
                continue  # not a gap
            if candidate >> shift == head:
                found.add((p, n >> shift))
    assert len(found) == 1, "a non-member lies in exactly one gap"
    ((p, head),) = found
    serving = sorted(m for m in members if m >> (bits - p - 1) == head)
    return p, len(serving), serving[0]


def offered_bins(t: PeerTable) -> list[int]:
    """The policy's bins, from its definition: unsaturated with a candidate, else the neighbourhood's."""
    unsaturated = [
        po for po in range(t.max_po + 1) if len(t.connected(po)) < t.saturation and t.unconnected_count(po)
    ]
    return unsaturated or [po for po in range(t.depth(), t.max_po + 1) if t.unconnected_count(po)]


def brute_pick(t: PeerTable, name: str) -> bytes | None:
    """What ``name`` should suggest, by scoring every candidate of the offered bins from the definitions."""
    bins = offered_bins(t)
    if not bins:
        return None
    nbits = 8 * len(t.base)
    members = [int.from_bytes(m) for m in [t.base, *t.connected_peers()]]

    def best_in(po: int, hottest: bool) -> tuple[tuple[float, ...], bytes]:
        prefix, _ = t.bin_region(po)
        pool = [int.from_bytes(c) for c in t.unconnected(po)]
        if not t.connected(po) and po < t.max_po:  # the bin is one gap: nearest to its prefix
            target = int.from_bytes(prefix)
            c = min(pool, key=lambda c: c ^ target)
            return (0,), c.to_bytes(len(t.base))
        scored: list[tuple[tuple[float, ...], int]] = []
        for c in pool:
            p, serving, anchor = brute_gap(members, c, nbits)
            rank: tuple[float, ...] = (serving << (p + 1), p, anchor) if hottest else (p, anchor)
            if name == "loaded":  # requests through the bin plus its uniform share, times the gap's share
                load = t.requests.count(po) + 2.0 ** -(po + 1)
                rank = (-load * 2.0 ** (po - p) / serving, p, anchor)
            scored.append(((*rank, c ^ anchor), c))
        key, c = min(scored)
        return key[:-1], c.to_bytes(len(t.base))

    if name == "first":
        return next(t.unconnected(bins[0]))
    if name in ("gap", "temperature"):
        return best_in(bins[0], hottest=name == "temperature")[1]
    empty = [po for po in bins if not t.connected(po)]
    if empty:
        return best_in(empty[0], hottest=True)[1]
    return min(best_in(po, hottest=True) for po in bins)[1]


@st.composite
def tables(draw: st.DrawFn) -> PeerTable:
    """A random table (1- or 2-byte addresses, various bin caps), some of its peers connected."""
    nbytes = draw(st.sampled_from([1, 2]))
    bits = 8 * nbytes
    base = draw(st.integers(0, 2**bits - 1))
    # XOR distances with random leading zeros, so that bins and gaps at every depth show up
    offsets = draw(
        st.lists(
            st.tuples(st.integers(1, 2**bits - 1), st.integers(0, bits - 1)).map(lambda t: t[0] >> t[1] or 1),
            min_size=1,
            max_size=30,
        )
    )
    peers = list(dict.fromkeys((base ^ o).to_bytes(nbytes) for o in offsets))
    t = PeerTable(
        base.to_bytes(nbytes),
        saturation=draw(st.integers(1, 6)),
        neighbourhood_size=draw(st.integers(1, 4)),
        max_po=draw(st.sampled_from([31, 3, 5])),
    )
    for p in peers:
        t.add_known(p)
    share = draw(st.sampled_from([2, 4]))  # connect half or three quarters: fewer empty bins, more gaps
    for p in peers:
        if draw(st.integers(0, share - 1)):
            t.connect(p)
    return t


@st.composite
def layered_tables(draw: st.DrawFn) -> PeerTable:
    """Every one of the first few bins holds connected peers and candidates, none saturated: the hottest
    gap may then be in any of them (where ``hottest`` and ``temperature`` part ways)."""
    base = draw(st.integers(0, 2**16 - 1))
    t = PeerTable(base.to_bytes(2), saturation=8, neighbourhood_size=2)
    for po in range(draw(st.integers(2, 6))):
        for connect in [True] * draw(st.integers(1, 3)) + [False] * draw(st.integers(1, 3)):
            tail = draw(st.integers(0, 2 ** (15 - po) - 1)) >> draw(st.integers(0, 15 - po))
            peer = (base ^ (1 << (15 - po)) ^ tail).to_bytes(2)
            if not t.is_connected(peer):
                t.connect(peer) if connect else t.add_known(peer)
    return t


@settings(max_examples=400, deadline=None)
@given(st.one_of(tables(), layered_tables()))
def test_picks_match_brute_force(t: PeerTable) -> None:
    for name, strategy in STRATEGIES.items():
        assert suggest_peer(t, strategy) == brute_pick(t, name), name


@settings(max_examples=300, deadline=None)
@given(tables())
def test_search_agrees_with_the_old_ranking(t: PeerTable) -> None:
    """Where the old per-candidate ranking has one best candidate, the search picks it; on ties it picks
    one of the best (the old ranking broke ties by learning order, the search by nearness to the gap)."""
    bins = offered_bins(t)
    if not bins:
        return
    po = bins[0]
    candidates = list(t.unconnected(po))
    connected = t.connected_pot()
    for strategy, rank, key in [
        (GAP, rank_by_gap, gap_key),
        (TEMPERATURE, rank_by_temperature, temperature_key),
    ]:
        picked = suggest_peer(t, strategy)
        assert picked is not None
        old = rank(connected, candidates)
        assert key(connected, picked) == key(connected, old)
        if sum(key(connected, c) == key(connected, old) for c in candidates) == 1:
            assert picked == old


def test_the_old_ranking_keys() -> None:
    t = table_of(["10000000"], ["10000001", "11000000"])
    pot = t.connected_pot()
    assert gap_key(pot, a("11000000")) == 1 and gap_key(pot, a("10000001")) == 7
    assert rank_by_gap(pot, [a("10000001"), a("11000000")]) == a("11000000")
    with pytest.raises(ValueError, match="no candidates"):
        rank_by_temperature(pot, [])


# -- the policy ------------------------------------------------------------------------------------


def settle(t: PeerTable, strategy: SuggestionStrategy = FIRST) -> list[bytes]:
    """Suggest and connect until settled; the suggestions in order."""
    picked: list[bytes] = []
    while (s := suggest_peer(t, strategy)) is not None:
        assert not t.is_connected(s) and t.is_known(s)
        t.connect(s)
        picked.append(s)
        assert len(picked) <= t.known_count()
    assert is_settled(t)
    return picked


def test_empty_table_is_settled() -> None:
    t = PeerTable(BASE)
    for strategy in STRATEGIES.values():
        assert suggest_peer(t, strategy) is None
    assert is_settled(t)


def test_fills_shallow_bins_first() -> None:
    t = table_of(known=["00010000", "01000000", "10000000", "00000001"])
    assert suggest_peer(t, FIRST) == a("10000000")
    assert not is_settled(t)


def test_stops_at_saturation_below_depth() -> None:
    t = table_of(
        known=["10000000", "10010000", "10100000", "10110000", "00000001", "00000010"],
        saturation=2,
        neighbourhood_size=2,
    )
    assert settle(t) == [a("10000000"), a("10010000"), a("00000010"), a("00000001")]
    assert t.depth() == 1  # bins 1-5 hold no peer: the empty bin 1 caps the depth, bin 0 is below it
    assert t.connected(0) == [a("10000000"), a("10010000")]
    assert t.known_count() - t.connected_count() == 2


def test_completes_the_neighbourhood_and_depth_grows() -> None:
    t = table_of(
        known=[
            *["10000000", "10000001"],  # bin 0
            *["01000000", "00100000", "00010000", "00001000"],  # bins 1-4, one each (no empty bin caps)
            *["00000100", "00000101", "00000110", "00000111"],  # bin 5
            *["00000010", "00000011"],  # bin 6
            "00000001",  # bin 7
        ],
        saturation=1,
        neighbourhood_size=3,
    )
    picked = settle(t)
    # saturation first: one per bin 0..7; depth is then 5 and bins 5 and 6 fill up
    first_pass = [a(f"{1 << (7 - po):08b}") for po in range(8)]  # 10000000, 01000000, ..., 00000001
    assert picked == [*first_pass, *(a(x) for x in ["00000101", "00000110", "00000111", "00000011"])]
    assert t.depth() == 6
    assert not t.is_connected(a("10000001"))  # bin 0 stays at saturation


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_ends_in_the_same_kind_of_settled_table(name: str) -> None:
    rng = random.Random(7)
    t = PeerTable(BASE, saturation=2, neighbourhood_size=2)
    for x in rng.sample(range(1, 256), 60):
        t.add_known(bytes([x]))
    settle(t, get_strategy(name))
    depth = t.depth()
    for po in range(depth):
        assert len(t.connected(po)) == min(2, len(t.known(po)))
    for po in range(depth, t.max_po + 1):
        assert set(t.known(po)) == set(t.connected(po))


def test_neighbourhood_pass_uses_the_strategy() -> None:
    # bin 5 is the neighbourhood and already saturated (saturation 1); 00000101 is po 7 from 00000100;
    # bins 0-4 hold one peer each, so no empty bin caps the depth below 5
    shallow = ["10000000", "01000000", "00100000", "00010000", "00001000"]
    t = table_of([*shallow, "00000100", "00000010", "00000001"], ["00000101", "00000110"], saturation=1)
    assert t.depth() == 5
    assert suggest_peer(t, FIRST) == a("00000101")
    assert suggest_peer(t, GAP) == a("00000110")
    assert suggest_peer(t, HOTTEST) == a("00000110")


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_honours_is_callable(name: str) -> None:
    strategy = get_strategy(name)
    t = table_of(["10000000"], ["10000001", "11000000", "01000000"], saturation=2)
    best = suggest_peer(t, strategy)
    assert best is not None
    second = suggest_peer(t, strategy, lambda p: p != best)
    assert second is not None and second != best
    assert suggest_peer(t, strategy, lambda p: p[0] < 0x80) == a("01000000")  # bin 0 uncallable: bin 1
    assert suggest_peer(t, strategy, lambda p: False) is None
    assert is_settled(t, lambda p: False)
    assert not is_settled(t, lambda p: p == a("01000000"))


def test_uncallable_best_gap_falls_back_to_the_next_best() -> None:
    t = table_of(["10000000"], ["10000001", "11000000", "10010000"])
    assert suggest_peer(t, GAP) == a("11000000")  # po 1
    assert suggest_peer(t, GAP, lambda p: p != a("11000000")) == a("10010000")  # po 3
    assert suggest_peer(t, GAP, lambda p: p == a("10000001")) == a("10000001")  # po 7


def test_settled_when_saturated_and_neighbourhood_complete() -> None:
    # bins 1-5 hold one connected peer each (unsaturated, but nothing else known there)
    shallow = ["01000000", "00100000", "00010000", "00001000", "00000100"]
    t = table_of(
        ["10000000", "10000001", *shallow, "00000010", "00000001", "00000011"], ["11000000"], saturation=2
    )
    assert t.depth() == 6
    assert all(suggest_peer(t, s) is None for s in STRATEGIES.values())
    assert is_settled(t)
    t.add_known(a("00000101"))  # bin 5 below depth, unsaturated
    assert suggest_peer(t, GAP) == a("00000101")


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_simulation_64_nodes_converge(name: str) -> None:
    strategy = get_strategy(name)
    rng = random.Random(64)
    addresses = [x.to_bytes(2) for x in rng.sample(range(2**16), 64)]
    tables: dict[bytes, PeerTable] = {}
    for me in addresses:
        t = PeerTable(me)
        others = [x for x in addresses if x != me]
        rng.shuffle(others)  # everyone learns the others in its own order
        for x in others:
            t.add_known(x)
        tables[me] = t

    for _ in range(64 * 64):  # rounds, bounded
        moved = False
        for me, t in tables.items():
            peer = suggest_peer(t, strategy)
            if peer is not None:
                t.connect(peer)  # connections are two-way
                tables[peer].connect(me)
                moved = True
        if not moved:
            break
    else:
        pytest.fail("suggestions did not converge")

    total = 0
    for t in tables.values():
        depth = t.depth()
        assert depth > 0
        assert is_settled(t)
        for po in range(depth):
            assert len(t.connected(po)) >= min(t.saturation, len(t.known(po)))
        for po in range(depth, t.max_po + 1):
            assert set(t.known(po)) <= set(t.connected(po))
        total += t.connected_count()
    assert total < len(tables) * 63 / 2  # far from everyone connected to everyone


# -- loaded: temperature with request load ---------------------------------------------------------


def test_loaded_without_requests_is_hottest_and_follows_the_load_after() -> None:
    # bin 0: 11xxxxxx served by 10000000 alone (1/4 / 1); bin 1: 011xxxxx served by 01000000 (1/8 / 1)
    t = table_of(["10000000", "01000000"], ["11000000", "01100000"])
    assert suggest_peer(t, LOADED) == suggest_peer(t, HOTTEST) == a("11000000")
    for _ in range(3):  # three requests through bin 1, none through bin 0: bin 1's gap is now hotter
        t.requests.record(1)
    assert suggest_peer(t, LOADED) == a("01100000")
    assert suggest_peer(t, HOTTEST) == a("11000000")


def test_bin_load_halves_at_its_horizon() -> None:
    load = BinLoad(3, horizon=4)
    for po in (0, 0, 1):
        load.record(po)
    assert (load.count(0), load.count(1), load.total) == (2.0, 1.0, 3.0)
    load.record(3)
    assert (load.count(0), load.count(1), load.count(3), load.total) == (1.0, 0.5, 0.5, 2.0)
    assert load.weight(2) == 2.0**-3
    with pytest.raises(ValueError, match="at least 2 requests"):
        BinLoad(3, horizon=1)


@settings(max_examples=200, deadline=None)
@given(st.one_of(tables(), layered_tables()), st.lists(st.integers(0, 6), max_size=40))
def test_loaded_matches_brute_force_under_load(t: PeerTable, requests: list[int]) -> None:
    for po in requests:
        t.requests.record(min(po, t.max_po))
    assert suggest_peer(t, LOADED) == brute_pick(t, "loaded")
