"""Repair: a chunk the store dropped as damaged is fetched again from the peers that hold it.

Pull sync does not bring such a chunk back by itself: the range it arrived in is recorded as
synced from its upstream. So the node asks its connected peers directly, the closest to the chunk
first (they are the ones responsible for it, and it was in this node's neighbourhood), each for
its own copy only (hop limit 0), and stores the first valid answer through the intake. A chunk no
peer has is given up after every peer was asked (logged, counted); a later upload or sync may
still bring it. At most `MAX_PENDING` chunks wait, `CONCURRENCY` are fetched at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import trio

from chunks import Chunk, InvalidChunk
from streamer.requests import RetrieveFailed

__all__ = ["CONCURRENCY", "MAX_PENDING", "Repair", "RepairCounters", "RepairPeer"]

log = logging.getLogger(__name__)

MAX_PENDING = 1024
CONCURRENCY = 4


@dataclass(frozen=True)
class RepairCounters:
    """What became of the chunks the store dropped as damaged."""

    repaired: int  # fetched again from a peer and stored
    failed: int  # given up: no connected peer had them


class RepairPeer(Protocol):
    @property
    def overlay(self) -> bytes: ...

    async def retrieve(self, address: bytes, *, hop_limit: int, timeout: float | None = None) -> bytes: ...


class Repair:
    """Fetches dropped chunks again; `dropped` is the store's `on_drop` listener."""

    def __init__(
        self,
        peers: Callable[[], Iterable[RepairPeer]],
        store: Callable[[Chunk], object],
        *,
        timeout: float = 10.0,
    ) -> None:
        self._peers = peers
        self._store = store
        self.timeout = timeout
        self._queue_in, self._queue = trio.open_memory_channel[bytes](MAX_PENDING)
        self._pending: set[bytes] = set()
        self.repaired = 0
        self.failed = 0
        self.overflow = 0

    def counters(self) -> RepairCounters:
        return RepairCounters(repaired=self.repaired, failed=self.failed)

    def dropped(self, address: bytes) -> None:
        """The store dropped this chunk (damaged): fetch it again soon."""
        if address in self._pending:
            return
        try:
            self._queue_in.send_nowait(address)
        except trio.WouldBlock:
            self.overflow += 1  # more damage than we can chase at once: sync may still bring it
            return
        self._pending.add(address)

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            for _ in range(CONCURRENCY):
                nursery.start_soon(self._worker)

    async def _worker(self) -> None:
        async for address in self._queue:
            try:
                await self._fetch(address)
            finally:
                self._pending.discard(address)

    async def _fetch(self, address: bytes) -> None:
        target = int.from_bytes(address, "big")
        peers = sorted(self._peers(), key=lambda p: int.from_bytes(p.overlay, "big") ^ target)
        for peer in peers:
            try:
                data = await peer.retrieve(address, hop_limit=0, timeout=self.timeout)
                self._store(Chunk(address, data))  # verified by the intake
            except (RetrieveFailed, InvalidChunk) as exc:
                log.debug("repair of %s from %s: %s", address.hex()[:12], peer.overlay.hex()[:12], exc)
                continue
            self.repaired += 1
            log.info("damaged chunk %s fetched again from %s", address.hex(), peer.overlay.hex()[:12])
            return
        self.failed += 1
        log.warning("damaged chunk %s: no connected peer holds it (%d asked)", address.hex(), len(peers))
