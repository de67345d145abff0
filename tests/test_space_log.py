"""The space log: stable positions, one heartbeat per member kept (issue 30 item 10), against a
naive model (every record appended, the compaction computed from scratch)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from swarm.spaces.messages import Kind, compose
from swarm.spaces.reader import SpaceReader
from swarm.spaces.spacelog import LogRecord, SpaceLog
from swarm.spaces.timeframe import OrderKey
from tests.space_model import compacted

KINDS = [Kind.HEARTBEAT, Kind.SAY, Kind.SET]


def record(member: int, seq: int, kind: Kind) -> LogRecord:
    return LogRecord(member, OrderKey(seq + 1, bytes([member]) * 20, seq), (seq,), kind, 0)


appends = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(KINDS)), max_size=300)


@given(appends, st.integers(0, 320), st.integers(1, 50))
def test_the_log_keeps_every_message_and_each_members_latest_heartbeat(
    ops: list[tuple[int, Kind]], start: int, limit: int
) -> None:
    log = SpaceLog()
    everything = []
    for seq, (member, kind) in enumerate(ops):
        r = record(member, seq, kind)
        assert log.append(r) == seq  # positions are given in order, never reused
        everything.append(r)
    assert list(log) == compacted(everything) and len(log) == len(compacted(everything))
    assert log.end == len(everything)
    kept = {id(r) for r in compacted(everything)}
    naive = [(p, r) for p, r in enumerate(everything) if id(r) in kept and p >= start][:limit]
    assert log.page(start, limit) == naive
    assert sum(r.kind is Kind.HEARTBEAT for r in log) <= 4
    assert len(log._slots) <= 2 * len(log) + 1  # dropped slots are squeezed out


def test_a_follower_keeps_one_heartbeat_per_member_however_many_arrive() -> None:
    """Two quiet members heartbeat 5,000 times each around a few messages: the logs keep the
    messages and the latest heartbeat of each member, nothing else."""
    space = SpaceReader(inactive_after=1e9)
    owners = [b"\xaa" * 20, b"\xbb" * 20]
    for owner in owners:
        space.add_member(owner, 0.0)
    seqs = [-1, -1]
    previous: list[tuple[int, ...]] = [(-1, -1), (-1, -1)]
    for k in range(10_000):
        member = k % 2
        kind = Kind.SAY if k % 2500 == 0 else Kind.HEARTBEAT
        seqs[member] += 1
        timeframe = tuple(seqs)
        space.offer(member, seqs[member], compose(member, previous[member], timeframe, kind, text="hi"), 1.0)
        previous[member] = timeframe
        space.pump(1.0)
    assert space.orderer.processed == 10_000
    says = 4
    for log in (space.causal_log, space.total_log):
        assert [r.kind for r in log].count(Kind.SAY) == says
        assert [r.kind for r in log].count(Kind.HEARTBEAT) <= 2
        assert len(log._slots) <= 2 * (says + 2) + 1
    assert space._unordered.keys() <= {(0, seqs[0]), (1, seqs[1])}  # only what waits for the order
