"""GivenRanges (syncer/given.py) against a naive model: a set of bin IDs per bin."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from syncer.given import GivenRanges

BINS = st.integers(0, 3)
IDS = st.integers(1, 200)

adds = st.tuples(st.just("add"), BINS, IDS, st.integers(0, 20))
forgets = st.tuples(st.just("forget"), BINS, IDS, st.just(0))


def watching_all(given_ranges: GivenRanges) -> GivenRanges:
    for bin in range(4):
        given_ranges.watch(bin)
    return given_ranges


def model_run(ids: set[int], start: int, end: int) -> int | None:
    if start not in ids:
        return None
    last = start
    while last + 1 in ids and last + 1 <= end:
        last += 1
    return min(last, end)


def as_ranges(ids: set[int]) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    for n in sorted(ids):
        if ranges and ranges[-1][1] == n - 1:
            ranges[-1] = (ranges[-1][0], n)
        else:
            ranges.append((n, n))
    return ranges


@given(st.lists(adds | forgets, max_size=40), BINS, IDS, st.integers(0, 60))
def test_given_ranges_answer_as_a_set_of_ids_would(ops, bin, start, length) -> None:
    given_ranges = watching_all(GivenRanges(max_ranges=10_000))
    model: dict[int, set[int]] = {}
    for op, b, first, extra in ops:
        if op == "add":
            given_ranges.add(b, first, first + extra)
            model.setdefault(b, set()).update(range(first, first + extra + 1))
        else:
            given_ranges.forget_below(b, first)
            model[b] = {n for n in model.get(b, set()) if n >= first}
    for b in range(4):
        assert given_ranges.ranges(b) == as_ranges(model.get(b, set()))
    ids = model.get(bin, set())
    end = start + length
    assert given_ranges.run(bin, start, end) == model_run(ids, start, end)
    inside = {n for n in ids if start <= n <= end}
    assert list(given_ranges.given_in(bin, start, end)) == as_ranges(inside)
    assert len(given_ranges) == sum(len(as_ranges(v)) for v in model.values())


@given(st.lists(st.tuples(BINS, IDS), max_size=60), st.integers(1, 5))
def test_a_bin_keeps_at_most_max_ranges_and_drops_the_lowest(adds, max_ranges) -> None:
    """Beyond the bound the lowest ranges go (they are then just offered): what is kept is a
    subset of what was given, and the highest range is never the one dropped."""
    given_ranges = watching_all(GivenRanges(max_ranges=max_ranges))
    model: dict[int, set[int]] = {}
    for b, n in adds:
        given_ranges.add(b, n, n)
        model.setdefault(b, set()).add(n)
        kept = given_ranges.ranges(b)
        assert len(kept) <= max_ranges
        assert {i for lo, hi in kept for i in range(lo, hi + 1)} <= model[b]
        assert kept[-1][1] == max(model[b])


def test_bad_ranges_are_refused() -> None:
    with pytest.raises(ValueError, match="not a range"):
        GivenRanges().add(0, 5, 4)
    with pytest.raises(ValueError, match="not a range"):
        GivenRanges().add(0, 0, 4)
    with pytest.raises(ValueError, match="max_ranges"):
        GivenRanges(max_ranges=0)


def test_only_the_bins_the_peer_pulls_live_are_noted() -> None:
    """Nothing but a live offer skips, so a bin the peer does not pull live keeps nothing, and
    one it stops pulling forgets what it had."""
    given_ranges = GivenRanges()
    given_ranges.add(0, 1, 5)
    assert given_ranges.ranges(0) == [] and len(given_ranges) == 0
    given_ranges.watch(0)
    given_ranges.note([0, 7], [5, 9])  # bin 1 is not watched
    assert given_ranges.ranges(0) == [(1, 5)] and given_ranges.ranges(1) == []
    given_ranges.unwatch(0)
    assert given_ranges.ranges(0) == []
    given_ranges.add(0, 6, 8)
    assert given_ranges.ranges(0) == []
