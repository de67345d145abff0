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

The local consumers themselves are kept in `swarm.live.consumers`, uploaded chunks are recognised
as feed updates in `swarm.live.uploads`, and what this hands back is in `swarm.live.results`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from functools import partial

import trio

from chunks.chunk import Chunk
from chunks.ethkey import Secp256k1Key
from streamer.dispatch import Handlers
from streamer.messages import FeedPush, LiveHave, LiveInterest, LivePause, StreamKind, TopicPush
from swarm.live.accounting import LossAccounting
from swarm.live.config import LiveConfig
from swarm.live.consumers import LocalConsumers
from swarm.live.flood import FloodGuard
from swarm.live.follower import FeedFollower
from swarm.live.interest import InterestTable
from swarm.live.links import LivePeer, PeerLink
from swarm.live.loss import LOCAL
from swarm.live.messages import InvalidLiveMessage, Stream, make_topic_push
from swarm.live.paths import PushPaths
from swarm.live.pruning import Pruning
from swarm.live.ratelimit import LiveRates
from swarm.live.receiver import TopicReceiver
from swarm.live.relay import Judgement, Outcome, Relay, detector_bytes
from swarm.live.results import Equivocation, LiveStatistics, Published
from swarm.live.seqno import PublisherSequence
from swarm.live.subscription import TopicSubscription
from swarm.live.uploads import feed_updates_among
from swarm.net.logbudget import LogBudget
from swarm.net.retrieval import ChunkUnavailable

__all__ = ["LiveService"]

