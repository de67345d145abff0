"""The space reader against a naive model: random writers, delivery orders and partitions.

Every reader's processing order must be a linear extension of the causal order; readers that
hold the same messages must produce the same total order (the sort of everything by order key,
cut where knowledge ends) and the same shared map (last writer in that order wins).
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from swarm.spaces.messages import Kind
from swarm.spaces.ordering import MIN_WINDOW
from tests.space_model import NOW, Space, compacted


def check_causal(space: Space, reader: int) -> None:
    """The reader processed each message after everything it depends on, with the written
    timeframe and an order key computed from scratch."""
    log = space.causal_logs[reader]
    assert list(space.readers[reader].causal_log) == compacted(log)  # one heartbeat per member kept
    position = {(r.member, r.seq): i for i, r in enumerate(log)}
    assert len(position) == len(log), "a message processed twice"
    for record in log:
        written = space.written[(record.member, record.seq)]
        assert record.key == written.order_key(space.owners)
        width = max(len(record.timeframe), len(written.timeframe))
        pad = (-1,) * width
        assert (record.timeframe + pad)[:width] == (written.timeframe + pad)[:width]
        for dep in written.deps():
            assert position[dep] < position[(record.member, record.seq)], f"{record} before {dep}"


def check_total(space: Space, reader: int, universe: set[tuple[int, int]] | None = None) -> None:
    """The total log is a prefix of the sort of every message written (or of ``universe``, the
    messages that can be processed at all) by order key."""
    log = space.total_logs[reader]
    assert list(space.readers[reader].total_log) == compacted(log)
    total = [(r.member, r.seq) for r in log]
    assert total == space.sorted_by_key(universe)[: len(total)]
    assert not any(r.late for r in log)


def check_bounded(space: Space) -> None:
    for reader in space.readers:
        assert reader.orderer.held_total() <= max(space.capacity, MIN_WINDOW * space.writers)


def random_run(space: Space, rng: random.Random, steps: int, *, writers: int | None = None) -> None:
    for _ in range(steps):
        action = rng.random()
        if action < 0.35:
            member = rng.randrange(writers or space.writers)
            kind = rng.choice([Kind.SAY, Kind.SET, Kind.SET, Kind.HEARTBEAT])
            space.write(member, kind, key=f"k{rng.randrange(3)}", value=rng.choice(["", "x", "y", "z"]))
        elif action < 0.85:
            space.deliver_some(rng.randrange(len(space.readers)), rng.randrange(1, 6))
        elif action < 0.93:
            space.partition()
        else:
            space.heal()
        check_bounded(space)


@settings(max_examples=150, deadline=None)
@given(
    writers=st.integers(2, 6),
    passive=st.integers(1, 3),
    capacity=st.sampled_from([8, 64, 1024]),
    steps=st.integers(10, 120),
    seed=st.integers(0, 2**32),
)
def test_readers_converge_on_one_total_order_and_state(
    writers: int, passive: int, capacity: int, steps: int, seed: int
) -> None:
    rng = random.Random(seed)
    space = Space(writers, passive, capacity, rng)
    random_run(space, rng, steps)
    for reader in space.all():
        check_causal(space, reader)
        check_total(space, reader)
    # rejoin: everything reaches everyone; then every writer says it has seen it all
    space.heal()
    for reader in space.all():
        space.settle(reader)
    last = [space.write(member, Kind.HEARTBEAT) for member in range(writers)]
    for reader in space.all():
        space.settle(reader)
    states = set()
    for reader in space.all():
        check_causal(space, reader)
        check_total(space, reader)
        got = space.readers[reader]
        assert got.orderer.processed == len(space.written)
        assert not got.status(NOW).stalled and not got.orderer.invalidations
        ordered = {(r.member, r.seq) for r in space.total_logs[reader]}
        assert set(space.written) - ordered <= {m.id for m in last}  # all but the final heartbeats
        assert {k: got.state.get(k) for k, _ in got.state.items()} == space.naive_state()
        states.add(got.state.canonical_bytes())
    assert len(states) == 1
    assert len({tuple(space.readers[r].total_log) for r in space.all()}) == 1


@settings(max_examples=150, deadline=None)
@given(
    writers=st.integers(2, 6),
    capacity=st.sampled_from([8, 1024]),
    steps=st.integers(10, 100),
    seed=st.integers(0, 2**32),
)
def test_readers_holding_the_same_messages_agree_whatever_the_order(
    writers: int, capacity: int, steps: int, seed: int
) -> None:
    """Two readers given one random subset of the messages (holes allowed), each in its own
    random order, process the same messages and agree on the total order and the state."""
    rng = random.Random(seed)
    space = Space(writers, 2, capacity, rng)
    random_run(space, rng, steps)
    subset = {m for m in space.written if rng.random() < 0.7}
    first, second = writers, writers + 1
    for reader in (first, second):
        space.new_reader(reader)
        space.pending[reader] = set(space.written)
        space.settle(reader, subset)
        check_causal(space, reader)
        check_total(space, reader)
    a, b = space.readers[first], space.readers[second]
    assert {(r.member, r.seq) for r in a.causal_log} == {(r.member, r.seq) for r in b.causal_log}
    assert a.total_log == b.total_log
    assert a.state.canonical_bytes() == b.state.canonical_bytes()
    assert [m.seq for m in a.status(NOW).missing] == [m.seq for m in b.status(NOW).missing]


@settings(max_examples=100, deadline=None)
@given(
    honest=st.integers(2, 4),
    liars=st.integers(1, 2),
    steps=st.integers(10, 100),
    seed=st.integers(0, 2**32),
)
def test_lying_writers_invalidate_only_themselves_and_readers_still_agree(
    honest: int, liars: int, steps: int, seed: int
) -> None:
    """Members ``honest..`` claim at random (messages of the future, each other's, cycles) or
    send garbage; the honest members' messages are all processed everywhere, no honest feed is
    ever invalid, and readers holding every message agree on what is processed, invalid and
    ordered, and on the state."""
    rng = random.Random(seed)
    space = Space(honest + liars, 1, 16, rng)
    members = honest + liars
    for _ in range(steps):
        if rng.random() < 0.2:
            liar = rng.randrange(honest, members)
            indices = sorted(rng.sample(range(members), rng.randrange(members)))
            delta = tuple((i, rng.randrange(1, 4)) for i in indices if i != liar)
            space.write_dishonest(liar, None if rng.random() < 0.05 else delta)
        else:
            random_run(space, rng, 1, writers=honest)
    readers = [r for r in space.all() if not honest <= r < members]
    space.heal()
    for reader in readers:
        space.settle(reader)
    for member in range(honest):
        space.write(member, Kind.HEARTBEAT)
    results = set()
    for reader in readers:
        space.settle(reader)
        got = space.readers[reader]
        processed = {(r.member, r.seq) for r in space.causal_logs[reader]}
        assert {m for m in space.written if m[0] < honest} <= processed
        status = got.status(NOW)
        assert all(m.invalid is None for m in status.members[:honest])
        check_causal(space, reader)
        invalid = tuple(m.invalid[0] if m.invalid else None for m in status.members)
        results.add((frozenset(processed), invalid, tuple(got.total_log), got.state.canonical_bytes()))
    assert len(results) == 1
    [(universe, _, _, _)] = results
    for reader in readers:
        check_total(space, reader, set(universe))


def check_total_with_late(space: Space, reader: int) -> None:
    """With members taken for inactive, the total log may depart from the key order, but only
    where it says so: each message once, after everything it depends on; the entries not
    flagged late in increasing key order; a late one sorts before one already there."""
    log = space.total_logs[reader]
    assert list(space.readers[reader].total_log) == compacted(log)
    position = {(r.member, r.seq): i for i, r in enumerate(log)}
    assert len(position) == len(log), "a message ordered twice"
    highest = None
    for i, record in enumerate(log):
        for dep in space.written[(record.member, record.seq)].deps():
            assert position[dep] < i, f"{record} before {dep} in the total order"
        if record.late:
            assert highest is not None and record.key < highest
        else:
            assert highest is None or highest < record.key
            highest = record.key


@settings(max_examples=100, deadline=None)
@given(
    writers=st.integers(2, 5),
    capacity=st.sampled_from([8, 1024]),
    steps=st.integers(10, 100),
    seed=st.integers(0, 2**32),
)
def test_inactive_and_stalled_members_bend_the_total_order_only_where_it_says_so(
    writers: int, capacity: int, steps: int, seed: int
) -> None:
    """Time passes (members silent or stalled for ``inactive_after`` stop holding the total
    order back): every reader's total log stays causal and flags where it departs from the key
    order; the shared map does not depend on it; once everything is delivered and time has
    passed, everything processed is ordered everywhere."""
    rng = random.Random(seed)
    space = Space(writers, 2, capacity, rng, inactive_after=10.0)
    for _ in range(steps):
        space.now += rng.choice([0.0, 0.0, 1.0, 4.0, 12.0])
        random_run(space, rng, 1)
        for reader in space.all():
            check_total_with_late(space, reader)
    space.heal()
    for reader in space.all():
        space.settle(reader)
    space.now += 100.0
    states = set()
    for reader in space.all():
        got = space.readers[reader]
        space.pump(reader)
        check_causal(space, reader)
        check_total_with_late(space, reader)
        assert got.orderer.processed == len(space.written) == len(space.total_logs[reader])
        assert {k: got.state.get(k) for k, _ in got.state.items()} == space.naive_state()
        states.add(got.state.canonical_bytes())
    assert len(states) == 1
