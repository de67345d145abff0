"""Retrieved chunks checked in batches (`swarm.net.delivery_checks`), on a real verifier worker
and through a node's retrieval."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from chunks import Chunk, InvalidChunk
from swarm.net.delivery_checks import BatchedChecks
from swarm.testing import node_config, start_node, wait_for
from syncer.verifier import ChunkVerifier
from syncer.verify_worker import check


def chunks(n: int) -> list[Chunk]:
    return [Chunk.from_payload(f"delivery {i}".encode()) for i in range(n)]


class Recorder:
    """Verifies inline as the worker would, recording the batches it was given."""

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.release = trio.Event()
        self.hold = False
        self.caller: trio.lowlevel.Task | None = None

    async def __call__(self, batch: list[Chunk]) -> list[str | None]:
        self.batches.append(len(batch))
        self.caller = trio.lowlevel.current_task()
        if self.hold:
            await self.release.wait()
        return [check(chunk) for chunk in batch]


async def check_all(checks: BatchedChecks, batch: list[Chunk]) -> list[Chunk | InvalidChunk]:
    results: list[Chunk | InvalidChunk] = [InvalidChunk(c.address, "unset") for c in batch]

    async def one(i: int) -> None:
        try:
            results[i] = await checks.checked(batch[i])
        except InvalidChunk as exc:
            results[i] = exc

    async with trio.open_nursery() as nursery:
        for i in range(len(batch)):
            nursery.start_soon(one, i)
    return results


async def test_deliveries_of_one_round_are_checked_in_one_batch_and_marked_verified() -> None:
    verify = Recorder()
    checks = BatchedChecks(verify)
    good = chunks(5)
    results = await check_all(checks, good)
    assert verify.batches == [5]
    assert all(isinstance(r, Chunk) and r.verified and r == c for r, c in zip(results, good, strict=True))
    # a chunk already verified is not checked again
    first = results[0]
    assert isinstance(first, Chunk)
    assert await checks.checked(first) is first and verify.batches == [5]


async def test_an_invalid_delivery_is_refused_and_the_others_pass() -> None:
    good = chunks(3)
    forged = Chunk(good[1].address, good[0].data)
    results = await check_all(BatchedChecks(Recorder()), [good[0], forged, good[2]])
    assert isinstance(results[1], InvalidChunk) and "hashes to" in str(results[1])
    assert isinstance(results[0], Chunk) and isinstance(results[2], Chunk)


async def test_a_cancelled_leader_still_answers_and_a_delivery_meanwhile_starts_the_next_batch() -> None:
    verify = Recorder()
    verify.hold = True
    checks = BatchedChecks(verify)
    names = ["a", "b", "c", "d"]
    by_name = dict(zip(names, chunks(4), strict=True))
    scopes: dict[str, trio.CancelScope] = {}
    tasks: dict[trio.lowlevel.Task, str] = {}
    got: dict[str, Chunk] = {}

    async def take(name: str) -> None:
        tasks[trio.lowlevel.current_task()] = name
        with trio.CancelScope() as scopes[name]:
            got[name] = await checks.checked(by_name[name])

    async with trio.open_nursery() as nursery:
        for name in names[:3]:
            nursery.start_soon(take, name)
        await trio.testing.wait_all_tasks_blocked()
        assert verify.batches == [3]  # started in one round: one batch
        assert verify.caller is not None
        leader = tasks[verify.caller]
        follower = next(name for name in names[:3] if name != leader)
        scopes[leader].cancel()  # shielded while its batch is verified
        scopes[follower].cancel()  # a follower just leaves
        nursery.start_soon(take, "d")  # arrives while the batch is out: the next batch
        await trio.testing.wait_all_tasks_blocked()
        assert verify.batches == [3, 1]
        verify.release.set()
    other = next(name for name in names[:3] if name not in (leader, follower))
    assert got[other].verified and got["d"].verified and follower not in got


async def test_a_real_worker_checks_the_batches() -> None:
    verifier = ChunkVerifier(workers=1)
    async with trio.open_nursery() as nursery:
        await nursery.start(verifier.run)

        async def verify(batch: list[Chunk]) -> list[str | None]:
            return await (await verifier.submit(batch)).wait()

        checks = BatchedChecks(verify)
        good = chunks(4)
        forged = Chunk(good[0].address, good[1].data)
        results = await check_all(checks, [*good, forged])
        assert verifier.live_workers == 1 and checks.batches == 1 and checks.chunks == 5
        assert all(isinstance(r, Chunk) and r.verified for r in results[:4])
        assert isinstance(results[4], InvalidChunk)
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("workers", [0, 1])
async def test_a_node_with_workers_checks_retrieved_chunks_there(tmp_path: Path, workers: int) -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            holder = await start_node(nursery, node_config(tmp_path / "a", gossip=False))
            fetcher = await start_node(
                nursery, node_config(tmp_path / "b", gossip=False, verify_workers=workers, capacity=16)
            )
            await fetcher.connect("127.0.0.1", holder.p2p_port)
            await wait_for(lambda: len(fetcher.peers) == 1)
            held = chunks(40)
            holder.intake.store_many(held)
            got = await check_all_fetched(fetcher, held)
            assert [c.data for c in got] == [c.data for c in held] and all(c.verified for c in got)
            checks = fetcher.retrieval.checks
            if workers:
                assert checks is not None and 0 < checks.batches <= checks.chunks <= len(held)
            else:
                assert checks is None
            nursery.cancel_scope.cancel()


async def check_all_fetched(node: object, held: list[Chunk]) -> list[Chunk]:
    retrieval = node.retrieval  # type: ignore[attr-defined]
    got: list[Chunk | None] = [None] * len(held)

    async def one(i: int) -> None:
        got[i] = await retrieval.get_from_network(held[i].address)

    async with trio.open_nursery() as nursery:
        for i in range(len(held)):
            nursery.start_soon(one, i)
    return [c for c in got if c is not None]
