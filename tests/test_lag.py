"""Lag as time (syncer/lag.py): the age of the oldest unsynced ID, against a naive model that
keeps every observation, and through the puller with a controlled clock."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from swarm.testing import NodeProcess, poll, preload, random_chunks
from syncer.interval_store import IntervalStore
from syncer.lag import CursorClock
from syncer.pull_config import PullerConfig
from syncer.puller import Puller
from tests.test_intervals import DictState
from tests.test_puller import PEER, FakeClient, cursors, settle


def test_behind_is_the_age_of_the_oldest_unsynced_id() -> None:
    clock = CursorClock()
    clock.observe(10, now=100.0)  # IDs 1..10 known at 100
    clock.observe(10, now=105.0)  # no growth: no news
    clock.observe(25, now=110.0)  # IDs 11..25 known at 110
    assert clock.known_since(10) == 100.0 and clock.known_since(11) == 110.0
    assert clock.known_since(26) is None
    assert clock.behind(None, now=130.0) == 0.0  # caught up
    assert clock.behind(4, now=130.0) == 30.0
    assert clock.behind(11, now=130.0) == 20.0  # 1..10 synced: the observation at 100 is dropped
    assert clock.cursors == [25]
    assert clock.last_batch is None
    clock.batch(131.0)
    assert clock.last_batch == 131.0


# steps: ("observe", cursor growth) or ("sync", how far the first missing ID moves up)
steps = st.lists(
    st.tuples(st.sampled_from(["observe", "sync"]), st.integers(0, 20), st.floats(0, 10)), max_size=40
)


@given(steps)
def test_pruned_clock_answers_as_the_naive_model(script: list[tuple[str, int, float]]) -> None:
    clock = CursorClock()
    seen: list[tuple[int, float]] = []  # every observation ever made
    now, cursor, first_missing = 0.0, 0, 1
    for action, amount, dt in script:
        now += dt
        if action == "observe":
            cursor += amount
            clock.observe(cursor, now)
            seen.append((cursor, now))
        else:
            first_missing = min(first_missing + amount, cursor + 1)
        missing = first_missing if first_missing <= cursor else None
        times = [t for c, t in seen if missing is not None and c >= missing]
        expected = now - min(times) if times else 0.0
        assert clock.behind(missing, now) == expected


async def test_the_puller_reports_seconds_behind_and_the_last_batch() -> None:
    now = [1000.0]
    p = Puller(IntervalStore(DictState()), config=PullerConfig(cursor_refresh=60), clock=lambda: now[0])
    async with trio.open_nursery() as nursery:
        client = FakeClient(PEER, nursery, p, cursors(b3=100))
        client.record_historical = False
        nursery.start_soon(p.pull, client, 4)
        await settle()
        now[0] = 1030.0
        (bin3,) = [b for b in p.statistics().peers[0].bins if b.bin == 3]
        assert bin3.lag == 100 and bin3.behind == 30.0 and bin3.last_batch is None
        p.record(PEER, 3, 1, 60)  # a batch at 1030
        now[0] = 1040.0
        client.cursors_ = cursors(b3=130)
        p.observe(PEER, 3, 130)  # an offer showed IDs 101..130 at 1040
        now[0] = 1045.0
        (bin3,) = [b for b in p.statistics().peers[0].bins if b.bin == 3]
        assert bin3.lag == 70 and bin3.behind == 45.0 and bin3.last_batch == 1030.0
        p.record(PEER, 3, 61, 100)  # the rest of what was known at 1000
        (bin3,) = [b for b in p.statistics().peers[0].bins if b.bin == 3]
        assert bin3.behind == 5.0  # 101 known since 1040
        p.record(PEER, 3, 101, 130)
        (bin3,) = [b for b in p.statistics().peers[0].bins if b.bin == 3]
        assert bin3.lag == 0 and bin3.behind == 0.0 and bin3.last_batch == 1045.0
        nursery.cancel_scope.cancel()


@pytest.mark.process
def test_sync_and_metrics_report_lag_as_time(tmp_path: Path) -> None:
    preload(tmp_path / "a", random_chunks(300, seed=29))
    started = time.time()
    with NodeProcess(tmp_path / "a") as a, NodeProcess(tmp_path / "b", peers=[a.p2p]) as b:

        def synced() -> bool:
            doc = b.get("/sync").json()
            return doc["chunks"] == 300 and bool(doc["peers"]) and doc["fully_synced"]

        poll(synced, timeout=60)
        (peer,) = b.get("/sync").json()["peers"]
        with_batches = [x for x in peer["bins"] if x["last_batch"] is not None]
        assert with_batches and all(started <= x["last_batch"] <= time.time() for x in with_batches)
        assert all(x["behind_seconds"] == 0 for x in peer["bins"])  # caught up: 0 seconds behind
        metrics = b.get("/metrics").text
        label = f'bin="{with_batches[0]["bin"]}",peer="{a.overlay}"'
        assert f"swarm_sync_behind_seconds{{{label}}} 0.0" in metrics
        assert f"swarm_sync_last_batch_timestamp_seconds{{{label}}}" in metrics
