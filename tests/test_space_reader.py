"""The space reader case by case: the seed's worked example, stalls, invalid feeds, windows, the
total order's latency and inactive members, the shared map."""

from __future__ import annotations

import pytest

from swarm.spaces.messages import Kind, SpaceMessage, compose, encode_message
from swarm.spaces.ordering import CausalOrderer
from swarm.spaces.reader import SpaceReader
from swarm.spaces.register import LwwMap
from swarm.spaces.timeframe import OrderKey

A, B, C = b"\xaa" * 20, b"\xbb" * 20, b"\xcc" * 20


def reader(*owners: bytes, capacity: int = 1024, inactive_after: float = 1e9) -> SpaceReader:
    space = SpaceReader(capacity=capacity, inactive_after=inactive_after)
    for owner in owners:
        space.add_member(owner, 0.0)
    return space


def msg(member: int, previous: tuple[int, ...], timeframe: tuple[int, ...], **body: str) -> bytes:
    """A message of ``member`` with this timeframe (own entry included), written after one with
    ``previous``; a SAY unless key= is given."""
    if "key" in body:
        return compose(member, previous, timeframe, Kind.SET, key=body["key"], value=body.get("value", ""))
    return compose(member, previous, timeframe, Kind.SAY, text=body.get("text", "hi"))


def raw(member_delta: tuple[tuple[int, int], ...], kind: Kind = Kind.SAY) -> bytes:
    """A message with exactly this delta, honest or not."""
    return encode_message(SpaceMessage(kind, member_delta, text="x" if kind is Kind.SAY else ""))


def processed(space: SpaceReader) -> list[tuple[int, int]]:
    return [(r.member, r.seq) for r in space.causal_log]


def test_the_seeds_worked_example_processes_b100_before_a100() -> None:
    """A:k has [A:k-1, B:k], B:k has [A:k-1, B:k-1]: so A:100 has [A:99, B:100], B:100 has
    [A:99, B:99], and B:100 must come first (A:100 depends on it)."""
    space = reader(A, B)
    for k in range(101):
        space.offer(0, k, msg(0, (max(k - 2, -1), k - 1), (k - 1, k)), 1.0)  # all of A first
    for k in range(101):
        previous = (max(k - 2, -1),) * 2
        space.offer(1, k, msg(1, previous, (k - 1, k - 1)), 1.0)
    space.pump(1.0)
    order = processed(space)
    assert len(order) == 202
    assert order.index((1, 100)) < order.index((0, 100))
    keys = {(r.member, r.seq): r.key for r in space.causal_log}
    assert keys[(0, 100)] == OrderKey(202, A, 100) and keys[(1, 100)] == OrderKey(201, B, 100)
    assert order == sorted(order, key=lambda m: keys[m])  # the key order is the causal order here


def test_concurrent_messages_go_by_the_tie_break_whatever_arrives_first() -> None:
    """Two readers get A:0 and B:0 (concurrent, equal lamport) in opposite orders and process
    them alike: the smaller owner first. DXOS would take the feed its iterator added first."""
    orders = []
    for arrival in ([(1, 0), (0, 0)], [(0, 0), (1, 0)]):
        space = reader(B, A)  # member 0 is B, member 1 is A: the owner decides, not the index
        for member, seq in arrival:
            space.offer(member, seq, msg(member, (), (-1, -1)), 1.0)
        space.pump(1.0)
        orders.append(processed(space))
    assert orders[0] == orders[1] == [(1, 0), (0, 0)]


def test_a_stalled_reader_names_the_missing_message_and_resumes_when_it_arrives() -> None:
    space = reader(A, B)
    space.offer(0, 0, msg(0, (), (-1, -1)), 1.0)
    space.offer(0, 1, msg(0, (-1, -1), (0, -1)), 1.0)
    space.offer(1, 0, msg(1, (), (2, -1)), 5.0)  # B:0 has seen A:2, which this reader lacks
    space.pump(5.0)
    assert processed(space) == [(0, 0), (0, 1)]
    status = space.status(9.0)
    assert status.stalled
    [missing] = status.missing
    assert (missing.member, missing.seq, missing.since, missing.needed_by) == (0, 2, 5.0, ((1, 0),))
    [wait] = [m.waiting for m in status.members if m.waiting]
    assert (wait.member, wait.seq, wait.needs, wait.since) == (1, 0, (0, 2), 5.0)
    space.offer(0, 2, msg(0, (0, -1), (1, -1)), 12.0)
    space.pump(12.0)
    assert processed(space)[-2:] == [(0, 2), (1, 0)]
    assert not space.status(12.0).stalled


