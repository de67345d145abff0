"""Loss advisories: the first at once, then at most one a second, totals and top 9, restarts apart."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from swarm.live.advisory import MAX_RANGES, MAX_STREAMS, AdvisoryThrottle


def test_first_at_once_then_at_most_one_a_second() -> None:
    throttle = AdvisoryThrottle(interval=1.0)
    first = throttle.record("feed a", 10.0, lost=2, ranges=((5, 6),))
    assert first is not None and first.lost == 2 and first.streams[0].ranges == ((5, 6),)
    assert throttle.record("feed a", 10.2, lost=1, ranges=((9, 9),)) is None
    assert throttle.record("topic b", 10.5, unknown=1) is None
    assert throttle.flush(10.9) is None
    assert throttle.next_flush() == 11.0
    second = throttle.flush(11.0)
    assert second is not None
    assert second.lost == 2 and second.stream_count == 2
    assert [s.stream for s in second.streams] == ["feed a", "topic b"]
    assert second.description == "lost msgs"
    assert throttle.flush(12.5) is None and throttle.next_flush() is None


def test_restarts_are_kept_apart_from_loss() -> None:
    throttle = AdvisoryThrottle()
    advisory = throttle.record("topic t", 0.0, restart=True)
    assert advisory is not None
    assert advisory.lost == 0 and advisory.restarts == 1
    assert advisory.description == "publisher restarted"
    unknown = AdvisoryThrottle().record("topic t", 0.0, unknown=1)
    assert unknown is not None and unknown.lost == 1 and unknown.description == "lost seqno tracking"


def test_at_most_nine_streams_named_and_ranges_capped() -> None:
    throttle = AdvisoryThrottle()
    throttle.record("warm-up", 0.0, lost=1)
    for i in range(12):
        throttle.record(f"feed {i:02d}", 0.5, lost=i + 1, ranges=tuple((j, j) for j in range(20)))
    advisory = throttle.flush(1.0)
    assert advisory is not None
    assert advisory.stream_count == 12 and len(advisory.streams) == MAX_STREAMS
    assert advisory.streams[0].stream == "feed 11" and advisory.streams[0].lost == 12
    assert advisory.lost == sum(range(1, 13))
    assert (
        len(advisory.streams[0].ranges) == MAX_RANGES
        and advisory.streams[0].ranges_dropped == 20 - MAX_RANGES
    )


@given(st.lists(st.tuples(st.floats(0, 0.7), st.integers(0, 3), st.integers(0, 5)), max_size=60))
def test_never_two_within_the_interval_and_nothing_is_lost(events: list[tuple[float, int, int]]) -> None:
    throttle = AdvisoryThrottle(interval=1.0)
    now, sent, recorded = 0.0, [], 0
    for step, stream, lost in events:
        now += step
        recorded += lost
        for advisory in (throttle.record(f"s{stream}", now, lost=lost), throttle.flush(now)):
            if advisory is not None:
                sent.append(advisory)
    final = throttle.flush(now + 2.0)  # surely past the interval (now + 1.0 - now can be < 1.0)
    if final is not None:
        sent.append(final)
    assert all(b.at - a.at >= 1.0 for a, b in itertools.pairwise(sent))
    assert sum(a.lost for a in sent) == recorded
