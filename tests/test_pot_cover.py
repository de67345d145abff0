"""pot.cover: the biggest / hottest gap holding a candidate, and the candidate taken, against brute force."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pot import Cover, Gap, Pot, biggest_covered_gap, hottest_covered_gap, proximity


def b(bits: str) -> bytes:
    """A one-byte address from its 8 bits, as seed 003 writes them."""
    assert len(bits) == 8
    return bytes([int(bits, 2)])


def pot_of(*bits: str) -> Pot:
    return Pot.from_addresses(b(x) for x in bits)


BIN0 = (b("10000000"), 1)  # bin 0 of node 00000000


# --- seed 003, "Gaps for peer suggestion" and Fig. 3 --------------------------------------------------


def test_seed_first_example_the_biggest_gap_of_bin_0() -> None:
    # node 00000000 connected to 10000000; known 10000001 and 11000000: 11000000 fills 11xxxxxx (po 1)
    members = pot_of("00000000", "10000000")
    cover = biggest_covered_gap(members, pot_of("10000001", "11000000"), *BIN0)
    assert cover == Cover(Gap.of(1, b("10000000"), 1), b("11000000"))
    assert hottest_covered_gap(members, pot_of("10000001", "11000000"), *BIN0) == cover


def test_seed_second_example_the_furthest_candidate() -> None:
    # known 10000001 (po 7 from 10000000) and 10010000 (po 3): the latter covers 1/16 of the space
    members = pot_of("00000000", "10000000")
    cover = biggest_covered_gap(members, pot_of("10000001", "10010000"), *BIN0)
    assert cover == Cover(Gap.of(3, b("10000000"), 1), b("10010000"))


def test_seed_fig3_the_hotter_of_two_equal_gaps() -> None:
    # 01xxxxxx is served by 00000000 alone (1/4), 11xxxxxx by 10000000 and 10000001 (1/8)
    members = pot_of("00000000", "10000000", "10000001")
    cover = hottest_covered_gap(members, pot_of("11000000", "01000000"))
    assert cover == Cover(Gap.of(1, b("00000000"), 1), b("01000000"))
    # with only the cooler one known, it is the hottest gap holding a candidate
    cover = hottest_covered_gap(members, pot_of("11000000"))
    assert cover == Cover(Gap.of(1, b("10000000"), 2), b("11000000"))


def test_hottest_and_biggest_pick_differently() -> None:
    # 11xxxxxx (po 1) is served by three members: 1/12; 001xxxxx (po 2) by one: 1/8
    members = pot_of("00000000", "01000000", "10000000", "10000001", "10000010")
    candidates = pot_of("11000000", "00100000")
    assert biggest_covered_gap(members, candidates) == Cover(Gap.of(1, b("10000000"), 3), b("11000000"))
    assert hottest_covered_gap(members, candidates) == Cover(Gap.of(2, b("00000000"), 1), b("00100000"))


def test_a_gap_without_candidates_is_passed_over() -> None:
    members = pot_of("00000000", "10000000")
    assert members.biggest_address_gap(*BIN0) == Gap.of(1, b("10000000"), 1)  # 11xxxxxx: nobody known there
    cover = biggest_covered_gap(members, pot_of("10000001"), *BIN0)
    assert cover == Cover(Gap.of(7, b("10000000"), 1), b("10000001"))


def test_within_a_gap_the_candidate_nearest_the_anchor() -> None:
    members = pot_of("00000000")
    candidates = pot_of("11111111", "10110000", "10000001", "10000100")
    cover = biggest_covered_gap(members, candidates)
    assert cover == Cover(Gap.of(0, b("00000000"), 1), b("10000001"))


def test_a_region_without_members_is_the_gap() -> None:
    # as Pot.biggest_address_gap: the region, anchored at its prefix, served by 1; the candidate nearest it
    members = pot_of("00000000")
    candidates = pot_of("11110000", "10000011", "10001000", "01000000")
    expected = Cover(Gap.of(0, b("10000000"), 1), b("10000011"))
    assert biggest_covered_gap(members, candidates, *BIN0) == expected
    assert hottest_covered_gap(members, candidates, *BIN0) == expected
    assert members.biggest_address_gap(*BIN0) == expected.gap
    assert biggest_covered_gap(Pot(), candidates, *BIN0) == expected  # no members at all
    assert biggest_covered_gap(Pot(), candidates) is None  # ... and no region: no gap is defined


def test_nothing_to_cover() -> None:
    members = pot_of("00000000", "10000000")
    assert biggest_covered_gap(members, Pot()) is None
    assert hottest_covered_gap(members, pot_of("01000000"), *BIN0) is None  # no candidate in the region
    assert biggest_covered_gap(members, pot_of("10000000")) is None  # a member fills nothing
    assert hottest_covered_gap(members, pot_of("10000000", "00000000")) is None


def test_lengths_must_match() -> None:
    with pytest.raises(ValueError, match="16-bit"):
        biggest_covered_gap(pot_of("00000000"), Pot.from_addresses([b"\x00\x01"]))


# --- brute force from the definitions ---------------------------------------------------------------


def brute_cover(
    members: set[int], candidates: set[int], nbits: int, prefix: bytes, bits: int, hottest: bool
) -> tuple[int, int, int, int] | None:
    """(po, anchor, serving, candidate) of the best gap holding a candidate, from the definitions.

    The gap of candidate c is R(n, p) with p its greatest proximity to a member; the members at exactly
    that proximity serve it, the lowest anchors it. Ranks as documented, then XOR distance to the anchor.
    """
    head = int.from_bytes(prefix) >> (len(prefix) * 8 - bits)

    def inside(x: int) -> bool:
        return x >> (nbits - bits) == head

    pool = [c for c in candidates if inside(c) and c not in members]
    if not pool:
        return None
    if not any(inside(m) for m in members):
        if bits == 0:
            return None
        target = int.from_bytes(prefix) << nbits >> (len(prefix) * 8)
        return bits - 1, -1, 1, min(pool, key=lambda c: c ^ target)

    def po(x: int, y: int) -> int:
        return nbits - (x ^ y).bit_length()

    best: tuple[tuple[int, ...], tuple[int, int, int, int]] | None = None
    for c in pool:
        p = max(po(c, m) for m in members)
        serving = sorted(m for m in members if po(c, m) == p)
        anchor = serving[0]
        rank = (len(serving) << (p + 1), p, anchor) if hottest else (p, anchor)
        key = (*rank, c ^ anchor)
        if best is None or key < best[0]:
            best = key, (p, anchor, len(serving), c)
    assert best is not None
    return best[1]


@st.composite
def cases(draw: st.DrawFn) -> tuple[int, set[int], set[int], bytes, int]:
    nbytes = draw(st.sampled_from([1, 2]))
    nbits = 8 * nbytes
    # values with random leading zeros, so that deep splits and gaps at every PO show up
    values = st.tuples(st.integers(0, 2**nbits - 1), st.integers(0, nbits - 1)).map(lambda t: t[0] >> t[1])
    members = draw(st.sets(values, max_size=24))
    candidates = draw(st.sets(values, min_size=1, max_size=24))
    prefix = draw(st.integers(0, 2**nbits - 1)).to_bytes(nbytes)
    bits = draw(st.integers(0, nbits))
    return nbits, members, candidates, prefix, bits


@settings(max_examples=400, deadline=None)
@given(cases(), st.booleans())
def test_matches_brute_force(case: tuple[int, set[int], set[int], bytes, int], hottest: bool) -> None:
    nbits, members, candidates, prefix, bits = case
    nbytes = nbits // 8
    member_pot = Pot.from_addresses(m.to_bytes(nbytes) for m in members)
    candidate_pot = Pot.from_addresses(c.to_bytes(nbytes) for c in candidates)
    search = hottest_covered_gap if hottest else biggest_covered_gap
    cover = search(member_pot, candidate_pot, prefix, bits)
    expected = brute_cover(members, candidates, nbits, prefix, bits, hottest)
    if expected is None:
        assert cover is None
        return
    assert cover is not None
    po, anchor, serving, candidate = expected
    assert cover.candidate == candidate.to_bytes(nbytes)
    assert (cover.gap.po, cover.gap.serving) == (po, serving)
    assert cover.gap.anchor == (prefix if anchor < 0 else anchor.to_bytes(nbytes))
    # the candidate lies in the gap it is said to fill
    if anchor >= 0:
        assert proximity(cover.candidate, cover.gap.anchor) == po
