"""Peer suggestion: the strategies (seed 003 "Address space gaps" examples, brute force) and the policy."""

from __future__ import annotations

import random
from collections.abc import Sequence
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kademlia import (
    STRATEGIES,
    FirstStrategy,
    GapStrategy,
    PeerTable,
    SuggestionStrategy,
    TemperatureStrategy,
    get_strategy,
    is_settled,
    suggest_peer,
)
from pot import Gap

FIRST = get_strategy("first")
GAP = get_strategy("gap")
TEMPERATURE = get_strategy("temperature")


def a(bits: str) -> bytes:
    """A 1-byte address from its 8-bit string, e.g. ``a("10000001")``."""
    assert len(bits) == 8
    return bytes([int(bits, 2)])


BASE = a("00000000")
BIN0 = a("10000000")  # base with bit 0 flipped: the prefix of bin 0


def table_of(connected: Sequence[str] = (), known: Sequence[str] = (), **kwargs: int) -> PeerTable:
    """A table with base 00000000: ``known`` learned first, then ``connected`` connected, in order."""
    t = PeerTable(BASE, **kwargs)
    for k in known:
        t.add_known(a(k))
    for c in connected:
        t.connect(a(c))
    return t


def region(gap: Gap) -> str:
    """The gap's region R(anchor, po) of a 1-byte address space as a pattern like ``101xxxxx``."""
    bits = f"{gap.anchor[0]:08b}"
    flipped = "1" if bits[gap.po] == "0" else "0"
    return bits[: gap.po] + flipped + "x" * (7 - gap.po)


def candidates_in(table: PeerTable, po: int) -> list[bytes]:
    return [p for p in table.known(po) if not table.is_connected(p)]


# -- registry ------------------------------------------------------------------------------------


def test_registry_names_and_lookup() -> None:
    assert sorted(STRATEGIES) == ["first", "gap", "temperature"]
    assert isinstance(FIRST, FirstStrategy) and FIRST.name == "first"
    assert isinstance(GAP, GapStrategy) and GAP.name == "gap"
    assert isinstance(TEMPERATURE, TemperatureStrategy) and TEMPERATURE.name == "temperature"
    for name, strategy in STRATEGIES.items():
        assert strategy.name == name


def test_unknown_strategy_lists_the_valid_names() -> None:
    with pytest.raises(ValueError, match=r"'hottest'.*first, gap, temperature"):
        get_strategy("hottest")


@pytest.mark.parametrize("strategy", list(STRATEGIES.values()), ids=list(STRATEGIES))
def test_pick_needs_candidates(strategy: SuggestionStrategy) -> None:
    with pytest.raises(ValueError, match="bin 0"):
        strategy.pick(table_of(["10000000"]), 0, [])


# -- seed 003 "Address space gaps", with 1-byte addresses ---------------------------------------------


def test_seed_first_takes_the_first_callable_but_gap_covers_the_biggest_gap() -> None:
    # node 00000000, connected only with 10000000 in bin 0, known in bin 0: 10000001 and 11000000
    t = table_of(["10000000"], ["10000001", "11000000"])
    candidates = candidates_in(t, 0)
    assert candidates == [a("10000001"), a("11000000")]
    assert FIRST.pick(t, 0, candidates) == a("10000001")
    assert GAP.pick(t, 0, candidates) == a("11000000")
    assert GapStrategy.key(t.connected_pot(), a("11000000")) == 1
    assert GapStrategy.key(t.connected_pot(), a("10000001")) == 7
    # picking 10000001 would leave the biggest gap of bin 0 at po 1, 11xxxxxx
    after_first = t.connected_pot().add(a("10000001"))
    gap = after_first.biggest_address_gap(BIN0, 1)
    assert gap is not None and (gap.po, region(gap)) == (1, "11xxxxxx")


def test_seed_after_connecting_11000000_the_biggest_gaps_of_bin_0_are_po_2() -> None:
    t = table_of(["10000000", "11000000"], ["10000001"])
    gap = t.connected_pot().biggest_address_gap(BIN0, 1)
    assert gap is not None
    assert gap.po == 2 and gap.size == 1 / 8
    assert region(gap) in {"101xxxxx", "111xxxxx"}
    # both are gaps of po 2: adding a member in either leaves the other as the biggest
    for fill, other in ((a("10100000"), "111xxxxx"), (a("11100000"), "101xxxxx")):
        rest = t.connected_pot().add(fill).biggest_address_gap(BIN0, 1)
        assert rest is not None and (rest.po, region(rest)) == (2, other)


