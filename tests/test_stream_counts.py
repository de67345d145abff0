"""Per-stream live counts (swarm/live/stream_counts.py) against a naive model."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swarm.live.stream_counts import OUTCOMES, StreamCounts


@given(st.lists(st.tuples(st.sampled_from("abcde"), st.sampled_from(OUTCOMES)), max_size=60))
def test_counts_match_a_naive_model_keeping_the_most_recent_streams(events: list[tuple[str, str]]) -> None:
    counts = StreamCounts(max_rows=3)
    for now, (stream, outcome) in enumerate(events):
        counts.add(stream, outcome, float(now))
    recent: list[str] = []  # streams, most recently heard from first
    for stream, _ in reversed(events):
        if stream not in recent:
            recent.append(stream)
    rows = counts.rows()
    assert [r["stream"] for r in rows] == recent[:3]
    for row in rows:
        # a stream's counts since it was last (re)admitted: a dropped stream starts again at 0
        mine = [(i, o) for i, (s, o) in enumerate(events) if s == row["stream"]]
        assert row["received"] == sum(row[o] for o in OUTCOMES) <= len(mine)
        assert row["last"] == float(mine[-1][0])


def test_an_unknown_outcome_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown outcome 'lost'"):
        StreamCounts().add("topic ab", "lost", 1.0)
