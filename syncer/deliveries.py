"""DeliveryIntake: one upstream's chunk deliveries, verified in batches, then stored.

The connection's reader hands each solicited delivery to `put` and goes on reading; `run`
gathers what has arrived into a batch, submits it to the node's `ChunkVerifier` (worker
processes on other cores) and, a few batches later, stores the valid chunks with one write and
counts them. While a batch is hashed elsewhere, this process decodes the next ones, answers
offers and stores the batch before: that overlap is the point.

Memory stays bounded: `put` waits when `QUEUE` chunks are waiting (the reader stops reading, so
TCP slows the upstream down) and at most `IN_FLIGHT` batches are being verified. An invalid chunk
is counted and drops the peer (`PeerConnection.broke_protocol`); the valid chunks around it are
still stored. `run` outlives the connection: after `close` it verifies and stores what had
arrived, so a valid chunk delivered just before the peer went (or was dropped) is not lost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from localstore import Chunk, InvalidChunk
from streamer.connection import PeerConnection
from streamer.errors import RemoteProtocolError
from streamer.messages import ChunkDelivery, GoodbyeCode
from syncer.stats import PeerStats
from syncer.verifier import MAX_BATCH, Verdicts

if TYPE_CHECKING:
    from syncer.downstream import Puller

__all__ = ["BATCH", "IN_FLIGHT", "QUEUE", "DeliveryIntake"]

QUEUE = 256
"""Delivered chunks waiting for a verifier batch, per peer."""
BATCH = min(128, MAX_BATCH)
"""Most chunks in one verifier batch: whatever has arrived, up to this."""
IN_FLIGHT = 2
"""Batches of one peer submitted and waiting to be stored, beyond the one being stored."""

_Arrival = tuple[Chunk, ChunkDelivery]
_Batch = tuple[list[ChunkDelivery], Verdicts]


class DeliveryIntake:
    """Verifies and stores the chunks one upstream delivers."""

    def __init__(self, puller: Puller, conn: PeerConnection, stats: PeerStats) -> None:
        self.puller = puller
        self.conn = conn
        self.peer = conn.overlay
        self.stats = stats
        self._arrived_send, self._arrived = trio.open_memory_channel[_Arrival](QUEUE)
        self._checking_send, self._checking = trio.open_memory_channel[_Batch](IN_FLIGHT - 1)

    async def put(self, chunk: Chunk, delivery: ChunkDelivery) -> None:
        """Queue a solicited delivery; waits only while the queue is full."""
        try:
            self._arrived_send.send_nowait((chunk, delivery))
        except trio.WouldBlock:
            await self._arrived_send.send((chunk, delivery))

    def close(self) -> None:
        """No more deliveries will come (the connection ended): `run` finishes what came."""
        self._arrived_send.close()

    async def run(self) -> None:
        """Verify and store deliveries until `close`d and drained (or cancelled)."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._submit)
            await self._store()

    async def _submit(self) -> None:
        verifier = self.puller.verifier
        async for first in self._arrived:
            arrivals = [first]
            while len(arrivals) < BATCH:
                try:
                    arrivals.append(self._arrived.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
            verdicts = await verifier.submit([chunk for chunk, _ in arrivals])
            await self._checking_send.send(([delivery for _, delivery in arrivals], verdicts))
        await self._checking_send.aclose()

    async def _store(self) -> None:
        async for deliveries, verdicts in self._checking:
            problems = await verdicts.wait()
            chunks = verdicts.chunks
            valid = [chunk for chunk, problem in zip(chunks, problems, strict=True) if problem is None]
            now = self.puller.clock()
            if valid:
                new = self.puller.store_chunks(valid, verified=True)
                self.stats.add("delivered", len(valid), now)
                if new < len(valid):
                    self.stats.add("repeat", len(valid) - new, now)
            if len(valid) < len(chunks):
                self._invalid(deliveries, chunks, problems, now)

    def _invalid(
        self, deliveries: list[ChunkDelivery], chunks: list[Chunk], problems: list[str | None], now: float
    ) -> None:
        bad = [(d, c, p) for d, c, p in zip(deliveries, chunks, problems, strict=True) if p is not None]
        self.stats.add("invalid", len(bad), now)
        tracker = self.puller.tracker
        for delivery, _, _ in bad:
            tracker.delivery_failed(self.peer, delivery.bin, delivery.live, delivery.start, delivery.index)
        _, chunk, problem = bad[0]
        exc = InvalidChunk(chunk.address, problem or "")
        self.conn.broke_protocol(
            RemoteProtocolError(f"invalid chunk delivered: {exc}", GoodbyeCode.INVALID_CHUNK)
        )