def test_a_wait_through_a_waiting_message_names_what_is_really_missing() -> None:
    space = reader(A, B, C)
    space.offer(2, 0, msg(2, (), (-1, 0, -1)), 3.0)  # C:0 waits for B:0 ...
    space.offer(1, 0, msg(1, (), (4, -1, -1)), 2.0)  # ... which waits for A:4: A:0 is missing
    space.pump(3.0)
    [missing] = space.status(3.0).missing
    assert (missing.member, missing.seq, missing.since) == (0, 0, 2.0)
    assert sorted(missing.needed_by) == [(1, 0), (2, 0)]


def test_a_message_of_a_member_not_known_yet_waits_for_the_member_list() -> None:
    space = reader(A)
    space.offer(0, 0, msg(0, (), (-1, 0)), 1.0)  # A:0 saw member 1's first message
    space.pump(1.0)
    [missing] = space.status(1.0).missing
    assert (missing.member, missing.seq) == (1, None)
    space.add_member(B, 2.0)
    space.offer(1, 0, msg(1, (), (-1, -1)), 2.0)
    space.pump(2.0)
    assert processed(space) == [(1, 0), (0, 0)]


def test_a_cycle_invalidates_the_feeds_on_it_and_nobody_else() -> None:
    space = reader(A, B, C)
    space.offer(2, 0, msg(2, (), (-1, -1, -1)), 1.0)  # honest C:0
    space.offer(0, 0, raw(((1, 1), (2, 1))), 1.0)  # A:0 claims B:0 (and C:0) ...
    space.offer(1, 0, raw(((0, 1),)), 1.0)  # ... and B:0 claims A:0: neither could exist first
    space.offer(2, 1, msg(2, (-1, -1, -1), (-1, -1, 0)), 1.0)
    space.pump(1.0)
    assert processed(space) == [(2, 0), (2, 1)]
    status = space.status(1.0)
    assert [m.invalid[0] if m.invalid else None for m in status.members] == [0, 0, None]
    assert "cycle" in status.members[0].invalid[1]  # type: ignore[index]
    assert not status.stalled
    assert not space.offer(0, 1, msg(0, (), (0, 0, 1)), 1.0)  # nothing is taken past that point


def test_a_longer_cycle_through_later_messages_is_found() -> None:
    space = reader(A, B, C)
    space.offer(0, 0, msg(0, (), (-1, -1, -1)), 1.0)
    space.offer(0, 1, raw(((1, 2),)), 1.0)  # A:1 claims B:1
    space.offer(1, 0, msg(1, (), (-1, -1, -1)), 1.0)
    space.offer(1, 1, raw(((2, 1),)), 1.0)  # B:1 claims C:0
    space.offer(2, 0, raw(((0, 2),)), 1.0)  # C:0 claims A:1
    space.pump(1.0)
    assert sorted(processed(space)) == [(0, 0), (1, 0)]
    invalid = [m.invalid[0] if m.invalid else None for m in space.status(1.0).members]
    assert invalid == [1, 1, 0]


def test_a_timeframe_that_understates_its_past_invalidates_the_feed() -> None:
    space = reader(A, B, C)
    for k in range(6):
        space.offer(2, k, msg(2, (-1, -1, k - 2), (-1, -1, k - 1)), 1.0)
    space.offer(1, 0, msg(1, (), (-1, -1, 5)), 1.0)  # B:0 saw C:0..5: order 7
    space.offer(0, 0, msg(0, (), (-1, -1, -1)), 1.0)
    space.offer(0, 1, raw(((1, 1),)), 1.0)  # A:1 claims B:0 but not C: order 3 < 7
    space.offer(0, 2, msg(0, (0, 0, -1), (1, 0, 5)), 1.0)
    space.pump(1.0)
    assert (0, 1) not in processed(space) and (0, 0) in processed(space)
    assert space.status(1.0).members[0].invalid[:1] == (1,)  # type: ignore[index]
    assert "understates" in space.status(1.0).members[0].invalid[1]  # type: ignore[index]


