"""Live propagation as a replica's feed follower: `live_follow(node.live)`.

Duck-typed on the live service's ``follow(owner, topic, start=, mode=)`` (an async context
manager giving a follower whose ``events`` yield, among others, events with an ``update``: a
checked feed update with ``index`` and ``soc``), so that this package does not import it. A
``full`` follower never gives up a missing update; the replica keeps each update it shows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

from swarm.spaces.sources import FeedFollow

__all__ = ["LiveFollowing", "live_follow"]


class LiveFollowing(Protocol):
    def follow(
        self, owner: bytes, topic: bytes, *, start: int | None = None, mode: str = "light"
    ) -> AbstractAsyncContextManager[Any]: ...


def live_follow(live: LiveFollowing) -> FeedFollow:
    """A `FeedFollow` over the node's live service."""

    @asynccontextmanager
    async def follow(
        owner: bytes, topic: bytes, start: int
    ) -> AsyncIterator[AsyncIterator[tuple[int, bytes]]]:
        async with live.follow(owner, topic, start=start, mode="full") as follower:

            async def updates() -> AsyncIterator[tuple[int, bytes]]:
                async for event in follower.events:
                    update = getattr(event, "update", None)
                    if update is not None:
                        yield update.index, update.soc.data

            yield updates()

    return follow
