"""The local consumers of live streams at a node: feed followers (`swarm feed follow`, the
HTTP feed stream, a space's member feeds) and topic subscribers (`swarm topic subscribe`).

Each is announced as interest (`InterestTable.follow`) while it lasts, so peers push this node
what it wants; new messages the relay accepts are handed to them here, and every loss advisory
reaches all of them (`listeners`). A follower runs as a task in the live service's nursery, so
``follow`` is safe inside an async generator; a follower's bug is logged, never fatal.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import trio

from chunks.feeds import FeedUpdate
from streamer.messages import TopicPush
from swarm.live.accounting import AdvisoryListener, LossAccounting
from swarm.live.config import LiveConfig
from swarm.live.events import TopicMessage
from swarm.live.feed_order import MODES
from swarm.live.follower import FeedFollower
from swarm.live.interest import InterestTable
from swarm.live.messages import Stream
from swarm.live.receiver import TopicReceiver
from swarm.live.subscription import TopicSubscription

__all__ = ["LocalConsumers"]

log = logging.getLogger(__name__)


class LocalConsumers:
    """The followers and subscribers at one node; ``nursery`` (set by the running service) runs
    the followers. ``interest_changed`` is called whenever what this node wants changes."""

    def __init__(
        self,
        *,
        interest: InterestTable,
        interest_changed: Callable[[], None],
        fetch: Callable[[bytes], Awaitable[bytes | None]],
        accounting: LossAccounting,
        receiver: TopicReceiver,
        config: LiveConfig,
        wall: Callable[[], float],
    ) -> None:
        self.interest = interest
        self._interest_changed = interest_changed
        self._fetch = fetch
        self._accounting = accounting
        self._receiver = receiver
        self._config = config
        self._wall = wall
        self.nursery: trio.Nursery | None = None
        self._followers: dict[Stream, set[FeedFollower]] = {}
        self._scopes: dict[FeedFollower, trio.CancelScope] = {}
        self._subscribers: dict[Stream, set[TopicSubscription]] = {}

    @property
    def followers(self) -> int:
        return sum(len(f) for f in self._followers.values())

    @property
    def subscribers(self) -> int:
        return sum(len(s) for s in self._subscribers.values())

    def open_gaps(self) -> int:
        """Updates the followers wait for (the ``gaps_open`` loss counter)."""
        return sum(f.open_gaps for followers in self._followers.values() for f in followers)

    def listeners(self) -> list[AdvisoryListener]:
        """Every local follower and subscriber: they are told of every loss advisory."""
        found: list[AdvisoryListener] = [f for followers in self._followers.values() for f in followers]
        found += [s for subscribers in self._subscribers.values() for s in subscribers]
        return found

    # -- delivery ------------------------------------------------------------------------------

    def deliver_update(self, stream: Stream, update: FeedUpdate) -> None:
        """A new update of the feed ``stream``, to its followers."""
        for follower in self._followers.get(stream, ()):
            follower.deliver(update)

    def deliver_topic(self, msg: TopicPush, stream: Stream, source: str, now: float) -> None:
        """A new topic message from ``source``: numbered (losses counted) and, unless a repeat
        or out of order, handed to the topic's subscribers."""
        subscribers = self._subscribers.get(stream)
        if not subscribers:
            return
        verdict = self._receiver.classify(msg, now)
        self._accounting.topic_verdict(source, stream, msg, verdict, now)
        if verdict.delivered:
            event = TopicMessage(msg, verdict, now)
            for subscriber in subscribers:
                subscriber.deliver(event)

    # -- consumers coming and going ------------------------------------------------------------

    @asynccontextmanager
    async def follow(
        self, owner: bytes, topic: bytes, *, start: int | None = None, mode: str = "light"
    ) -> AsyncIterator[FeedFollower]:
        """A follower of the feed ``(owner, topic)`` for as long as the context lasts (read its
        ``events``). Safe to use inside an async generator: the follower runs in the service."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if self.nursery is None:
            raise RuntimeError("the live service is not running")
        stream = Stream.feed(owner, topic)
        follower = FeedFollower(
            stream,
            start=start,
            mode=mode,
            fetch=self._fetch,
            hooks=self._accounting,
            config=self._config.follower,
            wall=self._wall,
        )
        scope = trio.CancelScope()
        self._followers.setdefault(stream, set()).add(follower)
        self._scopes[follower] = scope
        self.interest.follow(stream)
        self._interest_changed()
        try:
            await self.nursery.start(self._run_follower, follower, scope)
            yield follower
        finally:
            scope.cancel()
            self._scopes.pop(follower, None)
            self._followers[stream].discard(follower)
            if not self._followers[stream]:
                del self._followers[stream]
            self.interest.unfollow(stream)
            self._interest_changed()

    async def _run_follower(
        self, follower: FeedFollower, scope: trio.CancelScope, *, task_status: trio.TaskStatus[None]
    ) -> None:
        with scope:
            try:
                await follower.run(task_status=task_status)
            except Exception:  # a bug in one follower must not take the node down
                log.exception("%s: the follower failed", follower.stream.name)
            finally:
                follower.close()

    @asynccontextmanager
    async def subscribe(self, topic: bytes) -> AsyncIterator[TopicSubscription]:
        """A subscription to ``topic`` (every publisher) for as long as the context lasts."""
        stream = Stream.topic_of(topic)
        subscription = TopicSubscription(
            stream, self._config.subscriber_backlog, self._accounting.dropped_for_slow_consumer
        )
        self._subscribers.setdefault(stream, set()).add(subscription)
        self.interest.follow(stream)
        self._interest_changed()
        try:
            yield subscription
        finally:
            subscription.close()
            self._subscribers[stream].discard(subscription)
            if not self._subscribers[stream]:
                del self._subscribers[stream]
            self.interest.unfollow(stream)
            self._interest_changed()