def test_seed_the_furthest_candidate_covers_the_bigger_gap() -> None:
    # connected 10000000; known 10000001 (po 7 from it, 1/256) and 10010000 (po 3, 1/16)
    t = table_of(["10000000"], ["10000001", "10010000"])
    pot = t.connected_pot()
    assert GAP.pick(t, 0, candidates_in(t, 0)) == a("10010000")
    assert GapStrategy.key(pot, a("10010000")) == 3
    assert GapStrategy.key(pot, a("10000001")) == 7
    assert FIRST.pick(t, 0, candidates_in(t, 0)) == a("10000001")


def test_seed_fig3_01_is_hotter_than_11() -> None:
    # node 00000000 with 10000000 and 10000001 connected (Fig. 3)
    t = table_of(["10000000", "10000001"])
    pot = t.connected_pot()
    biggest = pot.biggest_address_gap()
    assert biggest is not None and biggest.po == 1  # 01xxxxxx and 11xxxxxx, both 1/4
    hottest = pot.hottest_gap()
    assert hottest is not None
    assert (region(hottest), hottest.temperature, hottest.serving) == ("01xxxxxx", 1 / 4, 1)
    # the two candidates lie in different bins of the base: rank them with the strategy's key directly
    in_01, in_11 = a("01000000"), a("11000000")
    assert TemperatureStrategy.key(pot, in_01)[0] == -Fraction(1, 4)
    assert TemperatureStrategy.key(pot, in_11)[0] == -Fraction(1, 8)  # served by 2
    assert min([in_11, in_01], key=lambda c: TemperatureStrategy.key(pot, c)) == in_01
    # size alone cannot tell them apart: both gaps have po 1
    assert GapStrategy.key(pot, in_01) == GapStrategy.key(pot, in_11) == 1


def test_temperature_prefers_a_hotter_smaller_gap_in_a_bin() -> None:
    # bin 0: 101xxxxx (po 2) served by 10000000, 10000001, 10000010: 1/8 / 3 = 1/24;
    # 1101xxxx (po 3) served by 11000000 alone: 1/16 (and 1111xxxx likewise)
    t = table_of(["10000000", "10000001", "10000010", "11000000", "11100000"], ["10100000", "11010000"])
    candidates = candidates_in(t, 0)
    assert GAP.pick(t, 0, candidates) == a("10100000")
    assert TEMPERATURE.pick(t, 0, candidates) == a("11010000")
    # 1/16 tie at the same po: the first learned, in either order
    assert TEMPERATURE.pick(t, 0, [*candidates, a("11110000")]) == a("11010000")
    assert TEMPERATURE.pick(t, 0, [a("11110000"), *candidates]) == a("11110000")


def test_temperature_ties_go_to_the_lower_po_then_the_first_learned() -> None:
    # 111xxxxx (po 2) served by 11000000 and 11000001: 1/16; 1001xxxx (po 3) served by 10000000: 1/16
    t = table_of(["10000000", "10100000", "11000000", "11000001"], ["10010000", "11100000"])
    candidates = candidates_in(t, 0)
    pot = t.connected_pot()
    assert TemperatureStrategy.key(pot, a("10010000")) == (-Fraction(1, 16), 3)
    assert TemperatureStrategy.key(pot, a("11100000")) == (-Fraction(1, 16), 2)
    assert TEMPERATURE.pick(t, 0, candidates) == a("11100000")
    # same temperature and po: the first learned
    assert TEMPERATURE.pick(t, 0, [a("10110000"), a("10010000")]) == a("10110000")
    assert TEMPERATURE.pick(t, 0, [a("10010000"), a("10110000")]) == a("10010000")
    assert GAP.pick(t, 0, [a("10110000"), a("10010000")]) == a("10110000")


def test_gap_ties_go_to_the_first_learned() -> None:
    t = table_of(["10000000", "11000000"], ["11100000", "10100000"])
    assert GAP.pick(t, 0, candidates_in(t, 0)) == a("11100000")
    t = table_of(["10000000", "11000000"], ["10100000", "11100000"])
    assert GAP.pick(t, 0, candidates_in(t, 0)) == a("10100000")


# -- random tables against brute force ------------------------------------------------------------


def brute_gap(members: list[int], candidate: int, bits: int) -> tuple[int, int, Fraction]:
    """(po, serving, size) of the gap ``candidate`` lies in, straight from the definition.

    Enumerates every region R(n, p) of every member, keeps those holding no member (the gaps), and
    finds the ones holding the candidate; with 8-bit addresses the size is counted address by address.
    """
    found: list[tuple[int, int]] = []
    for n in members:
        for p in range(bits):
            shift = bits - p - 1
            head = (n >> shift) ^ 1  # the first p bits of n, then bit p flipped
            if any(m >> shift == head for m in members):
                continue  # not a gap
            if candidate >> shift == head:
                found.append((p, n))
    assert found, "every non-member lies in some gap"
    p = found[0][0]
    assert {q for q, _ in found} == {p}, "the gaps holding one address are one region"
    n = found[0][1]
    shift = bits - p - 1
    serving = sum(1 for m in members if m >> shift == n >> shift)
    if bits == 8:
        size = Fraction(sum(1 for x in range(256) if x >> shift == (n >> shift) ^ 1), 256)
        assert size == Fraction(1, 2 ** (p + 1))
    else:
        size = Fraction(1, 2 ** (p + 1))
    return p, serving, size


