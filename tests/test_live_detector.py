"""Streamr's duplicate detector: the seed's worked examples, and every rule against a naive model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarm.live.detector import INFINITY, DuplicateDetector, GapMismatch, InvalidNumbering
from syncer.intervals import Intervals


def dense(detector: DuplicateDetector, numbers: list[int]) -> list[bool]:
    """Feed numbers with the true chain (previous = n - 1; the very first has none)."""
    return [detector.mark_and_check(n - 1 if n > 1 else None, n) for n in numbers]


# -- seeds 000/001: "Duplicate detection" ------------------------------------------------------


def seed_state() -> DuplicateDetector:
    """1..6, 10..12, 18..20 seen: the seed's running example."""
    detector = DuplicateDetector()
    assert all(dense(detector, [*range(1, 7), *range(10, 13), *range(18, 21)]))
    return detector


def test_seed_example_leaves_the_three_gaps() -> None:
    detector = seed_state()
    assert detector.closed_gaps() == [(7, 9), (13, 17), (21, None)]  # the seed's [7,9], [13,17], [21, Inf]
    assert detector.gaps == [(6, 9), (12, 17), (20, INFINITY)]  # the code's half-open form


def test_seed_example_duplicates_and_news() -> None:
    detector = seed_state()
    for seen in (1, 6, 10, 12, 18, 20):
        assert not detector.is_new(seen - 1, seen)
    for unseen in (7, 9, 13, 17, 21, 40):
        assert detector.is_new(unseen - 1, unseen)
    assert detector.closed_gaps() == [(7, 9), (13, 17), (21, None)]  # is_new changed nothing
    assert not detector.mark_and_check(9, 10)  # "10 is indeed a duplicate"


@pytest.mark.parametrize(
    ("number", "gaps"),
    [
        (7, [(8, 9), (13, 17), (21, None)]),  # left-side contraction
        (21, [(7, 9), (13, 17), (22, None)]),
        (17, [(7, 9), (13, 16), (21, None)]),  # right-side contraction
        (9, [(7, 8), (13, 17), (21, None)]),
        (15, [(7, 9), (13, 14), (16, 17), (21, None)]),  # division
        (40, [(7, 9), (13, 17), (21, 39), (41, None)]),
    ],
)
def test_seed_update_rules(number: int, gaps: list[tuple[int, int | None]]) -> None:
    detector = seed_state()
    assert detector.mark_and_check(number - 1, number)
    assert detector.closed_gaps() == gaps
    assert not detector.mark_and_check(number - 1, number)  # now a duplicate


def test_seed_full_contraction() -> None:
    detector = seed_state()
    assert dense(detector, [8, 7]) == [True, True]
    assert detector.closed_gaps() == [(9, 9), (13, 17), (21, None)]
    assert detector.mark_and_check(8, 9)
    assert detector.closed_gaps() == [(13, 17), (21, None)]


def test_seed_best_effort_without_a_previous_number() -> None:
    """'We only compare received message numbers against the latest known message number.'"""
    detector = seed_state()
    assert not detector.mark_and_check(None, 20)
    assert not detector.mark_and_check(None, 8)  # in a gap, but best effort cannot tell
    assert detector.mark_and_check(None, 25)
    assert detector.closed_gaps() == [(7, 9), (13, 17), (26, None)]  # 21..25 now count as seen


def test_first_message_makes_everything_before_it_seen() -> None:
    detector = DuplicateDetector()
    assert detector.latest is None
    assert detector.mark_and_check(4, 5)
    assert detector.gaps == [(5, INFINITY)]
    assert not detector.mark_and_check(2, 3)
    assert detector.latest == 5


def test_broken_numbering_raises_and_changes_nothing() -> None:
    detector = seed_state()
    before = detector.gaps
    with pytest.raises(InvalidNumbering):
        detector.mark_and_check(9, 9)
    with pytest.raises(GapMismatch):
        detector.mark_and_check(8, 11)  # from inside [7,9] past its end
    with pytest.raises(GapMismatch):
        detector.mark_and_check(5, 8)  # from seen ground into [7,9]
    with pytest.raises(GapMismatch):
        detector.is_new(11, 30)  # from seen ground across [13,17]
    assert detector.gaps == before


