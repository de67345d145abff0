"""Tests of the gap searches: the worked examples of seed 003, brute force over every address, the caches."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pot import Gap, Pot, covered_gap_po, covering_gap, proximity
from pot._trie import Node, leaf, no_gap_cost, nodes


def b(bits: str) -> bytes:
    """A one-byte address from its 8 bits, as the seed writes them."""
    assert len(bits) == 8
    return bytes([int(bits, 2)])


def pot_of(*bits: str) -> Pot:
    return Pot.from_addresses(b(x) for x in bits)


def is_gap(members: set[bytes], anchor: bytes, po: int) -> bool:
    """Whether R(anchor, po) holds no member, checked over every one-byte address."""
    region = [x for x in range(256) if proximity(bytes([x]), anchor) == po]
    return not any(bytes([x]) in members for x in region)


def gap_region(gap: Gap) -> str:
    """The gap R(anchor, po) of a member-anchored gap, written as the seed does: 11xxxxxx."""
    bits = f"{gap.anchor[0]:08b}"
    return bits[: gap.po] + ("1" if bits[gap.po] == "0" else "0") + "x" * (7 - gap.po)


# --- seed 003, "Address space gaps" -------------------------------------------------------------


def test_gap_definitions_node_0000() -> None:
    # node 0000: the gap 1xxx has PO 0 and size 1/2, the gap 01xx has PO 1 and size 1/4
    pot = pot_of("00000000")
    assert covering_gap(pot, b("10000000")) == Gap(0, b("00000000"), 0.5, 1, 0.5)
    assert covering_gap(pot, b("01000000")) == Gap(1, b("00000000"), 0.25, 1, 0.25)
    biggest = pot.biggest_address_gap()
    assert biggest == Gap(0, b("00000000"), 0.5, 1, 0.5)
    assert gap_region(biggest) == "1xxxxxxx"


def test_gaps_for_peer_suggestion_first_example() -> None:
    # node 00000000 connected to 10000000; known for bin 0: 10000001 and 11000000
    node = b("00000000")
    connected = Pot.from_addresses([node, b("10000000")])
    bin0 = (b("10000000"), 1)  # node with bit 0 flipped, 1 bit
    gap = connected.biggest_address_gap(*bin0)
    assert gap is not None
    assert (gap.po, gap.anchor, gap.size, gap.serving) == (1, b("10000000"), 0.25, 1)
    assert gap_region(gap) == "11xxxxxx"
    assert covered_gap_po(connected, b("11000000")) == 1
    assert covered_gap_po(connected, b("10000001")) == 7
    known = [b("10000001"), b("11000000")]
    assert min(known, key=lambda x: covered_gap_po(connected, x)) == b("11000000")

    # once 11000000 is connected, the biggest gaps in bin 0 are PO 2: 101xxxxx and 111xxxxx
    connected = connected.add(b("11000000"))
    gap = connected.biggest_address_gap(*bin0)
    assert gap is not None
    assert (gap.po, gap.anchor, gap.size, gap.serving) == (2, b("10000000"), 0.125, 1)
    assert gap_region(gap) == "101xxxxx"  # the lower anchor of the two
    members = set(connected)
    assert is_gap(members, b("10000000"), 2) and is_gap(members, b("11000000"), 2)
    assert not is_gap(members, b("10000000"), 1)  # 11xxxxxx is filled


def test_gaps_for_peer_suggestion_second_example() -> None:
    # known 10000001 and 10010000 (the seed writes `1001000`): 10010000 covers PO 3, 10000001 PO 7
    connected = pot_of("00000000", "10000000")
    assert covered_gap_po(connected, b("10010000")) == 3
    assert covered_gap_po(connected, b("10000001")) == 7
    assert covering_gap(connected, b("10010000")).size == 1 / 16
    assert covering_gap(connected, b("10000001")).size == 1 / 256
    assert covering_gap(connected, b("10010000")) == Gap(3, b("10000000"), 1 / 16, 1, 1 / 16)


def test_fig3_temperature() -> None:
    # S = {00000000, 10000000, 10000001}: 01xxxxxx is served by the node alone, 11xxxxxx by two peers
    pot = pot_of("00000000", "10000000", "10000001")
    hottest = pot.hottest_gap()
    assert hottest == Gap(1, b("00000000"), 0.25, 1, 0.25)
    assert gap_region(hottest) == "01xxxxxx"
    other = covering_gap(pot, b("11000000"))
    assert other == Gap(1, b("10000000"), 0.25, 2, 0.125)
    assert gap_region(other) == "11xxxxxx"
    biggest = pot.biggest_address_gap()
    assert biggest is not None and biggest.po == 1 and biggest.size == 0.25
    assert biggest.anchor == b("00000000")  # the two PO 1 gaps tie; the lower anchor wins


def test_hottest_and_biggest_differ() -> None:
    # 11xxxxxx (PO 1) is served by three members: 1/12; 001xxxxx (PO 2) by one: 1/8
    pot = pot_of("00000000", "01000000", "10000000", "10000001", "10000010")
    assert pot.biggest_address_gap() == Gap(1, b("10000000"), 0.25, 3, 0.25 / 3)
    assert pot.hottest_gap() == Gap(2, b("00000000"), 0.125, 1, 0.125)


# --- edge cases ---------------------------------------------------------------------------------


def test_no_gap() -> None:
    assert Pot().biggest_address_gap() is None
    assert Pot().hottest_gap() is None
    full = Pot.from_addresses(bytes([x]) for x in range(256))
    assert full.biggest_address_gap() is None
    assert full.hottest_gap() is None
    assert full.biggest_address_gap(b"\x80", 1) is None
    single = pot_of("10110000")
    assert single.biggest_address_gap(b("10110000"), 8) is None
    assert single.hottest_gap(b("10110000"), 8) is None


def test_empty_region_is_the_gap() -> None:
    region = (b("01111111"), 3)  # 011xxxxx, the anchor is the prefix as given
    expected = Gap(2, b("01111111"), 0.125, 1, 0.125)
    assert Pot().biggest_address_gap(*region) == expected
    assert Pot().hottest_gap(*region) == expected
    pot = pot_of("00000000", "10000000")
    assert pot.biggest_address_gap(*region) == expected
    assert pot.hottest_gap(*region) == expected


def test_region_prefix_may_be_shorter_than_the_addresses() -> None:
    pot = Pot.from_addresses([b"\x00\x00", b"\x80\x00", b"\x80\x01", b"\xc0\x00"])
    for bits in range(9):
        for head in (0x00, 0x80, 0xA5, 0xC0, 0xFF):
            short, full = bytes([head]), bytes([head, 0x5A])
            assert list(pot.with_prefix(short, bits)) == list(pot.with_prefix(full, bits))
            for search in (pot.biggest_address_gap, pot.hottest_gap):
                if pot.with_prefix(full, bits):
                    assert search(short, bits) == search(full, bits)
                else:  # the empty region is the gap, anchored at the prefix as given
                    assert search(short, bits) == Gap.of(bits - 1, short, 1)
                    assert search(full, bits) == Gap.of(bits - 1, full, 1)
    assert pot.biggest_address_gap(b"\xc0", 2) == Gap.of(2, b"\xc0\x00", 1)


def test_bad_regions() -> None:
    pot = pot_of("00000000")
    with pytest.raises(ValueError, match="9 bits is longer than the pot's 8-bit addresses"):
        pot.biggest_address_gap(b"\x00\x00", 9)
    with pytest.raises(ValueError, match="2 bits does not fit a prefix of 0 bytes"):
        pot.hottest_gap(b"", 2)
    with pytest.raises(ValueError, match="-1 bits"):
        pot.biggest_address_gap(b"\x00", -1)


def test_candidate_errors() -> None:
    with pytest.raises(ValueError, match="empty pot"):
        covered_gap_po(Pot(), b"\x00")
    with pytest.raises(ValueError, match="empty pot"):
        covering_gap(Pot(), b"\x00")
    pot = pot_of("00000000")
    assert covered_gap_po(pot, b"\x00") == 8
    with pytest.raises(ValueError, match="00 is a member"):
        covering_gap(pot, b"\x00")
    with pytest.raises(ValueError, match="2 bytes"):
        covered_gap_po(pot, b"\x00\x00")


def test_gap_validates_itself() -> None:
    assert Gap.of(2, b"\x01", 3) == Gap(2, b"\x01", 0.125, 3, 0.125 / 3)
    with pytest.raises(ValueError, match="PO must be >= 0"):
        Gap.of(-1, b"", 1)
    with pytest.raises(ValueError, match="at least one member"):
        Gap.of(1, b"", 0)
    with pytest.raises(ValueError, match=r"size 0\.5 does not match PO 1"):
        Gap(1, b"", 0.5, 1, 0.5)
    with pytest.raises(ValueError, match="temperature"):
        Gap(1, b"", 0.25, 2, 0.25)
    with pytest.raises(dataclasses.FrozenInstanceError):
        Gap.of(1, b"", 1).po = 2  # type: ignore[misc]


# --- brute force over every address -------------------------------------------------------------

Naive = tuple[int, int, int]  # (po, anchor, serving)


def naive_gaps_by_definition(members: set[int], nbits: int, prefix: int, rbits: int) -> set[Naive]:
    """Every gap R(n, p), n in the region, p >= rbits, straight from the definition."""
    counts = [Counter(m >> (nbits - length) for m in members) for length in range(nbits + 1)]
    gaps = set()
    for n in sorted(members):
        if n >> (nbits - rbits) != prefix:
            continue
        for p in range(rbits, nbits):
            head = n >> (nbits - p - 1)  # first p + 1 bits of n
            if counts[p + 1][head ^ 1]:
                continue
            anchor = min(m for m in members if m >> (nbits - p - 1) == head)
            gaps.add((p, anchor, counts[p + 1][head]))
    return gaps


def naive_gaps_by_enumeration(members: set[int], nbits: int, prefix: int, rbits: int) -> set[Naive]:
    """The gap holding each non-member address of the region: the gaps partition what is not a member."""
    heads = [{m >> (nbits - length) for m in members} for length in range(nbits + 1)]
    gaps = set()
    for low in range(1 << (nbits - rbits)):
        x = prefix << (nbits - rbits) | low
        if x in members:
            continue
        shared = [length for length in range(nbits + 1) if x >> (nbits - length) in heads[length]]
        po = max(shared, default=-1)
        if po < rbits:  # no member in the region
            continue
        head = (x >> (nbits - po - 1)) ^ 1  # the members sharing po + 1 bits with the gap's members
        serving = [m for m in members if m >> (nbits - po - 1) == head]
        gaps.add((po, min(serving), len(serving)))
    return gaps


def naive_search(
    members: set[int], nbits: int, prefix_bytes: bytes, rbits: int, hottest: bool
) -> tuple[int, bytes, float, int, float] | None:
    prefix = int.from_bytes(prefix_bytes) >> (len(prefix_bytes) * 8 - rbits)
    if not any(m >> (nbits - rbits) == prefix for m in members):
        if rbits == 0:
            return None
        return (rbits - 1, prefix_bytes, float(Fraction(1, 2**rbits)), 1, float(Fraction(1, 2**rbits)))
    gaps = naive_gaps_by_enumeration(members, nbits, prefix, rbits)
    if not gaps:
        return None
    if hottest:
        po, anchor, serving = min(gaps, key=lambda g: (Fraction(g[2] * 2 ** (g[0] + 1)), g[0], g[1]))
    else:
        po, anchor, serving = min(gaps)
    size = Fraction(1, 2 ** (po + 1))
    return (po, anchor.to_bytes(nbits // 8), float(size), serving, float(size / serving))


def fields(gap: Gap | None) -> tuple[int, bytes, float, int, float] | None:
    return None if gap is None else (gap.po, gap.anchor, gap.size, gap.serving, gap.temperature)


@st.composite
def member_sets(draw: st.DrawFn, nbits: int) -> set[int]:
    """Empty, sparse, dense, nearly full and full sets, and clusters under one prefix."""
    space = 1 << nbits
    kind = draw(st.sampled_from(["sparse", "dense", "full", "cluster"]))
    if kind == "sparse":
        return draw(st.sets(st.integers(0, space - 1), max_size=12))
    if kind == "full":
        return set(range(space)) - draw(st.sets(st.integers(0, space - 1), max_size=3))
    rnd = draw(st.randoms(use_true_random=False))
    if kind == "dense":
        density = draw(st.sampled_from([0.1, 0.3, 0.6, 0.9]))
        return {x for x in range(space) if rnd.random() < density}
    shared = draw(st.integers(1, nbits))
    head = rnd.randrange(1 << shared) << (nbits - shared)
    inside = {head | rnd.randrange(1 << (nbits - shared)) for _ in range(draw(st.integers(1, 10)))}
    return inside | draw(st.sets(st.integers(0, space - 1), max_size=3))


@st.composite
def one_byte_cases(draw: st.DrawFn) -> tuple[set[int], bytes, int]:
    members = draw(member_sets(8))
    rbits = draw(st.integers(0, 8))
    near_a_member = bool(members) and draw(st.booleans())
    source = draw(st.sampled_from(sorted(members))) if near_a_member else draw(st.integers(0, 255))
    garbage = draw(st.integers(0, 255)) & ((1 << (8 - rbits)) - 1)  # bits past the region must not count
    prefix = (source >> (8 - rbits) << (8 - rbits)) | garbage
    return members, bytes([prefix]), rbits


@settings(max_examples=60, deadline=None)
@given(member_sets(8))
def test_naive_models_agree(members: set[int]) -> None:
    for rbits, prefix in [(0, 0), (1, 0), (1, 1), (3, 5), (8, 0x80)]:
        assert naive_gaps_by_definition(members, 8, prefix, rbits) == naive_gaps_by_enumeration(
            members, 8, prefix, rbits
        )


@settings(max_examples=200, deadline=None)
@given(one_byte_cases())
def test_gap_searches_match_brute_force_one_byte(case: tuple[set[int], bytes, int]) -> None:
    members, prefix, rbits = case
    pot = Pot.from_addresses(bytes([m]) for m in members)
    assert fields(pot.biggest_address_gap(prefix, rbits)) == naive_search(members, 8, prefix, rbits, False)
    assert fields(pot.hottest_gap(prefix, rbits)) == naive_search(members, 8, prefix, rbits, True)


@st.composite
def two_byte_cases(draw: st.DrawFn) -> tuple[set[int], bytes]:
    """Members of a 4-bit region (12 free bits) plus a few outside it, and the region's prefix."""
    region = draw(st.integers(0, 15))
    inside = {region << 12 | low for low in draw(member_sets(12))}
    outside = {x for x in draw(st.sets(st.integers(0, 0xFFFF), max_size=6)) if x >> 12 != region}
    garbage = draw(st.integers(0, 0xFFF))
    return inside | outside, (region << 12 | garbage).to_bytes(2)


