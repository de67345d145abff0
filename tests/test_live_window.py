"""raims' generation window against a naive model: what is kept, when it rotates, its trailing edge."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarm.live.window import GenerationWindow


class Model:
    """Each key remembers the rotation count when it was last touched; it is kept while fewer
    than `generations` rotations have passed since. Rotation: the window's documented rule."""

    def __init__(self, generations: int, max_bytes: int, max_count: int, lo: float, hi: float) -> None:
        self.generations, self.max_bytes, self.max_count, self.lo, self.hi = (
            generations,
            max_bytes,
            max_count,
            lo,
            hi,
        )
        self.entries: dict[int, tuple[int, int]] = {}  # key -> (value, rotation when touched)
        self.rotations = 0
        self.started = [0.0] + [0.0] * (generations - 1)

    def alive(self, key: int) -> bool:
        return key in self.entries and self.rotations - self.entries[key][1] < self.generations

    def get(self, key: int) -> int | None:
        if not self.alive(key):
            return None
        value = self.entries[key][0]
        self.entries[key] = (value, self.rotations)
        return value

    def newest(self) -> list[int]:
        return [v for k, (v, r) in self.entries.items() if r == self.rotations and self.alive(k)]

    def put(self, key: int, value: int, now: float) -> None:
        elapsed = now - self.started[0]
        newest = self.newest()
        full = sum(newest) > self.max_bytes or len(newest) > self.max_count
        over = sum(newest) > 2 * self.max_bytes or len(newest) > 2 * self.max_count
        if over or (elapsed >= self.lo and (full or elapsed >= self.hi)):
            self.rotations += 1
            self.started = [now, *self.started[:-1]]
        self.entries[key] = (value, self.rotations)


operations = st.lists(
    st.tuples(st.sampled_from(["get", "put"]), st.integers(0, 12), st.integers(1, 50), st.floats(0, 4)),
    max_size=80,
)


@settings(max_examples=200)
@given(operations, st.integers(2, 4), st.integers(20, 200), st.integers(1, 6))
def test_window_matches_the_model(
    ops: list[tuple[str, int, int, float]], gens: int, max_bytes: int, count: int
) -> None:
    window: GenerationWindow[int, int] = GenerationWindow(
        generations=gens,
        max_bytes=max_bytes,
        max_count=count,
        min_interval=2.0,
        max_interval=9.0,
        entry_bytes=lambda v: v,
    )
    model = Model(gens, max_bytes, count, 2.0, 9.0)
    now = 0.0
    for op, key, value, step in ops:
        now += step
        if op == "get":
            assert window.get(key) == model.get(key)
        else:
            window.put(key, value, now)
            model.put(key, value, now)
        assert window.rotations == model.rotations
        assert window.trailing_time == model.started[-1]
        live = {k: v for k, (v, _) in model.entries.items() if model.alive(k)}
        assert len(window) == len(live)
        assert window.bytes == sum(live.values())
        assert sorted(window.values()) == sorted(live.values())


def test_an_untouched_entry_is_gone_after_as_many_rotations_as_generations() -> None:
    window: GenerationWindow[str, int] = GenerationWindow(generations=3, min_interval=10, max_interval=60)
    window.put("a", 1, now=1.0)
    window.put("b", 2, now=1.0)
    for t in (61.0, 122.0):
        window.rotate_if_due(t)
        assert window.get("b") == 2  # touched: moved to the newest generation
    assert "a" in window
    window.rotate_if_due(183.0)
    assert "a" not in window and window.get("b") == 2
    assert window.trailing_time == 61.0  # the oldest generation kept was started then


def test_rotation_waits_for_min_interval_until_twice_full() -> None:
    window: GenerationWindow[int, int] = GenerationWindow(
        generations=2, max_count=10, min_interval=10, max_interval=60
    )
    for i in range(21):
        window.put(i, i, now=5.0)  # 21 entries within 5 s: too soon to rotate, not twice full
    assert window.rotations == 0 and len(window) == 21
    window.put(21, 21, now=10.0)
    assert window.rotations == 1


def test_a_flood_of_fresh_keys_is_held_within_twice_the_limits_per_generation() -> None:
    """Issue 30 item 6: 63,000 publishers in 20 s grew a node by 75 MB; the window now rotates at
    twice its limits whatever the time, so what it holds stays bounded."""
    window: GenerationWindow[int, int] = GenerationWindow(
        generations=3, max_count=1000, max_bytes=10**9, min_interval=10, max_interval=60
    )
    for i in range(100_000):
        window.put(i, i, now=i / 10_000)  # 100,000 chains in 10 s
        assert len(window) <= 3 * (2 * 1000 + 1)


def test_resized_entries_count_their_new_size_and_pop_removes_them() -> None:
    window: GenerationWindow[str, list[int]] = GenerationWindow(entry_bytes=lambda v: 10 * len(v))
    window.put("k", [1], now=0.0)
    entry = window.get("k")
    assert entry is not None
    entry.extend([2, 3])
    window.resized("k")
    assert window.bytes == 30
    assert window.pop("k") == [1, 2, 3]
    assert window.bytes == 0 and len(window) == 0


def test_bad_configurations_are_refused() -> None:
    with pytest.raises(ValueError):
        GenerationWindow(generations=1)
    with pytest.raises(ValueError):
        GenerationWindow(min_interval=10, max_interval=5)
