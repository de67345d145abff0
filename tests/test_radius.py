"""The storage radius in motion: the reserve worker raising it in bounded eviction batches and
lowering it one step at a time, and the puller following it (bins below the radius are not
pulled; lowered, what was passed over below the old radius is pulled again)."""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import trio
import trio.testing

from chunks import Chunk
from localstore.reserve import Reserve, storage_radius
from localstore.store import LocalStore
from swarm.reserve.worker import ReserveWorker
from tests.test_puller import PEER, FakeClient, cursors, puller, settle

OVERLAY = bytes(32)


class CountingStore:
    """The store as the reserve sees it, recording the size of every eviction batch."""

    def __init__(self, store: LocalStore) -> None:
        self._store = store
        self.batches: list[int] = []

    def evict(self, addresses: Iterable[bytes]) -> int:
        victims = list(addresses)
        self.batches.append(len(victims))
        return self._store.evict(victims)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


async def test_the_worker_raises_the_radius_in_bounded_batches_and_lowers_it_step_by_step(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    rng = random.Random(9)
    pool = [Chunk.from_payload(rng.randbytes(32)) for _ in range(600)]
    historical = [False]
    changes: list[int] = []
    with LocalStore(tmp_path / "s", OVERLAY) as store:
        store.put_many(pool)
        counting = CountingStore(store)
        reserve = Reserve(counting, 100)
        needed = storage_radius(reserve.counts(), 100)
        worker = ReserveWorker(
            reserve,
            depth=lambda: 8,
            historical_done=lambda: historical[0],
            radius_changed=changes.append,
            batch=16,
            lower_interval=1.0,
        )
        with trio.fail_after(600):
            async with trio.open_nursery() as nursery:
                await nursery.start(worker.run)
                worker.wake()
                while reserve.size() > 100:
                    await trio.sleep(0.5)
                assert changes == [needed] and 2 <= needed <= 8
                assert max(counting.batches) <= 16 and len(counting.batches) >= (600 - 100) // 16
                assert not any(reserve.within_radius(c.address) for c in pool if not store.has(c.address))

                reserve.capacity = 100_000  # room again (as after a restart with more capacity)
                await trio.sleep(10)
                assert changes == [needed], "not lowered while historical syncing runs"
                historical[0] = True
                while reserve.radius:
                    await trio.sleep(0.5)
                nursery.cancel_scope.cancel()
    assert changes == [needed, *range(needed - 1, -1, -1)], "down one step at a time"


async def test_the_puller_skips_bins_below_the_radius_and_pulls_them_again_once_lowered() -> None:
    p = puller()
    async with trio.open_nursery() as nursery:
        client = FakeClient(PEER, nursery, p, cursors(b1=10, b2=10, b4=10))
        nursery.start_soon(p.pull, client, 5)  # a neighbour: every bin, depth 0
        await settle()
        assert {b for b, _ in client.running} == set(range(32))
        p.set_radius(3)
        await settle()
        assert {b for b, _ in client.running} == set(range(3, 32)), "bins 0-2 are not pulled"
        p.set_radius(1)  # lowered: bins 1 and 2 again, their history from the start
        await settle()
        assert {b for b, _ in client.running} == set(range(1, 32))
        historical = [s for s in client.syncs if not s[1]]
        assert historical.count((1, False, 1, 10)) == 2 and historical.count((2, False, 1, 10)) == 2
        assert historical.count((4, False, 1, 10)) == 1, "bins within the old radius keep their intervals"
        nursery.cancel_scope.cancel()