@settings(max_examples=40, deadline=None)
@given(two_byte_cases())
def test_gap_searches_match_brute_force_in_a_two_byte_region(case: tuple[set[int], bytes]) -> None:
    members, prefix = case
    pot = Pot.from_addresses(m.to_bytes(2) for m in members)
    assert fields(pot.biggest_address_gap(prefix, 4)) == naive_search(members, 16, prefix, 4, False)
    assert fields(pot.hottest_gap(prefix, 4)) == naive_search(members, 16, prefix, 4, True)


@settings(max_examples=100, deadline=None)
@given(member_sets(8).filter(bool), st.lists(st.integers(0, 255), min_size=1, max_size=8))
def test_candidates_match_brute_force(members: set[int], candidates: list[int]) -> None:
    pot = Pot.from_addresses(bytes([m]) for m in members)
    for candidate in candidates:
        address = bytes([candidate])
        po = max(proximity(address, bytes([m])) for m in members)
        assert covered_gap_po(pot, address) == po
        if candidate in members:
            with pytest.raises(ValueError, match="is a member"):
                covering_gap(pot, address)
            continue
        at_po = sorted(m for m in members if proximity(address, bytes([m])) == po)
        size = Fraction(1, 2 ** (po + 1))
        expected = (po, bytes([at_po[0]]), float(size), len(at_po), float(size / len(at_po)))
        assert fields(covering_gap(pot, address)) == expected


