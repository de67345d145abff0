"""LogBudget against a model: per window at most `burst` lines, every other event counted."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swarm.net.logbudget import LogBudget


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_then_silence_then_a_line_that_says_how_many_were_dropped() -> None:
    clock = Clock()
    budget = LogBudget(burst=3, window=10.0, clock=clock)
    assert [budget.allow() for _ in range(5)] == [True, True, True, False, False]
    clock.now = 10.0
    assert budget.allow()
    assert budget.note() == " (2 more like this not logged)"
    assert budget.note() == ""


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="burst >= 1"):
        LogBudget(burst=0)


@given(st.lists(st.floats(min_value=0, max_value=5, allow_nan=False), max_size=200))
def test_against_a_model(gaps: list[float]) -> None:
    clock = Clock()
    budget = LogBudget(burst=4, window=1.0, clock=clock)
    window_start, used, logged, dropped, total_dropped = 0.0, 0, 0, 0, 0
    for gap in gaps:
        clock.now += gap
        if clock.now - window_start >= 1.0:
            window_start, used = clock.now, 0
        expected = used < 4
        used += expected
        assert budget.allow() == expected
        if expected:
            logged += 1
            note = budget.note()
            assert note == ("" if not dropped else f" ({dropped} more like this not logged)")
            dropped = 0
        else:
            dropped += 1
            total_dropped += 1
    assert logged + total_dropped == len(gaps) and budget.suppressed == dropped
