"""Live propagation at a node: the trio shell around the relay, interest, followers and advisories.

The node hands it narrow functions (retrieve a chunk, look one up locally, store and cache
chunks, persist the publisher's frame) and tells it about peers and their live messages:

- `on_message` (from the peer's dispatch, never blocks): a peer's interest, or a pushed feed
  update or topic message, judged by `Relay` (new, repeat, not subscribed, invalid); a new one is
  delivered to local followers and queued for every other peer that wants it (`PeerLink`).
- `follow` / `subscribe`: a local consumer (`swarm feed follow`, `swarm topic subscribe`, the
  HTTP streams) of a feed or topic, announced to peers as interest while it lasts.
- `publish_feed_update` / `publish_topic`: messages published at this node.

Every loss found is counted in the `LossTable` and reported through `AdvisoryThrottle` to the
local consumers and the log (the first at once, then at most one a second).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import trio

from localstore.chunk import Chunk
from localstore.ethkey import Secp256k1Key
from localstore.feeds import update_address
from localstore.soc import MIN_SOC_DATA_SIZE
from streamer.errors import RemoteProtocolError
from streamer.messages import FeedPush, GoodbyeCode, LiveInterest, StreamKind, TopicPush
from swarm.live.accounting import AdvisoryListener, LossAccounting
from swarm.live.config import LiveConfig
from swarm.live.events import TopicMessage
from swarm.live.feed_order import MODES
from swarm.live.follower import FeedFollower
from swarm.live.interest import InterestTable
from swarm.live.links import LivePeer, PeerLink
from swarm.live.loss import LOCAL, LossRow
from swarm.live.messages import InvalidLiveMessage, Stream, make_topic_push
from swarm.live.receiver import TopicReceiver
from swarm.live.relay import Judgement, Outcome, Relay, detector_bytes
from swarm.live.seqno import PublisherSequence
from swarm.live.subscription import TopicSubscription
from swarm.live.window import WindowStatistics
from swarm.logbudget import LogBudget
from swarm.retrieval import ChunkUnavailable

__all__ = ["Equivocation", "LiveService", "LiveStatistics", "Published"]

log = logging.getLogger(__name__)

UPLOAD_LOOKAHEAD = 16
"""Indices after the latest seen at which an uploaded chunk is recognised as a feed's update."""
INVALID_BUDGET = 64
INVALID_WINDOW = 10.0
"""A peer may push at most INVALID_BUDGET invalid messages per INVALID_WINDOW seconds."""


class Equivocation(Exception):
    """A different update is already known at this index of the feed."""


@dataclass(frozen=True)
class Published:
    """What publishing at this node did: ``outcome`` "new" (pushed to ``pushed`` peers) or
    "repeat" (already published: nothing sent), and the topic message's numbers."""

    outcome: str
    pushed: int
    seq: int | None = None
    chain: int | None = None


@dataclass(frozen=True)
class LiveStatistics:
    loss: tuple[LossRow, ...]
    received: int  # messages pushed to this node (and published here), repeats included
    accepted: int  # of which new
    bytes_received: int
    bytes_accepted: int
    forwarded: int  # messages queued to peers
    dropped: int  # messages not queued: the peer's queue was full
    published: int
    followers: int
    subscribers: int
    advisories: int
    detectors: WindowStatistics
    receivers: WindowStatistics
    interest: dict[str, int]