# --- the gap caches of the trie nodes (pot._trie) -----------------------------------------------

Cached = tuple[tuple[int, int, int] | None, tuple[int, int, int] | None]  # (po, anchor, serving) x2


def best_of(gaps: set[Naive]) -> Cached:
    """The biggest and the hottest of ``gaps``, ranked by the documented rules."""
    if not gaps:
        return None, None
    return min(gaps), min(gaps, key=lambda g: (g[2] << (g[0] + 1), g[0], g[1]))


def cached(node: Node, nbits: int) -> Cached:
    """What ``node`` caches, in the same shape; "none" is PO ``nbits`` (and the no-gap cost)."""
    big = None if node.big_po == nbits else (node.big_po, int.from_bytes(node.big_addr), node.big_n)
    if node.hot_po == nbits:
        assert node.hot_cost == no_gap_cost(nbits) == 2 << nbits
        hot = None
    else:
        serving = node.hot_cost >> (node.hot_po + 1)
        assert node.hot_cost == serving << (node.hot_po + 1)
        hot = (node.hot_po, int.from_bytes(node.hot_addr), serving)
    return big, hot


def check_caches(pot: Pot) -> None:
    """Every node's caches equal the best gaps strictly inside its subtree, recomputed from scratch."""
    nbits = pot.nbits
    if nbits is None:
        return
    for node in nodes(pot._root):
        members = {n.key for n in nodes(node) if n.kids is None}
        # gaps strictly inside: anchored at a member of the subtree, PO beyond its split (at the split the
        # other child is in the way); those only involve the subtree's own members
        inside = gaps_from_definition(members, nbits, node.key >> (nbits - node.bit), node.bit)
        assert all(po > node.bit for po, _, _ in inside)
        assert cached(node, nbits) == best_of(inside), (node.bit, sorted(members))