@st.composite
def tables(draw: st.DrawFn) -> tuple[PeerTable, int, list[bytes]]:
    """A random table (1- or 2-byte addresses) and a bin with its unconnected candidates."""
    nbytes = draw(st.sampled_from([1, 2]))
    bits = 8 * nbytes
    base = draw(st.integers(0, 2**bits - 1))
    # XOR distances with random leading zeros, so that bins and gaps at every depth show up
    offsets = draw(
        st.lists(
            st.tuples(st.integers(1, 2**bits - 1), st.integers(0, bits - 1)).map(lambda t: t[0] >> t[1] or 1),
            min_size=1,
            max_size=24,
        )
    )
    peers = list(dict.fromkeys((base ^ o).to_bytes(nbytes) for o in offsets))
    t = PeerTable(base.to_bytes(nbytes))
    for p in peers:
        t.add_known(p)
    for p in peers:
        if draw(st.booleans()):
            t.connect(p)
    unconnected = [p for p in peers if not t.is_connected(p)]
    if not unconnected:
        return t, t.bin_of(peers[0]), []
    po = t.bin_of(draw(st.sampled_from(unconnected)))
    return t, po, candidates_in(t, po)


@settings(max_examples=300, deadline=None)
@given(tables())
def test_gap_and_temperature_picks_match_brute_force(case: tuple[PeerTable, int, list[bytes]]) -> None:
    t, po, candidates = case
    if not candidates:
        return
    bits = 8 * len(t.base)
    members = [int.from_bytes(m) for m in [t.base, *t.connected_peers()]]
    truth = {c: brute_gap(members, int.from_bytes(c), bits) for c in candidates}

    pot = t.connected_pot()
    for c, (p, serving, size) in truth.items():
        assert GapStrategy.key(pot, c) == p
        assert TemperatureStrategy.key(pot, c) == (-size / serving, p)

    # ties: the first in candidate (first-learned) order
    order = {c: i for i, c in enumerate(candidates)}
    expect_gap = min(candidates, key=lambda c: (truth[c][0], order[c]))
    expect_temp = min(candidates, key=lambda c: (-truth[c][2] / truth[c][1], truth[c][0], order[c]))
    assert GAP.pick(t, po, candidates) == expect_gap
    assert TEMPERATURE.pick(t, po, candidates) == expect_temp
    assert FIRST.pick(t, po, candidates) == candidates[0]


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
    assert suggest_peer(t, GAP) is None
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


def test_first_pass_uses_the_strategy() -> None:
    t = table_of(["10000000"], ["10000001", "11000000"])
    assert suggest_peer(t, FIRST) == a("10000001")
    assert suggest_peer(t, GAP) == a("11000000")
    assert suggest_peer(t, TEMPERATURE) == a("11000000")


def test_neighbourhood_pass_uses_the_strategy() -> None:
    # bin 5 is the neighbourhood and already saturated (saturation 1); 00000101 is po 7 from 00000100;
    # bins 0-4 hold one peer each, so no empty bin caps the depth below 5
    shallow = ["10000000", "01000000", "00100000", "00010000", "00001000"]
    t = table_of([*shallow, "00000100", "00000010", "00000001"], ["00000101", "00000110"], saturation=1)
    assert t.depth() == 5
    assert suggest_peer(t, FIRST) == a("00000101")
    assert suggest_peer(t, GAP) == a("00000110")


def test_honours_is_callable() -> None:
    t = table_of(known=["10000000", "10000001", "01000000"])
    assert suggest_peer(t, FIRST, lambda p: p != a("10000000")) == a("10000001")
    assert suggest_peer(t, FIRST, lambda p: p[0] < 0x80) == a("01000000")  # bin 0 uncallable: bin 1
    assert suggest_peer(t, FIRST, lambda p: False) is None
    assert is_settled(t, lambda p: False)
    assert not is_settled(t, lambda p: p == a("01000000"))


def test_settled_when_saturated_and_neighbourhood_complete() -> None:
    # bins 1-5 hold one connected peer each (unsaturated, but nothing else known there)
    shallow = ["01000000", "00100000", "00010000", "00001000", "00000100"]
    t = table_of(
        ["10000000", "10000001", *shallow, "00000010", "00000001", "00000011"], ["11000000"], saturation=2
    )
    assert t.depth() == 6
    assert suggest_peer(t, GAP) is None
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
