"""UploadFirst: live offers wait while a node serves uploads, never past their bound.

The pure rule against a naive model (hypothesis), then two nodes in one process: a node that keeps
doing upload work holds its live offers (its peer lacks the new chunks meanwhile) and sends them
once the work pauses, or once the bound has passed even if the work never pauses.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from swarm.node import Node
from swarm.testing import NodeProcess, random_chunks, start_synced_pair, wait_for
from syncer.upload_first import UploadFirst


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def naive_release(touches: list[int], ready: int, quiet: int, max_wait: int) -> int:
    """The first whole time unit at or after ``ready`` at which the offer may go: ``quiet`` units
    after the last touch so far, or ``max_wait`` after ``ready``, by walking time forward."""
    t = ready
    while True:
        last = max((touch for touch in touches if touch <= t), default=None)
        if last is None or t >= last + quiet or t >= ready + max_wait:
            return t
        t += 1


@given(
    touches=st.lists(st.integers(0, 60), max_size=8),
    ready=st.integers(0, 60),
    quiet=st.integers(0, 10),
    max_wait=st.integers(0, 30),
)
def test_a_ready_offer_goes_when_the_uploads_pause_or_its_bound_has_passed(
    touches: list[int], ready: int, quiet: int, max_wait: int
) -> None:
    """Touches up to the offer's readiness are known; asked at ``ready``, the gate's wait ends
    exactly when the model's does."""
    clock = Clock()
    gate = UploadFirst(clock, quiet=quiet, max_wait=max_wait)
    for touch in sorted(t for t in touches if t <= ready):
        clock.now = touch
        gate.touch()
    clock.now = ready
    known = [t for t in touches if t <= ready]
    assert ready + gate.wait(ready) == naive_release(known, ready, quiet, max_wait)


@given(touches=st.lists(st.integers(0, 40), min_size=1, max_size=10), max_wait=st.integers(1, 20))
def test_asked_again_after_each_wait_the_offer_is_never_held_past_its_bound(
    touches: list[int], max_wait: int
) -> None:
    """The upstream's loop: wait, ask again (touches keep coming); it ends by ready + max_wait."""
    clock = Clock()
    gate = UploadFirst(clock, quiet=3, max_wait=max_wait)
    pending = sorted(touches)
    ready = 0.0
    while True:
        while pending and pending[0] <= clock.now:
            pending.pop(0)
            gate.touch()
        seconds = gate.wait(ready)
        if seconds <= 0:
            break
        clock.now += min(seconds, 1.0)  # touches may come during the sleep
    assert clock.now <= ready + max_wait


def test_a_node_without_upload_work_never_holds_an_offer() -> None:
    clock = Clock()
    gate = UploadFirst(clock, quiet=1.0, max_wait=5.0)
    assert gate.wait(0.0) == 0
    gate.touch()
    assert gate.wait(0.0) == pytest.approx(1.0)
    off = UploadFirst(clock, quiet=1.0, max_wait=0.0)
    off.touch()
    assert off.wait(0.0) == 0, "max_wait 0: offers go out at once"
    with pytest.raises(ValueError, match="max_wait"):
        UploadFirst(clock, max_wait=-1)


def holds_all(node: Node, chunks: list) -> bool:
    return all(node.store.has(c.address) for c in chunks)


async def busy_pair(nursery: trio.Nursery, tmp_path: Path, wait: float) -> tuple[Node, Node, trio.Event]:
    """A and B synced, then A doing upload work every 50 ms (what storing an upload's chunks
    does) until the event returned is set."""
    history = random_chunks(20, seed=11)
    a, b = await start_synced_pair(nursery, tmp_path, history, replication_quiet=0.3, replication_wait=wait)
    stop = trio.Event()

    async def keep_working() -> None:
        while not stop.is_set():
            a.upload_first.touch()
            await trio.sleep(0.05)

    nursery.start_soon(keep_working)
    await trio.sleep(0.1)
    return a, b, stop


async def test_live_offers_wait_while_a_node_serves_uploads(tmp_path: Path) -> None:
    fresh = random_chunks(40, seed=12)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a, b, stop = await busy_pair(nursery, tmp_path, wait=30.0)
            for chunk in fresh:  # new chunks at A while it is busy with uploads
                a.intake.store(chunk)
            await trio.sleep(1.0)
            assert not any(b.store.has(c.address) for c in fresh), "offered while A served uploads"
            stop.set()
            await wait_for(lambda: holds_all(b, fresh))
            status = a.statistics().reserve
            assert status.replication_held >= 1 and status.replication_held_s >= 1.0
            nursery.cancel_scope.cancel()


async def test_live_offers_are_late_but_never_starved(tmp_path: Path) -> None:
    fresh = random_chunks(30, seed=13)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a, b, _ = await busy_pair(nursery, tmp_path, wait=1.0)  # A's work never pauses
            for chunk in fresh:
                a.intake.store(chunk)
            await wait_for(lambda: holds_all(b, fresh))
            assert a.statistics().reserve.replication_held >= 1
            nursery.cancel_scope.cancel()


@pytest.mark.process
def test_swarm_node_takes_its_bound_from_the_command_line(tmp_path: Path) -> None:
    with NodeProcess(tmp_path / "n", extra=["--replication-wait", "0.5"]) as node:
        assert node.get("/sync").json()["reserve"]["replication_wait"] == 0.5
    command = [sys.executable, "-m", "swarm", "node", "--data-dir", str(tmp_path / "m")]
    refused = subprocess.run(
        [*command, "--replication-wait", "-1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "--replication-wait: expected seconds, 0..60, got '-1'" in refused.stderr.strip().splitlines()[-1]