@settings(max_examples=100, deadline=None)
@given(member_sets(8))
def test_every_node_caches_its_best_inside_gaps(members: set[int]) -> None:
    check_caches(Pot.from_addresses(bytes([m]) for m in members))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), member_sets(8)), min_size=1, max_size=5), st.integers(0, 0xFF))
def test_caches_stay_right_through_adds_and_removes(steps: list[tuple[bool, set[int]]], low: int) -> None:
    # 16-bit addresses of 8 bits with a fixed low byte; each step adds a set or removes what it names
    pot, model = Pot(), set()
    for is_add, values in steps:
        for value in sorted(values, key=lambda v: (v * 0x9E) & 0xFF):  # not in address order
            address = bytes([value, low])
            if is_add:
                pot = pot.add(address)
                model.add(address)
            elif address in model:
                pot = pot.remove(address)
                model.discard(address)
        check_caches(pot)
        assert pot._root == Pot.from_addresses(model)._root  # caches included: one shape per member set


def test_leaf_and_full_subtree_have_no_inside_gap() -> None:
    pot = Pot.from_addresses(bytes([x]) for x in (0x10, 0x11, 0x80))
    assert cached(leaf(0x10, b"\x10", 8), 8) == (None, None)
    root = pot._root
    assert root is not None and root.kids is not None
    full = root.kids[0]  # {0x10, 0x11}: splits at bit 7, nothing is missing below
    assert (full.bit, full.n) == (7, 2) and cached(full, 8) == (None, None)
    # the root: 0x80 has the path gaps PO 1..7 (served by 1), {0x10, 0x11} the PO 1..6 ones (by 2)
    assert cached(root, 8) == ((1, 0x10, 2), (1, 0x80, 1))