def test_garbage_invalidates_from_there_and_depending_on_it_invalidates_too() -> None:
    space = reader(A, B)
    space.offer(0, 0, msg(0, (), (-1, -1)), 1.0)
    space.offer(0, 1, b"\x01\x07junk", 1.0)
    space.offer(1, 0, msg(1, (), (1, -1)), 1.0)  # B:0 claims the garbage A:1
    space.pump(1.0)
    assert processed(space) == [(0, 0)]
    members = space.status(1.0).members
    assert members[0].invalid[0] == 1 and "not a valid message" in members[0].invalid[1]  # type: ignore[index]
    assert members[1].invalid[0] == 0 and "invalid" in members[1].invalid[1]  # type: ignore[index]
    assert not space.status(1.0).stalled


def test_buffers_are_bounded_by_the_window() -> None:
    orderer = CausalOrderer(capacity=8)
    for owner in (A, B):
        orderer.add_member(owner, 0.0)
    assert orderer.window() == 4
    taken = [orderer.offer(1, k, msg(1, (0 if k else -1, k - 2), (0, k - 1)), 1.0) for k in range(10)]
    assert taken == [True] * 4 + [False] * 6  # B's messages wait for A:0: only 4 are held
    assert orderer.wanted(1) == range(4, 4) and orderer.wanted(0) == range(0, 4)
    assert orderer.offer(0, 0, msg(0, (), (-1, -1)), 1.0)
    assert len(list(orderer.drain(1.0))) == 5
    assert orderer.wanted(1) == range(4, 8)


def test_total_order_emits_a_message_once_every_other_member_is_past_it() -> None:
    space = reader(A, B)
    space.offer(0, 0, msg(0, (), (-1, -1)), 1.0)
    _, ordered = space.pump(1.0)
    assert ordered == []  # B may still send something that sorts first
    space.offer(1, 0, msg(1, (), (0, -1)), 1.0)  # B:0 saw A:0
    _, ordered = space.pump(1.0)
    assert [(r.member, r.seq) for r in ordered] == [(0, 0)]  # B:0 waits for A to pass it
    space.offer(0, 1, compose(0, (-1, -1), (0, 0), Kind.HEARTBEAT), 1.0)
    _, ordered = space.pump(1.0)
    assert [(r.member, r.seq) for r in ordered] == [(1, 0)]
    alone = reader(A)
    alone.offer(0, 0, msg(0, (), (-1,)), 1.0)
    assert len(alone.pump(1.0)[1]) == 1  # nobody else to wait for


def test_an_inactive_member_holds_nothing_back_and_its_late_messages_are_flagged() -> None:
    space = reader(B, A, inactive_after=30.0)  # member 1 (A) sorts before member 0 (B)
    space.offer(0, 0, msg(0, (), (-1, -1)), 1.0)
    assert space.pump(10.0)[1] == []
    assert space.status(10.0).holding_back == (1,)
    _, ordered = space.pump(31.0)  # A silent for 30 s: inactive
    assert [(r.member, r.seq, r.late) for r in ordered] == [(0, 0, False)]
    assert not space.status(31.0).members[1].active
    space.offer(1, 0, msg(1, (), (-1, -1)), 40.0)  # A wrote without seeing B:0: sorts before it
    _, ordered = space.pump(40.0)
    assert [(r.member, r.seq, r.late) for r in ordered] == [(1, 0, True)]
    assert space.status(40.0).late == 1 and space.status(40.0).members[1].active


def test_the_shared_map_keeps_the_write_that_sorts_last() -> None:
    state = LwwMap()
    assert state.apply("k", "new", OrderKey(5, B, 0))
    assert not state.apply("k", "old", OrderKey(5, A, 3))  # processed later, sorts earlier
    assert state.get("k") == "new"
    assert state.apply("k", "", OrderKey(6, A, 4))  # an empty value clears
    assert state.get("k") is None and state.canonical_bytes() == b"{}"
    state.apply("é", "ü", OrderKey(1, A, 0))
    assert state.canonical_bytes() == '{"é":{"seq":0,"value":"ü","writer":"%s"}}'.encode() % A.hex().encode()


