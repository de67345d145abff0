"""ChunkVerifier with real worker processes: verdicts, their order, and a worker that dies."""

from __future__ import annotations

import logging
import os
import signal

import pytest
import trio

from chunks import Chunk
from swarm.testing import random_chunks
from syncer.verifier import WORKER_NICENESS, ChunkVerifier, Verdicts
from syncer.verify_worker import check

CHUNKS = random_chunks(60, seed=311)
# every fifth chunk forged: another chunk's data under its address
MIXED = [Chunk(c.address, CHUNKS[i - 1].data) if i % 5 == 0 else c for i, c in enumerate(CHUNKS)]
EXPECTED = [check(c) for c in MIXED]


def test_the_expected_verdicts_are_mixed() -> None:
    assert sum(p is None for p in EXPECTED) == 48
    assert all("hashes to" in p for p in EXPECTED if p is not None)


@pytest.mark.parametrize("workers", [0, 1, 2])
async def test_verdicts_match_inline_checks_and_pair_with_their_batches(workers: int) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            verifier = await nursery.start(ChunkVerifier(workers).run)
            assert verifier.live_workers == workers
            batches = [
                MIXED[i : i + size] for i, size in zip(range(0, 60, 12), [1, 5, 12, 12, 12], strict=True)
            ]
            pending: list[Verdicts] = []
            for batch in batches:  # all submitted before any verdict is read
                pending.append(await verifier.submit(batch))
            for batch, verdicts in zip(batches, pending, strict=True):
                assert await verdicts.wait() == [check(c) for c in batch]
            nursery.cancel_scope.cancel()


async def test_workers_run_nicer_than_the_node() -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            verifier = await nursery.start(ChunkVerifier(2).run)
            own = os.getpriority(os.PRIO_PROCESS, 0)
            pids = [worker.process.pid for worker in verifier._workers]
            assert [os.getpriority(os.PRIO_PROCESS, pid) for pid in pids] == [
                min(19, own + WORKER_NICENESS)
            ] * 2
            assert await (await verifier.submit(CHUNKS[:3])).wait() == [None] * 3  # and they work
            nursery.cancel_scope.cancel()


async def test_many_concurrent_submitters_each_get_their_own_verdicts() -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            verifier = await nursery.start(ChunkVerifier(2).run)
            results: dict[int, list[str | None]] = {}

            async def one(i: int) -> None:
                batch = MIXED[i : i + 7]
                results[i] = await (await verifier.submit(batch)).wait()

            async with trio.open_nursery() as submitters:
                for i in range(40):
                    submitters.start_soon(one, i)
            assert results == {i: EXPECTED[i : i + 7] for i in range(40)}
            nursery.cancel_scope.cancel()


async def test_a_dead_worker_is_logged_and_its_batches_are_verified_inline(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            verifier = await nursery.start(ChunkVerifier(1).run)
            (worker,) = verifier._workers
            before = await verifier.submit(MIXED[:10])
            assert await before.wait() == EXPECTED[:10]
            os.kill(worker.process.pid, signal.SIGKILL)
            # submitted while (or after) it dies: answered anyway
            during = [await verifier.submit(MIXED[i : i + 10]) for i in range(10, 60, 10)]
            for i, verdicts in zip(range(10, 60, 10), during, strict=True):
                assert await verdicts.wait() == EXPECTED[i : i + 10]
            assert verifier.live_workers == 0
            after = await verifier.submit(MIXED[:3])
            assert await after.wait() == EXPECTED[:3]
            nursery.cancel_scope.cancel()
    failures = [r for r in caplog.records if r.levelno == logging.ERROR and "worker 0 failed" in r.message]
    assert len(failures) == 1


async def test_workers_end_with_the_verifier() -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            verifier = await nursery.start(ChunkVerifier(2).run)
            processes = [w.process for w in verifier._workers]
            assert all(p.returncode is None for p in processes)
            nursery.cancel_scope.cancel()
        assert all(p.returncode is not None for p in processes)


def test_worker_count_is_checked() -> None:
    with pytest.raises(ValueError, match=r"0\.\.8"):
        ChunkVerifier(9)
    with pytest.raises(ValueError, match=r"0\.\.8"):
        ChunkVerifier(-1)


async def test_a_worker_that_stops_reading_is_given_up(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A stopped worker fills its pipe; the submit that cannot finish its request within the send
    timeout gives the worker up (killing it) instead of hanging, and nothing goes unanswered."""
    monkeypatch.setattr("syncer.verifier.SEND_TIMEOUT", 0.5)
    big = CHUNKS * 5  # 300 chunks, 1.2 MB per request: more than the 1 MiB pipe holds
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            verifier = await nursery.start(ChunkVerifier(1).run)
            (worker,) = verifier._workers
            os.kill(worker.process.pid, signal.SIGSTOP)
            try:
                pending = [await verifier.submit(big) for _ in range(2)]
            finally:
                os.kill(worker.process.pid, signal.SIGCONT)
            for verdicts in pending:
                assert await verdicts.wait() == [None] * len(big)
            assert verifier.live_workers == 0
            await worker.process.wait()
            assert worker.process.returncode == -signal.SIGKILL
            nursery.cancel_scope.cancel()
    assert any("read no request for 0.5s" in r.message for r in caplog.records)


async def test_a_worker_that_cannot_start_leaves_inline_verification(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("sys.executable", "/nonexistent/python")
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            verifier = await nursery.start(ChunkVerifier(2).run)
            assert verifier.live_workers == 0
            assert await (await verifier.submit(MIXED[:10])).wait() == EXPECTED[:10]
            nursery.cancel_scope.cancel()
    assert any("cannot start chunk verifier worker 0" in r.message for r in caplog.records)


@pytest.mark.parametrize("shared", [True, False])
async def test_requests_go_through_the_ring_while_it_has_room_and_through_the_pipe_after(
    monkeypatch: pytest.MonkeyPatch, shared: bool
) -> None:
    """A ring of three 10-chunk requests: of eight submitted at once, the first three are in
    shared memory, the rest in the pipe; a worker with no shared memory (no memfd) takes all
    eight through the pipe. Every verdict pairs with its batch either way, and the ring's
    regions are all free again once the worker has answered."""
    monkeypatch.setattr("syncer.verifier.RING_SIZE", 3 * (2 + 10 * (36 + 4104)))
    if not shared:
        monkeypatch.setattr("syncer.verifier._shared_memory", lambda size: (None, None))
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            verifier = await nursery.start(ChunkVerifier(1).run)
            (worker,) = verifier._workers
            starts = [(i * 10) % 60 for i in range(8)]
            os.kill(worker.process.pid, signal.SIGSTOP)  # no reply frees a region meanwhile
            try:
                pending = [await verifier.submit(MIXED[s : s + 10]) for s in starts]
                in_ring = [in_ring for _, in_ring in worker.pending]
            finally:
                os.kill(worker.process.pid, signal.SIGCONT)
            assert in_ring == [shared] * 3 + [False] * 5
            for s, verdicts in zip(starts, pending, strict=True):
                assert await verdicts.wait() == EXPECTED[s : s + 10]
            assert worker.ring is None or len(worker.ring) == 0
            assert verifier.live_workers == 1
            nursery.cancel_scope.cancel()