class LiveService:
    """Live propagation at one node."""

    def __init__(
        self,
        *,
        key: Secp256k1Key,
        retrieve: Callable[[bytes], Awaitable[Chunk]],
        lookup: Callable[[bytes], bytes | None],
        evidence: Callable[[bytes, bytes, bytes], object] = lambda address, first, second: None,
        store: Callable[[list[Chunk]], object],
        remember: Callable[[Chunk], None],
        load_frame: Callable[[], int],
        save_frame: Callable[[int], None],
        config: LiveConfig | None = None,
        wall: Callable[[], float] = time.time,
        wall_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.key = key
        self.config = config = config or LiveConfig()
        self._retrieve = retrieve
        self._store = store
        self._remember = remember
        self._save_frame = save_frame
        self._wall = wall
        self._wall_ns = wall_ns
        now = wall()
        self.interest = InterestTable()
        self.accounting = LossAccounting(self._consumers, interval=config.advisory_interval, wall=wall)
        self.loss = self.accounting.table
        self.relay = Relay(
            self.interest,
            self.loss,
            window=config.window(detector_bytes, now),
            lookup=lookup,
            evidence=evidence,
            max_gaps=config.max_gaps,
            skew=config.skew,
        )
        self.receiver = TopicReceiver(window=config.window(lambda state: 208, now), skew=config.skew)
        self._saved_frame = load_frame()
        self.publisher = PublisherSequence(min_frame=self._saved_frame + 1)
        self._links: dict[bytes, PeerLink] = {}
        self._followers: dict[Stream, set[FeedFollower]] = {}
        self._scopes: dict[FeedFollower, trio.CancelScope] = {}
        self._subscribers: dict[Stream, set[TopicSubscription]] = {}
        self._nursery: trio.Nursery | None = None
        self._invalid_logged = LogBudget()
        self._invalid: dict[bytes, tuple[float, int]] = {}  # peer -> (window start, invalid in it)
        self.forwarded = 0
        self.dropped = 0
        self.published = 0

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the followers and the timers (window rotation, advisories) until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            while True:
                await trio.sleep(self.config.tick)
                self._tick()

    def _tick(self) -> None:
        now = self._wall()
        self.relay.rotate(now)
        self.receiver.states.rotate_if_due(now)
        self.accounting.flush(now)
        gaps = sum(f.open_gaps for followers in self._followers.values() for f in followers)
        self.loss.set(LOCAL, "gaps_open", gaps, now)

    # -- peers ---------------------------------------------------------------------------------

    def peer_connected(self, peer: LivePeer) -> None:
        self.interest.add_peer(peer.overlay)
        link = self._links[peer.overlay] = PeerLink(peer, self.interest, self.config.link_capacity)
        peer.conn.start_soon(link.run)
        link.interest_changed()

    def peer_disconnected(self, peer: LivePeer) -> None:
        self._invalid.pop(peer.overlay, None)
        if self._links.get(peer.overlay) is not None and self._links[peer.overlay].peer is peer:
            del self._links[peer.overlay]
            self.interest.remove_peer(peer.overlay)
            self._interest_changed()

    def _interest_changed(self) -> None:
        for link in self._links.values():
            if self.interest.pending(link.overlay):
                link.interest_changed()

    def on_message(self, peer: LivePeer, msg: LiveInterest | FeedPush | TopicPush) -> None:
        """A live message from a peer; never blocks. A forged or malformed message is dropped by
        itself; only a flood of them (over INVALID_BUDGET in INVALID_WINDOW seconds: each costs a
        signature check) drops the peer, as OVERLOADED."""
        if isinstance(msg, LiveInterest):
            self.interest.announced(peer.overlay, msg.entries)
            self._interest_changed()
            return
        judgement, _ = self._receive(msg, peer.overlay)
        if judgement.outcome is Outcome.INVALID:
            self._count_invalid(peer.overlay)

    def _count_invalid(self, peer: bytes) -> None:
        now = trio.current_time()
        start, count = self._invalid.get(peer, (now, 0))
        if now - start >= INVALID_WINDOW:
            start, count = now, 0
        self._invalid[peer] = (start, count + 1)
        if count + 1 > INVALID_BUDGET:
            raise RemoteProtocolError(
                f"live flood: {count + 1} invalid messages in {INVALID_WINDOW:g}s", GoodbyeCode.OVERLOADED
            )

    # -- the relay path ------------------------------------------------------------------------

    def _receive(self, msg: FeedPush | TopicPush, peer: bytes | None) -> tuple[Judgement, int]:
        now = self._wall()
        source = peer.hex() if peer is not None else LOCAL
        judgement = self.relay.judge(msg, peer, source, now)
        if judgement.outcome in (Outcome.INVALID, Outcome.EQUIVOCATION) and self._invalid_logged.allow():
            log.warning(
                "dropped a live message from %s: %s%s",
                source[:12],
                judgement.reason,
                self._invalid_logged.note(),
            )
        if judgement.outcome is not Outcome.NEW:
            return judgement, 0
        if judgement.update is not None:
            self._remember(Chunk.from_soc(judgement.update.soc))
            for follower in self._followers.get(judgement.stream, ()):
                follower.deliver(judgement.update)
        elif isinstance(msg, TopicPush):
            self._deliver_topic(msg, judgement.stream, source, now)
        return judgement, self._forward(msg, judgement.stream, peer)

    def _forward(self, msg: FeedPush | TopicPush, stream: Stream, peer: bytes | None) -> int:
        queued = 0
        for target in self.interest.targets(stream, peer):
            link = self._links.get(target)
            if link is not None and link.push(msg):
                queued += 1
            else:
                self.dropped += 1
        self.forwarded += queued
        return queued

    def _deliver_topic(self, msg: TopicPush, stream: Stream, source: str, now: float) -> None:
        subscribers = self._subscribers.get(stream)
        if not subscribers:
            return
        verdict = self.receiver.classify(msg, now)
        self.accounting.topic_verdict(source, stream, msg, verdict, now)
        if verdict.delivered:
            event = TopicMessage(msg, verdict, now)
            for subscriber in subscribers:
                subscriber.deliver(event)

    def _consumers(self) -> list[AdvisoryListener]:
        """Every local follower and subscriber: they are told of every loss advisory."""
        found: list[AdvisoryListener] = [f for followers in self._followers.values() for f in followers]
        found += [s for subscribers in self._subscribers.values() for s in subscribers]
        return found

    # -- local consumers -----------------------------------------------------------------------

    async def fetch(self, address: bytes) -> bytes | None:
        """The data of the chunk at ``address`` from the swarm, None if it cannot be had."""
        try:
            return (await self._retrieve(address)).data
        except ChunkUnavailable:
            return None

    @asynccontextmanager
    async def follow(
        self, owner: bytes, topic: bytes, *, start: int | None = None, mode: str = "light"
    ) -> AsyncIterator[FeedFollower]:
        """A follower of the feed ``(owner, topic)`` for as long as the context lasts (read its
        ``events``). Safe to use inside an async generator: the follower runs in the service."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if self._nursery is None:
            raise RuntimeError("the live service is not running")
        stream = Stream.feed(owner, topic)
        follower = FeedFollower(
            stream,
            start=start,
            mode=mode,
            fetch=self.fetch,
            hooks=self.accounting,
            config=self.config.follower,
            wall=self._wall,
        )
        scope = trio.CancelScope()
        self._followers.setdefault(stream, set()).add(follower)
        self._scopes[follower] = scope
        self.interest.follow(stream)
        self._interest_changed()
        try:
            await self._nursery.start(self._run_follower, follower, scope)
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
            stream, self.config.subscriber_backlog, self.accounting.dropped_for_slow_consumer
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

    # -- publishing ----------------------------------------------------------------------------

    def publish_feed_update(self, owner: bytes, topic: bytes, index: int, data: bytes) -> Published:
        """Store update ``index`` of ``(owner, topic)`` (its SOC data, signed by the owner) and push
        it to the peers that want it. InvalidLiveMessage if it is not a valid update,
        Equivocation if another update is known at that index."""
        judgement, pushed = self._receive(FeedPush(owner, topic, index, data), None)
        if judgement.outcome is Outcome.INVALID:
            raise InvalidLiveMessage(judgement.reason)
        if judgement.outcome is Outcome.EQUIVOCATION:
            raise Equivocation(judgement.reason)
        if judgement.update is not None:
            self._store([Chunk.from_soc(judgement.update.soc)])
            self.published += 1
        return Published(judgement.outcome.value, pushed)

    def publish_topic(self, topic: bytes, payload: bytes) -> Published:
        """Sign ``payload`` on ``topic`` with this node's key (eth.key), number it and push it."""
        now_ns = self._wall_ns()
        seq, chain = self.publisher.next(topic, now_ns)
        if self.publisher.highest_frame > self._saved_frame:
            self._saved_frame = self.publisher.highest_frame
            self._save_frame(self._saved_frame)
        msg = make_topic_push(self.key, topic, seq, chain, now_ns, payload)
        judgement, pushed = self._receive(msg, None)
        self.published += 1
        return Published(judgement.outcome.value, pushed, seq, chain)

    def uploaded(self, chunks: list[Chunk]) -> int:
        """Chunks uploaded at this node (Bee's ``POST /soc``, ``POST /chunks``): those that are
        updates of a feed someone follows are published live; returns how many.

        A single-owner chunk does not say which feed and index it is, so for each feed that is
        followed here or relayed, the UPLOAD_LOOKAHEAD indices after the latest this node has seen
        (the first ones when it has seen none) are compared with the uploaded addresses: the writer
        writing its next update, as bee-js and `swarm feed update` do, is caught; an update far
        ahead is not pushed (followers find it with their look for newer updates).
        """
        feeds = [stream for stream in self.interest.wanted() if stream.kind is StreamKind.FEED]
        uploaded = {chunk.address: chunk for chunk in chunks if len(chunk.data) >= MIN_SOC_DATA_SIZE}
        if not feeds or not uploaded:
            return 0
        published = 0
        for stream in feeds:
            detector = self.relay.detectors.get(stream)
            latest = detector.latest if detector is not None else None
            start = 0 if latest is None else latest + 1
            for index in range(start, start + UPLOAD_LOOKAHEAD):
                chunk = uploaded.get(update_address(stream.owner, stream.topic, index))
                if chunk is None:
                    continue
                try:
                    self.publish_feed_update(stream.owner, stream.topic, index, chunk.data)
                except (InvalidLiveMessage, Equivocation) as exc:
                    log.info("%s: uploaded update %d not published live: %s", stream.name, index, exc)
                else:
                    published += 1
        return published

    # -- reporting -----------------------------------------------------------------------------

    def statistics(self) -> LiveStatistics:
        relay = self.relay
        return LiveStatistics(
            loss=self.loss.rows(),
            received=relay.received,
            accepted=relay.accepted,
            bytes_received=relay.bytes_received,
            bytes_accepted=relay.bytes_accepted,
            forwarded=self.forwarded,
            dropped=self.dropped,
            published=self.published,
            followers=sum(len(f) for f in self._followers.values()),
            subscribers=sum(len(s) for s in self._subscribers.values()),
            advisories=self.accounting.advisories.sent,
            detectors=relay.detectors.statistics(),
            receivers=self.receiver.states.statistics(),
            interest=self.interest.statistics(),
        )