def test_a_reader_shows_its_writer_what_to_write_next() -> None:
    space = reader(A, B)
    space.offer(1, 0, msg(1, (), (-1, -1)), 1.0)
    space.offer(0, 0, msg(0, (), (-1, 0)), 1.0)
    space.pump(1.0)
    view = space.writer_view(0)
    assert (view.next, view.timeframe, view.previous, view.pending_own) == (1, (0, 0), (-1, 0), 0)
    with pytest.raises(ValueError, match="mode"):
        space.log("fast")


def test_total_order_waits_while_the_member_list_is_being_read() -> None:
    space = reader(A)
    space.members_complete = False
    space.offer(0, 0, msg(0, (), (-1,)), 1.0)
    assert space.pump(1.0) != ([], []) and space.total_log == []  # processed, not ordered
    space.members_complete = True
    assert [(r.member, r.seq) for r in space.pump(1.0)[1]] == [(0, 0)]


def test_a_member_with_more_to_read_is_never_taken_for_inactive() -> None:
    """After a restart a node reads old messages: while more of a member waits in its store,
    that member holds the total order back however old its messages are."""
    space = reader(B, A, inactive_after=30.0)
    space.offer(0, 0, msg(0, (), (-1, -1)), 100.0)
    space.offer(1, 0, msg(1, (), (-1, -1)), 1.0)
    space.orderer.set_drained(1, False)  # the shell has more of member 1 to read
    assert [(r.member, r.seq) for r in space.pump(100.0)[1]] == [(1, 0)]  # B:0 waits for A
    assert space.status(100.0).members[1].active
    space.orderer.set_drained(1, True)
    assert [(r.member, r.seq) for r in space.pump(100.0)[1]] == [(0, 0)]


def test_a_writer_claiming_a_message_that_never_comes_holds_the_total_order_back_only_for_a_while() -> None:
    """L:0 claims B:5, which B never writes (a reference ahead: not provably a lie), and L writes
    on until its window is full (so it is never silent, never drained). Once L's next message has
    waited ``inactive_after``, L is shown inactive and the others' messages take their place in
    the total order; if B:5 comes after all, L's messages are processed and flagged late."""
    space = reader(A, B, C, capacity=12, inactive_after=30.0)  # a window of 4 per member
    space.offer(1, 0, msg(1, (), (-1, -1, -1)), 0.0)
    space.offer(2, 0, raw(((1, 6),)), 1.0)  # L (member 2) claims B:5
    for k in range(1, 10):
        if not space.offer(2, k, compose(2, (-1, 5, k - 2), (-1, 5, k - 1), Kind.HEARTBEAT), 1.0 + k):
            space.orderer.set_drained(2, False)  # the shell has more of L to read
            break
    for k in range(20):  # A writes on: A:k sorts as k + 2, past L's frontier (L:3, 10) from A:9
        previous = (k - 2, 0, -1) if k else ()
        assert space.offer(0, k, msg(0, previous, (k - 1, 0, -1)), 2.0 + k / 10)
        space.pump(2.0 + k / 10)
    [missing] = space.status(10.0).missing
    assert (missing.member, missing.seq, missing.needed_by) == (1, 1, ((2, 0),))
    space.pump(30.5)  # B, silent since 0.0, is inactive; L has waited 29.5 s: it still counts
    assert space.status(30.5).holding_back == (2,)
    assert ordered_ids(space) == [(1, 0)] + [(0, k) for k in range(9)]
    space.pump(31.0)
    assert ordered_ids(space) == [(1, 0)] + [(0, k) for k in range(20)]
    status = space.status(31.0)
    assert not status.members[2].active and status.members[2].waiting is not None and status.stalled
    for k in range(1, 6):  # B did write up to 5 after all
        assert space.offer(1, k, msg(1, (-1, k - 2, -1), (-1, k - 1, -1)), 40.0)
        space.pump(40.0)
    late = [(r.member, r.seq) for r in space.total_log if r.late]
    assert late[:5] == [(1, k) for k in range(1, 6)] and (2, 0) in late
    assert space.status(40.0).members[2].active and not space.status(40.0).stalled


def ordered_ids(space: SpaceReader) -> list[tuple[int, int]]:
    return [(r.member, r.seq) for r in space.total_log]
