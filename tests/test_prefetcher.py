"""The download's window of fetches ahead (`swarm.files.transfer.Prefetcher`): bounded, in the
order announced, a fetcher task per slot of the window rather than per chunk."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from chunks import Chunk
from swarm.files.transfer import Prefetcher

CHUNKS = [Chunk.from_payload(f"chunk {i}".encode()) for i in range(40)]
BY_ADDRESS = {chunk.address: chunk for chunk in CHUNKS}
MISSING = CHUNKS[7].address


class Fetches:
    def __init__(self) -> None:
        self.running = 0
        self.most = 0
        self.order: list[bytes] = []
        self.gate = trio.Event()

    async def __call__(self, address: bytes) -> Chunk:
        self.order.append(address)
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await self.gate.wait()
            if address == MISSING:
                raise LookupError("not found")
            return BY_ADDRESS[address]
        finally:
            self.running -= 1


async def test_at_most_the_window_runs_in_the_order_announced_with_a_task_per_fetcher() -> None:
    fetches = Fetches()
    async with trio.open_nursery() as nursery:
        prefetcher = Prefetcher(fetches, nursery, concurrency=4)
        prefetcher.ahead([c.address for c in CHUNKS[:30]])
        prefetcher.ahead([c.address for c in CHUNKS[20:]])  # the announced ones are not repeated
        await trio.testing.wait_all_tasks_blocked()
        assert fetches.running == 4 and len(nursery.child_tasks) == 4
        fetches.gate.set()
        for chunk in CHUNKS:
            if chunk.address == MISSING:
                with pytest.raises(LookupError):
                    await prefetcher.fetch(chunk.address)
            else:
                assert await prefetcher.fetch(chunk.address) == chunk
        assert fetches.most == 4 and fetches.order == [c.address for c in CHUNKS]
        # a chunk never announced is fetched when asked
        assert await prefetcher.fetch(CHUNKS[0].address) == CHUNKS[0] and len(fetches.order) == 41
        await trio.testing.wait_all_tasks_blocked()
        assert not nursery.child_tasks  # the fetchers end when nothing is left to fetch
