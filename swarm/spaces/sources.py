"""Where a space replica's chunks come from besides its own polling of the local store: the
swarm (asked now and then for the next update a feed lacks) and live propagation (updates
pushed as they are written). The replica (`swarm.spaces.replica`) runs one of each per feed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

import trio

from chunks.chunk import Chunk
from chunks.feeds import update_address
from chunks.soc import MIN_SOC_DATA_SIZE

__all__ = ["ChunkSource", "FeedFollow", "follow_feed", "probe_feed", "stored_payload"]

log = logging.getLogger(__name__)


def stored_payload(data: bytes) -> bytes | None:
    """The wrapped payload of a single-owner chunk from the node's store or retrieval, both of
    which verified it (signature, address) before taking it: not checked again (that costs a
    BMT hash and a signature recovery per message). None if it cannot be a SOC."""
    if len(data) < MIN_SOC_DATA_SIZE:
        return None
    span = int.from_bytes(data[MIN_SOC_DATA_SIZE - 8 : MIN_SOC_DATA_SIZE], "little")
    payload = data[MIN_SOC_DATA_SIZE:]
    return payload if span == len(payload) else None


class ChunkSource(Protocol):
    """Where a replica gets chunks: the node's store, the swarm, and a way to keep what it fetched."""

    def local(self, address: bytes) -> bytes | None: ...

    async def remote(self, address: bytes) -> bytes | None: ...

    def keep(self, chunk: Chunk) -> None: ...


class FeedFollow(Protocol):
    """Updates of the feed ``(owner, topic)`` from index ``start`` on, ``(index, SOC data)``, as
    they are pushed to the node (live propagation, issue 14): a replica given one learns of new
    messages at once rather than at its next look."""

    def __call__(
        self, owner: bytes, topic: bytes, start: int
    ) -> AbstractAsyncContextManager[AsyncIterator[tuple[int, bytes]]]: ...


async def probe_feed(
    source: ChunkSource,
    address_of: Callable[[], bytes | None],
    every: float,
    found: Callable[[], None],
    what: str,
) -> None:
    """Every ``every`` s, ask the swarm for the next update a feed lacks (``address_of``; None:
    nothing wanted now), keep it and call ``found``. ``what`` names the feed in the log."""
    while True:
        await trio.sleep(every)
        address = address_of()
        if address is None or source.local(address) is not None:
            continue
        data = await source.remote(address)
        if data is not None:
            source.keep(Chunk(address, data))
            log.debug("%s: fetched %s from the swarm", what, address.hex())
            found()


async def follow_feed(
    follow: FeedFollow,
    source: ChunkSource,
    owner: bytes,
    topic: bytes,
    start: Callable[[], int],
    retry_after: float,
    arrived: Callable[[], None],
) -> None:
    """Keep what is pushed of a feed from the first update lacking (``start()``) and call
    ``arrived``; the replica's feed reader takes it from the store. Followed again
    ``retry_after`` s after a failure: a failing follower must not stop the replica."""
    while True:
        try:
            async with follow(owner, topic, start()) as updates:
                async for index, data in updates:
                    address = update_address(owner, topic, index)
                    if source.local(address) is None:  # the live service may have stored it
                        source.keep(Chunk(address, data))
                    arrived()
        except Exception as exc:
            log.warning("following feed %s of %s failed: %r", topic.hex(), owner.hex(), exc)
        await trio.sleep(retry_after)