log = logging.getLogger(__name__)


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
        self.accounting = LossAccounting(
            lambda: self.consumers.listeners(), interval=config.advisory_interval, wall=wall
        )
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
        self.paths = PushPaths(Pruning(eager=config.eager), self._links, self.relay.seen, wall)
        self.consumers = LocalConsumers(
            interest=self.interest,
            interest_changed=self._interest_changed,
            fetch=self.fetch,
            accounting=self.accounting,
            receiver=self.receiver,
            config=config,
            wall=wall,
        )
        self._invalid_logged = LogBudget()
        self._throttle_logged = LogBudget()
        self._flood = FloodGuard()
        self._rates = LiveRates(config.push_limits, config.control_limits)
        self.forwarded = 0
        self.dropped = 0
        self.published = 0

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the followers and the timers (window rotation, advisories) until cancelled."""
        async with trio.open_nursery() as nursery:
            self.consumers.nursery = nursery
            task_status.started()
            while True:
                await trio.sleep(self.config.tick)
                self._tick()

    def _tick(self) -> None:
        now = self._wall()
        self.relay.rotate(now)
        self.receiver.states.rotate_if_due(now)
        self.accounting.flush(now)
        self.paths.tick(now)
        self.loss.set(LOCAL, "gaps_open", self.consumers.open_gaps(), now)

    # -- peers ---------------------------------------------------------------------------------

    def peer_connected(self, peer: LivePeer) -> None:
        self.interest.add_peer(peer.overlay)
        link = self._links[peer.overlay] = PeerLink(
            peer, self.interest, self.config.link_capacity, interest_interval=self.config.interest_interval
        )
        peer.conn.start_soon(link.run)
        link.interest_changed()

    def peer_disconnected(self, peer: LivePeer) -> None:
        self._flood.forget(peer.overlay)
        self._rates.forget(peer.overlay)
        if self._links.get(peer.overlay) is not None and self._links[peer.overlay].peer is peer:
            del self._links[peer.overlay]
            self.interest.remove_peer(peer.overlay)
            self._interest_changed()
            self.paths.peer_gone(peer.overlay)

    def _interest_changed(self) -> None:
        for link in self._links.values():
            if self.interest.pending(link.overlay):
                link.interest_changed()

    def handlers(self, peer: LivePeer) -> Handlers:
        """What live propagation takes from ``peer``: interest, pushes, and the pruning words."""
        live = (LiveInterest, FeedPush, TopicPush, LivePause, LiveHave)
        return dict.fromkeys(live, partial(self.on_message, peer))

    def on_message(
        self, peer: LivePeer, msg: LiveInterest | LivePause | LiveHave | FeedPush | TopicPush
    ) -> None:
        """A live message from a peer; never blocks. A forged or malformed message is dropped by
        itself; only a flood of them (`swarm.live.flood`) drops the peer, as OVERLOADED. A message
        over the peer's rate is dropped (throttled), and a peer that keeps sending over it is
        dropped as OVERLOADED (`swarm.live.ratelimit`)."""
        now = trio.current_time()
        if not self._rates.allow(peer.overlay, msg, now):
            if self._throttle_logged.allow():
                log.warning(
                    "throttled live traffic from %s: over its rate%s",
                    peer.overlay.hex()[:12],
                    self._throttle_logged.note(),
                )
            return
        if isinstance(msg, LiveInterest):
            self.interest.announced(peer.overlay, msg.entries)
            self._interest_changed()
            return
        if isinstance(msg, LivePause | LiveHave):
            self.paths.on_word(peer.overlay, msg)
            return
        judgement, _ = self._receive(msg, peer.overlay)
        if judgement.outcome is Outcome.INVALID:
            self._flood.invalid(peer.overlay, now)

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
        if peer is not None and judgement.outcome in (Outcome.NEW, Outcome.REPEAT):
            self.paths.judged(msg, peer, judgement.outcome is Outcome.NEW)
        if judgement.outcome is not Outcome.NEW:
            return judgement, 0
        if judgement.update is not None:
            self._remember(Chunk.from_soc(judgement.update.soc))
            self.consumers.deliver_update(judgement.stream, judgement.update)
        elif isinstance(msg, TopicPush):
            self.consumers.deliver_topic(msg, judgement.stream, source, now)
        return judgement, self._forward(msg, judgement.stream, peer)

    def _forward(self, msg: FeedPush | TopicPush, stream: Stream, peer: bytes | None) -> int:
        queued = 0
        for target in self.paths.push_targets(msg, self.interest.targets(stream, peer)):
            link = self._links.get(target)
            if link is not None and link.push(msg):
                queued += 1
            else:
                self.dropped += 1
        self.forwarded += queued
        return queued

    # -- local consumers -----------------------------------------------------------------------

    async def fetch(self, address: bytes) -> bytes | None:
        """The data of the chunk at ``address`` from the swarm, None if it cannot be had."""
        try:
            return (await self._retrieve(address)).data
        except ChunkUnavailable:
            return None

    def follow(
        self, owner: bytes, topic: bytes, *, start: int | None = None, mode: str = "light"
    ) -> AbstractAsyncContextManager[FeedFollower]:
        """A follower of the feed ``(owner, topic)`` while the context lasts (`LocalConsumers.follow`)."""
        return self.consumers.follow(owner, topic, start=start, mode=mode)

    def subscribe(self, topic: bytes) -> AbstractAsyncContextManager[TopicSubscription]:
        """A subscription to ``topic`` while the context lasts (`LocalConsumers.subscribe`)."""
        return self.consumers.subscribe(topic)

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
        the next updates of a feed followed or relayed here (`swarm.live.uploads`) are published
        live; returns how many."""
        feeds = [stream for stream in self.interest.wanted() if stream.kind is StreamKind.FEED]
        if not feeds:
            return 0
        published = 0
        for stream, index, chunk in feed_updates_among(chunks, feeds, self._latest_seen):
            try:
                self.publish_feed_update(stream.owner, stream.topic, index, chunk.data)
            except (InvalidLiveMessage, Equivocation) as exc:
                log.info("%s: uploaded update %d not published live: %s", stream.name, index, exc)
            else:
                published += 1
        return published

    def _latest_seen(self, stream: Stream) -> int | None:
        detector = self.relay.detectors.get(stream)
        return detector.latest if detector is not None else None

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
            pruned=self.paths.pruned,
            dropped=self.dropped,
            published=self.published,
            followers=self.consumers.followers,
            subscribers=self.consumers.subscribers,
            advisories=self.accounting.advisories.sent,
            detectors=relay.detectors.statistics(),
            receivers=self.receiver.states.statistics(),
            interest=self.interest.statistics(),
            pruning=self.paths.statistics(),
            throttled=self._rates.throttled,
            streams=tuple(relay.streams.rows()),
        )
