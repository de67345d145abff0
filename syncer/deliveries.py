"""DeliveryIntake: one upstream's chunk deliveries, verified in batches, then stored.

The connection's reader hands each solicited delivery to `put` and goes on reading; `run`
gathers what has arrived into a batch, has the node's `ChunkIntake` verify it (on the worker
processes of other cores) and, a few batches later, stores the valid chunks through it with one
write and counts them. While a batch is hashed elsewhere, this process decodes the next ones, answers
offers and stores the batch before: that overlap is the point.

Memory stays bounded: `put` waits when `QUEUE` chunks are waiting (the reader stops reading, so
TCP slows the upstream down) and at most `IN_FLIGHT` batches are being verified. An invalid chunk
is counted and drops the peer (the `broke_protocol` it is given); the valid chunks around it are
still stored. `run` outlives the connection: after `close` it verifies and stores what had
arrived, so a valid chunk delivered just before the peer went (or was dropped) is not lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import trio

from chunks import Chunk, InvalidChunk
from streamer.errors import RemoteProtocolError
from streamer.messages import GoodbyeCode
from syncer.given import GivenRanges
from syncer.intake import ChunkIntake
from syncer.stats import PeerStats
from syncer.verifier import MAX_BATCH, Verdicts

__all__ = ["BATCH", "IN_FLIGHT", "QUEUE", "DeliveryIntake"]

QUEUE = 256
"""Delivered chunks waiting for a verifier batch, per peer."""
BATCH = min(128, MAX_BATCH)
"""Most chunks in one verifier batch: whatever has arrived, up to this."""
IN_FLIGHT = 4
"""Batches of one peer submitted and waiting to be stored, beyond the one being stored: enough
to keep two verifier workers each with a batch in hand and one queued."""


class DeliveryIntake:
    """Verifies and stores the chunks one upstream delivers."""

    def __init__(
        self,
        intake: ChunkIntake,
        stats: PeerStats,
        broke_protocol: Callable[[RemoteProtocolError], None],
        *,
        clock: Callable[[], float] = time.time,
        given: GivenRanges | None = None,
    ) -> None:
        self.intake = intake
        self.given = given  # told the bin IDs this peer's chunks got (syncer/given.py)
        self.stats = stats
        self.broke_protocol = broke_protocol
        self.clock = clock
        self._arrived_send, self._arrived = trio.open_memory_channel[Chunk](QUEUE)
        self._checking_send, self._checking = trio.open_memory_channel[Verdicts](IN_FLIGHT - 1)

    async def put(self, chunk: Chunk) -> None:
        """Queue a solicited delivery; waits only while the queue is full."""
        await self.put_many((chunk,))

    async def put_many(self, chunks: Sequence[Chunk]) -> None:
        """Queue solicited deliveries in order; waits only while the queue is full (chunk by
        chunk: the reader is held up no longer than a single delivery would hold it)."""
        send_nowait = self._arrived_send.send_nowait
        for chunk in chunks:
            try:
                send_nowait(chunk)
            except trio.WouldBlock:
                await self._arrived_send.send(chunk)

    def close(self) -> None:
        """No more deliveries will come (the connection ended): `run` finishes what came."""
        self._arrived_send.close()

    async def run(self) -> None:
        """Verify and store deliveries until `close`d and drained (or cancelled)."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._submit)
            await self._store()

    async def _submit(self) -> None:
        async for first in self._arrived:
            batch = [first]
            while len(batch) < BATCH:
                try:
                    batch.append(self._arrived.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
            await self._checking_send.send(await self.intake.verify(batch))
        await self._checking_send.aclose()

    async def _store(self) -> None:
        async for verdicts in self._checking:
            problems = await verdicts.wait()
            chunks = verdicts.chunks
            valid = [chunk for chunk, problem in zip(chunks, problems, strict=True) if problem is None]
            now = self.clock()
            if valid:
                given = self.given
                before = self.intake.cursors() if given is not None else []
                new = self.intake.store_many(valid, verified=True)
                if given is not None and new:
                    given.note(before, self.intake.cursors())
                self.stats.add("delivered", len(valid), now)
                if new < len(valid):
                    self.stats.add("repeat", len(valid) - new, now)
            if len(valid) < len(chunks):
                bad = [(c, p) for c, p in zip(chunks, problems, strict=True) if p is not None]
                self.stats.add("invalid", len(bad), now)
                exc = InvalidChunk(bad[0][0].address, bad[0][1] or "")
                self.broke_protocol(
                    RemoteProtocolError(f"invalid chunk delivered: {exc}", GoodbyeCode.INVALID_CHUNK)
                )