# --- 32-byte addresses: the searches against the definition -------------------------------------


def gaps_from_definition(members: set[int], nbits: int, prefix: int, rbits: int) -> set[Naive]:
    """As ``naive_gaps_by_definition``, with the anchors looked up: fast enough for long addresses."""
    counts: list[Counter[int]] = [Counter() for _ in range(nbits + 1)]
    lowest: list[dict[int, int]] = [{} for _ in range(nbits + 1)]
    for m in sorted(members, reverse=True):
        for length in range(nbits + 1):
            counts[length][m >> (nbits - length)] += 1
            lowest[length][m >> (nbits - length)] = m
    gaps = set()
    for n in members:
        if n >> (nbits - rbits) != prefix:
            continue
        for p in range(rbits, nbits):
            head = n >> (nbits - p - 1)
            if not counts[p + 1][head ^ 1]:
                gaps.add((p, lowest[p + 1][head], counts[p + 1][head]))
    return gaps


@settings(max_examples=15, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(1, 300), st.integers(0, 40))
def test_gap_searches_match_the_definition_on_32_byte_addresses(
    rnd: random.Random, spread: int, clustered: int
) -> None:
    nbits = 256
    node = rnd.getrandbits(nbits)
    members = {rnd.getrandbits(nbits) for _ in range(spread)}
    # a cluster close to the node, so that the deeper bins have members and gaps too
    members |= {node ^ rnd.getrandbits(rnd.randrange(1, nbits)) for _ in range(clustered)}
    pot = Pot.from_addresses(m.to_bytes(32) for m in members)
    regions = [(0, 0)] + [(node >> (nbits - 1 - k) ^ 1, k + 1) for k in range(12)]
    regions += [(node >> (nbits - bits), bits) for bits in (3, 17, 64)]
    for prefix, bits in regions:
        prefix_bytes = (prefix << (nbits - bits)).to_bytes(32)
        if not any(m >> (nbits - bits) == prefix for m in members):
            assert pot.biggest_address_gap(prefix_bytes, bits) == Gap.of(bits - 1, prefix_bytes, 1)
            assert pot.hottest_gap(prefix_bytes, bits) == Gap.of(bits - 1, prefix_bytes, 1)
            continue
        big, hot = best_of(gaps_from_definition(members, nbits, prefix, bits))
        assert big is not None and hot is not None  # 256-bit space: never full
        assert pot.biggest_address_gap(prefix_bytes, bits) == Gap.of(big[0], big[1].to_bytes(32), big[2])
        assert pot.hottest_gap(prefix_bytes, bits) == Gap.of(hot[0], hot[1].to_bytes(32), hot[2])
