"""A follower's order and its gap-filling schedule, against what they promise."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarm.live.feed_order import FULL, LIGHT, FeedOrder, GapSchedule, Ready, Skipped


def shown(events: list[Ready[str] | Skipped]) -> list[int]:
    out: list[int] = []
    for event in events:
        if isinstance(event, Ready):
            out.append(event.index)
        else:
            out.extend(range(event.start, event.end + 1))
    return out


@settings(max_examples=300)
@given(
    st.integers(0, 5),
    st.lists(st.tuples(st.sampled_from(["offer", "give_up", "known"]), st.integers(0, 40)), max_size=120),
    st.integers(4, 30),
)
def test_updates_come_out_in_order_each_once(
    start: int, ops: list[tuple[str, int]], max_pending: int
) -> None:
    order: FeedOrder[str] = FeedOrder(start, max_pending=max_pending)
    events: list[Ready[str] | Skipped] = []
    offered: set[int] = set()
    given_up: set[int] = set()
    for op, index in ops:
        if op == "offer":
            before = order.next_index
            out = order.offer(index, f"u{index}")
            if out is None:
                assert index < before or index in offered or index in given_up
            else:
                if index - before < max_pending:
                    offered.add(index)
                events += out
        elif op == "give_up":
            if index >= order.next_index and index not in offered:
                given_up.add(index)
            events += order.give_up(index)
        else:
            order.known(index)
        assert order.horizon >= order.next_index
        missing = order.missing()
        assert all(order.next_index <= i < order.horizon and i not in offered for i in missing)
    assert shown(events) == list(range(start, order.next_index))  # contiguous, in order, each once
    for event in events:
        if isinstance(event, Ready):
            assert event.update == f"u{event.index}" and event.index in offered
        else:
            assert all(i in given_up for i in range(event.start, event.end + 1))


def test_a_gap_holds_later_updates_until_it_is_filled_or_given_up() -> None:
    order: FeedOrder[str] = FeedOrder(10)
    assert order.offer(10, "a") == [Ready(10, "a")]
    assert order.offer(13, "d") == []
    assert order.offer(12, "c") == []
    assert order.missing() == [11]
    assert order.offer(12, "c") is None  # held already: a repeat
    assert order.offer(11, "b") == [Ready(11, "b"), Ready(12, "c"), Ready(13, "d")]
    assert order.offer(15, "f") == []
    assert order.give_up(14) == [Skipped(14, 14), Ready(15, "f")]
    assert order.offer(14, "e") is None  # too late: it was skipped
    order.known(20)
    assert order.missing(limit=3) == [16, 17, 18]


def test_light_mode_waits_for_stragglers_then_gives_up_after_five_tries() -> None:
    schedule = GapSchedule(mode=LIGHT, wait=5, retry=5, max_tries=5, parallel=8)
    schedule.note([7], now=0.0, wait=True)
    assert schedule.due(4.9) == []
    assert schedule.due(5.0) == [7]
    assert schedule.due(5.0) == []  # in flight
    now = 5.0
    for _ in range(4):
        assert not schedule.failed(7, now)
        now += 5
        assert schedule.due(now - 0.1) == [] and schedule.due(now) == [7]
    assert schedule.failed(7, now)  # the fifth failure gives it up
    assert 7 not in schedule and schedule.next_due() is None


def test_full_mode_keeps_trying_with_backoff() -> None:
    schedule = GapSchedule(mode=FULL, wait=0, retry=5, max_tries=2, max_retry=40, parallel=1)
    schedule.note([3], now=0.0, wait=False)
    now, delays = 0.0, []
    for _ in range(6):
        assert schedule.due(now) == [3]
        assert not schedule.failed(3, now)
        due = schedule.next_due()
        assert due is not None
        delays.append(due - now)
        now = due
    assert delays == [5, 10, 20, 40, 40, 40]
    assert schedule.succeeded(3) is True


def test_catching_up_is_at_once_and_not_a_gap() -> None:
    schedule = GapSchedule(parallel=2)
    schedule.note([1, 2, 3], now=0.0, wait=False, gap=False)
    schedule.note([9], now=0.0, wait=True)
    assert schedule.open_gaps == 1
    assert schedule.due(0.0) == [1, 2]  # bounded parallelism, lowest first
    assert schedule.succeeded(1) is False
    assert schedule.due(0.0) == [3]
    schedule.arrived(9)
    assert schedule.open_gaps == 0


@settings(max_examples=200)
@given(st.lists(st.tuples(st.sampled_from(["note", "due", "ok", "fail"]), st.integers(0, 9)), max_size=80))
def test_never_more_fetches_at_once_than_the_bound(ops: list[tuple[str, int]]) -> None:
    schedule = GapSchedule(parallel=3, wait=1, retry=1, max_tries=3)
    in_flight: set[int] = set()
    now = 0.0
    for op, index in ops:
        now += 0.5
        if op == "note":
            schedule.note([index], now, wait=bool(index % 2))
        elif op == "due":
            started = schedule.due(now)
            assert not in_flight & set(started)
            in_flight |= set(started)
        elif op == "ok" and index in in_flight:
            schedule.succeeded(index)
            in_flight.discard(index)
        elif op == "fail" and index in in_flight:
            schedule.failed(index, now)
            in_flight.discard(index)
        assert len(in_flight) <= 3


def test_bad_modes_are_refused() -> None:
    with pytest.raises(ValueError):
        GapSchedule(mode="eager")
