"""The feed lookup state machine against a naive linear scan, under any order of probe answers."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunks.feeds import MAX_INDEX
from swarm.feeds.lookup import SequenceLookup


@dataclass
class Feed:
    """Updates 0..latest present except the holes, plus strays beyond (a feed with lost updates)."""

    latest: int | None
    holes: frozenset[int] = frozenset()
    strays: frozenset[int] = frozenset()

    def __contains__(self, index: int) -> bool:
        within = self.latest is not None and index <= self.latest and index not in self.holes
        return within or index in self.strays


def naive_latest(feed: Feed, start: int) -> int | None:
    """bee's plain sequence finder: probe start, start + 1, ... and stop at the first missing one."""
    if start not in feed:
        return None
    index = start
    while index + 1 in feed:
        index += 1
    return index


@dataclass
class Run:
    answer: int | None
    probes: list[int] = field(default_factory=list)
    rounds: int = 0


def run(lookup: SequenceLookup, feed: Feed, pick: Callable[[list[int]], int], cancel_stale: bool) -> Run:
    """Drive the machine, answering one probe in flight at a time, the one ``pick`` chooses."""
    result = Run(None)
    in_flight: list[int] = []
    while True:
        issued = lookup.next_probes()
        result.probes += issued
        in_flight += issued
        assert len(in_flight) <= lookup.max_probes
        assert set(in_flight) == lookup.in_flight
        if lookup.done:
            break
        assert in_flight, "not done, yet nothing to wait for"
        if cancel_stale and (stale := lookup.stale_probes()):
            in_flight.remove(stale[0])
            lookup.on_cancelled(stale[0])
            continue
        index = in_flight.pop(pick(in_flight))
        lookup.on_result(index, index in feed)
    result.answer = lookup.latest
    return result


def run_in_rounds(lookup: SequenceLookup, feed: Feed) -> Run:
    """All probes of a round answered together: what a network with equal latencies does."""
    result = Run(None)
    while not lookup.done:
        issued = lookup.next_probes()
        result.probes += issued
        result.rounds += 1
        for index in issued:
            lookup.on_result(index, index in feed)
    result.answer = lookup.latest
    return result


def probe_budget(feed: Feed, start: int, max_probes: int) -> int:
    span = (feed.latest or 0) - start + 2 + len(feed.strays)
    return 4 * max_probes * (math.ceil(math.log2(max(span, 2))) + 3)


feeds_without_holes = st.builds(Feed, st.one_of(st.none(), st.integers(0, 100_000)))


@st.composite
def feeds_with_holes(draw: st.DrawFn) -> tuple[Feed, int]:
    """A feed with holes, and a start index: anywhere, or often at a hole (then the answer is None)."""
    latest = draw(st.integers(0, 3000))
    holes = draw(st.frozensets(st.integers(0, latest), max_size=20))
    strays = draw(st.frozensets(st.integers(latest + 2, latest + 5000), max_size=5))
    anywhere = st.integers(0, latest + 100)
    start = draw(st.one_of(anywhere, st.sampled_from(sorted(holes))) if holes else anywhere)
    return Feed(latest, holes, strays), start


@settings(max_examples=300, deadline=None)
@given(
    feed=feeds_without_holes,
    start=st.integers(0, 100_100),
    max_probes=st.integers(1, 12),
    seed=st.randoms(use_true_random=False),
    cancel_stale=st.booleans(),
)
def test_property_without_holes_the_answer_is_the_linear_scans(
    feed: Feed, start: int, max_probes: int, seed: random.Random, cancel_stale: bool
) -> None:
    outcome = run(
        SequenceLookup(start, max_probes=max_probes), feed, lambda xs: seed.randrange(len(xs)), cancel_stale
    )
    assert outcome.answer == naive_latest(feed, start)
    assert len(outcome.probes) == len(set(outcome.probes)), "an index was probed twice"
    assert len(outcome.probes) <= probe_budget(feed, start, max_probes)


@settings(max_examples=300, deadline=None)
@given(
    feed_and_start=feeds_with_holes(),
    max_probes=st.integers(1, 12),
    seed=st.randoms(use_true_random=False),
    cancel_stale=st.booleans(),
)
def test_property_with_holes_the_answer_is_an_end_of_the_feed(
    feed_and_start: tuple[Feed, int], max_probes: int, seed: random.Random, cancel_stale: bool
) -> None:
    """As bee's finder: None exactly when update ``start`` is missing, else an update followed by a gap."""
    feed, start = feed_and_start
    outcome = run(
        SequenceLookup(start, max_probes=max_probes), feed, lambda xs: seed.randrange(len(xs)), cancel_stale
    )
    if start not in feed:
        assert outcome.answer is None
    else:
        answer = outcome.answer
        assert answer is not None and answer >= start
        assert answer in feed and answer + 1 not in feed
    assert len(outcome.probes) == len(set(outcome.probes))
    assert len(outcome.probes) <= probe_budget(feed, start, max_probes)


@pytest.mark.parametrize(("latest", "max_rounds"), [(0, 2), (9, 3), (999, 5), (999_999, 9)])
def test_rounds_grow_with_the_log_of_the_feed(latest: int, max_rounds: int) -> None:
    """8 probes at a time: bee's finder needs ~n/256 rounds to gallop; this one doubles past that."""
    outcome = run_in_rounds(SequenceLookup(0, max_probes=8), Feed(latest))
    assert outcome.answer == latest
    assert outcome.rounds <= max_rounds


def test_first_round_is_bees_lookahead() -> None:
    assert SequenceLookup(0).next_probes() == [0, 1, 3, 7, 15, 31, 63, 127]
    assert SequenceLookup(10, max_probes=3).next_probes() == [10, 11, 13]


def test_no_update_at_start_ends_the_lookup_whatever_is_in_flight() -> None:
    lookup = SequenceLookup(0)
    probes = lookup.next_probes()
    lookup.on_result(3, True)  # a stray beyond a hole answers first
    assert not lookup.done
    lookup.on_result(0, False)
    assert lookup.done and lookup.latest is None
    assert set(lookup.stale_probes()) == set(probes) - {0, 3}
    assert lookup.next_probes() == []


def test_stale_probes_are_those_outside_the_bracket() -> None:
    lookup = SequenceLookup(0, max_probes=4)
    assert lookup.next_probes() == [0, 1, 3, 7]
    lookup.on_result(1, False)
    assert lookup.bracket == (-1, 1)
    assert lookup.stale_probes() == [3, 7]  # start (0) is still awaited: it decides
    lookup.on_result(0, True)
    assert lookup.done and lookup.latest == 0


def test_the_last_possible_index() -> None:
    feed = Feed(MAX_INDEX)
    outcome = run_in_rounds(SequenceLookup(MAX_INDEX - 5), feed)
    assert outcome.answer == MAX_INDEX
    outcome = run_in_rounds(SequenceLookup(0), Feed(MAX_INDEX - 1))
    assert outcome.answer == MAX_INDEX - 1 and outcome.rounds <= 30  # 64 gallops, 63 halvings


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="start index"):
        SequenceLookup(-1)
    with pytest.raises(ValueError, match="max_probes"):
        SequenceLookup(0, max_probes=0)