def test_gap_count_is_bounded_by_dropping_the_lowest() -> None:
    detector = DuplicateDetector(max_gaps=3)
    detector.mark_and_check(None, 1)
    for n in (3, 5, 7, 9):  # each leaves a hole below it
        assert detector.mark_and_check(n - 1, n)
    assert len(detector) == 3
    assert detector.closed_gaps() == [(6, 6), (8, 8), (10, None)]
    assert not detector.mark_and_check(1, 2)  # its gap was dropped: counts as seen


# -- dense chains are the project's Intervals gap view -----------------------------------------


@given(st.lists(st.integers(1, 80), min_size=1, max_size=120))
def test_dense_chain_gaps_equal_the_intervals_gap_view(numbers: list[int]) -> None:
    """Feed indices arrive in any order, with repeats: the detector's closed gaps above its first
    number are the complement of the seen numbers, as Intervals.gaps() computes it."""
    detector = DuplicateDetector()
    first = numbers[0]
    seen = Intervals(floor=first)
    for n in numbers:
        new = detector.mark_and_check(n - 1, n)
        assert new == (n >= first and n not in seen)
        if n >= first:
            seen.add(n)
    assert detector.closed_gaps() == seen.gaps()


# -- any edges, against a naive model -----------------------------------------------------------


class Model:
    """The unseen numbers as a plain set (plus an unbounded tail), and Streamr's rules on it."""

    def __init__(self, max_gaps: int) -> None:
        self.max_gaps = max_gaps
        self.unseen: set[int] = set()
        self.tail: int | None = None  # every number from here up is unseen
        self.started = False

    def is_unseen(self, n: int) -> bool:
        return n in self.unseen or (self.tail is not None and n >= self.tail)

    def runs(self) -> list[tuple[int, int | None]]:
        out: list[tuple[int, int | None]] = []
        for n in sorted(self.unseen):
            if out and out[-1][1] == n - 1:
                out[-1] = (out[-1][0], n)
            else:
                out.append((n, n))
        if self.tail is not None:
            if out and out[-1][1] == self.tail - 1:
                out[-1] = (out[-1][0], None)
            else:
                out.append((self.tail, None))
        return out

    def mark(self, previous: int | None, number: int) -> str:
        if previous is not None and previous >= number:
            return "invalid"
        if not self.started:
            self.started, self.tail = True, number + 1
            return "new"
        assert self.tail is not None
        if previous is None:
            if number + 1 <= self.tail:
                return "seen"
            self.unseen -= set(range(self.tail, number + 1))
            self.tail = number + 1
            return "new"
        span = range(previous + 1, number + 1)
        hits = [self.is_unseen(n) for n in span]
        if not any(hits):
            return "seen"
        if not all(hits):
            return "mismatch"
        runs_before = len(self.runs())
        for n in span:
            self.unseen.discard(n)
        if number + 1 > self.tail and previous + 1 >= self.tail:  # the edge cut the open tail
            self.unseen |= set(range(self.tail, previous + 1))
            self.tail = number + 1
        if len(self.runs()) > runs_before and len(self.runs()) > self.max_gaps:
            first_run = self.runs()[0]
            assert first_run[1] is not None
            self.unseen -= set(range(first_run[0], first_run[1] + 1))
        return "new"


def verdict(detector: DuplicateDetector, previous: int | None, number: int) -> str:
    try:
        return "new" if detector.mark_and_check(previous, number) else "seen"
    except InvalidNumbering:
        return "invalid"
    except GapMismatch:
        return "mismatch"


edges = st.tuples(st.one_of(st.none(), st.integers(0, 40)), st.integers(1, 41))


@settings(max_examples=300)
@given(st.lists(edges, min_size=1, max_size=60), st.integers(1, 6))
def test_detector_matches_the_model(events: list[tuple[int | None, int]], max_gaps: int) -> None:
    detector, model = DuplicateDetector(max_gaps), Model(max_gaps)
    for previous, number in events:
        expected = model.mark(previous, number)
        before = detector.gaps
        asked = None
        if expected not in ("invalid", "mismatch"):
            asked = detector.is_new(previous, number)
            assert detector.gaps == before
        assert verdict(detector, previous, number) == expected
        if asked is not None:
            assert asked == (expected == "new")
        if expected in ("invalid", "mismatch"):
            assert detector.gaps == before
        assert detector.closed_gaps() == model.runs()
        for n in range(0, 43):
            assert detector.seen(n) == (model.started and not model.is_unseen(n))
