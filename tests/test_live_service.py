"""Live propagation between in-process nodes over loopback TCP: order, gaps, loss, topics, forgeries.

Each test builds a small topology with static peering (no gossip) so that the paths are known,
and short gap-filling timings so that a gap is noticed and filled within a second or two.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from chunks.chunk import Chunk
from chunks.ethkey import Secp256k1Key
from chunks.feeds import make_update_v2
from streamer.errors import RemoteProtocolError
from streamer.messages import FeedPush, TopicPush
from swarm.live.config import LiveConfig
from swarm.live.events import AdvisoryEvent, FollowStarted, LiveEvent, LossNotice, TopicMessage, UpdateShown
from swarm.live.flood import INVALID_BUDGET
from swarm.live.follower import FeedFollower, FollowerConfig
from swarm.live.loss import LOCAL
from swarm.live.messages import Stream, make_topic_push
from swarm.live.seqno import PublisherSequence, Status
from swarm.node import Node
from swarm.testing import node_config, start_node, wait_for

TOPIC = b"\x42" * 32
FAST = LiveConfig(
    follower=FollowerConfig(gap_wait=0.3, gap_retry=0.3, gap_tries=3, probe_interval=1.0, lookup_timeout=1.0)
)


@functools.cache
def owner_key() -> Secp256k1Key:
    return Secp256k1Key(b"\x05" * 32)


def update(index: int, text: str | None = None) -> bytes:
    return make_update_v2(owner_key(), TOPIC, index, (text or f"update {index}").encode()).data


@asynccontextmanager
async def line(
    tmp_path: Path, count: int, *, extra_links: tuple[tuple[int, int], ...] = (), live: LiveConfig = FAST
) -> AsyncIterator[list[Node]]:
    """Nodes 0 - 1 - ... - count-1 in a line (plus ``extra_links``), no gossip."""
    async with trio.open_nursery() as nursery:
        nodes: list[Node] = []
        for i in range(count):
            peers = [("127.0.0.1", nodes[i - 1].p2p_port)] if i else []
            peers += [("127.0.0.1", nodes[a].p2p_port) for a, b in extra_links if b == i]
            config = node_config(tmp_path / f"n{i}", peers=peers, gossip=False, api_port=None, live=live)
            nodes.append(await start_node(nursery, config))
        expected = [1 if i in (0, count - 1) else 2 for i in range(count)]
        for a, b in extra_links:
            expected[a] += 1
            expected[b] += 1
        await wait_for(lambda: [len(n.peers) for n in nodes] == expected, timeout=20)
        yield nodes
        nursery.cancel_scope.cancel()


async def interest_reached(node: Node, stream: Stream) -> None:
    await wait_for(lambda: node.live.interest.distance(stream) is not None, timeout=10)


async def next_update(follower: FeedFollower) -> UpdateShown:
    while True:
        event = await follower.events.receive()
        if isinstance(event, UpdateShown):
            return event


async def next_message(events: AsyncIterator[LiveEvent]) -> TopicMessage:
    async for event in events:
        if isinstance(event, TopicMessage):
            return event
    raise AssertionError("the subscription ended")


async def events_until(events: Any, count: int, kind: type) -> list[LiveEvent]:
    seen: list[LiveEvent] = []
    while sum(isinstance(e, kind) for e in seen) < count:
        seen.append(await events.receive())
    return seen


async def test_updates_reach_a_follower_two_hops_away_in_order_exactly_once(tmp_path: Path) -> None:
    key = owner_key()
    with trio.fail_after(40):
        async with line(tmp_path, 3) as (a, b, c), c.live.follow(key.owner, TOPIC) as follower:
            started = await follower.events.receive()
            assert isinstance(started, FollowStarted) and started.next_index == 0
            await interest_reached(a, follower.stream)
            assert (
                b.live.interest.distance(follower.stream) == 1
                and a.live.interest.distance(follower.stream) == 2
            )
            for i in range(20):
                assert a.live.publish_feed_update(key.owner, TOPIC, i, update(i)).outcome == "new"
            shown = [await next_update(follower) for _ in range(20)]
            assert [e.update.index for e in shown] == list(range(20))
            assert {e.via for e in shown} == {"push"}
            assert shown[7].update.soc.payload == b"update 7"
            assert a.store.has(shown[0].update.soc.address)  # published updates are stored too
            stats = c.live.statistics()
            assert stats.accepted == 20 and stats.received == 20
            assert b.live.statistics().forwarded == 20
            assert not any(row.counts["msg_loss"] or row.counts["invalid"] for row in stats.loss)


async def test_a_gap_is_filled_from_the_swarm_before_later_updates_are_shown(tmp_path: Path) -> None:
    key = owner_key()
    with trio.fail_after(40):
        async with line(tmp_path, 3) as (a, _, c), c.live.follow(key.owner, TOPIC, start=0) as follower:
            await interest_reached(a, follower.stream)
            a.live.publish_feed_update(key.owner, TOPIC, 0, update(0))
            for i in (1, 2):  # stored at the publisher, never pushed: the relay "lost" them
                soc = make_update_v2(key, TOPIC, i, f"update {i}".encode())
                a.intake.store_many([Chunk.from_soc(soc)])  # (a.store_chunks would push them)
            a.live.publish_feed_update(key.owner, TOPIC, 3, update(3))
            shown = [await next_update(follower) for _ in range(4)]
            assert [e.update.index for e in shown] == [0, 1, 2, 3]
            assert [e.via for e in shown] == ["push", "fill", "fill", "push"]
            assert c.live.loss.count(LOCAL, "gaps_filled") == 2
            assert c.live.loss.count(LOCAL, "msg_loss") == 0


async def test_light_follower_gives_up_what_does_not_exist_reports_it_and_moves_on(tmp_path: Path) -> None:
    key = owner_key()
    with trio.fail_after(40):
        async with line(tmp_path, 2) as (a, c), c.live.follow(key.owner, TOPIC, start=0) as follower:
            await interest_reached(a, follower.stream)
            for i in (0, 1, 4):  # 2 and 3 never written
                a.live.publish_feed_update(key.owner, TOPIC, i, update(i))
            seen = await events_until(follower.events, 3, UpdateShown)
            order: list[int | str] = []
            for e in seen:
                if isinstance(e, UpdateShown):
                    order.append(e.update.index)
                elif isinstance(e, LossNotice) and e.start is not None and e.end is not None:
                    order += [f"lost {i}" for i in range(e.start, e.end + 1)]
            assert order == [0, 1, "lost 2", "lost 3", 4]
            advisories = [e.advisory for e in seen if isinstance(e, AdvisoryEvent)]
            assert advisories and advisories[0].streams[0].ranges[0][0] == 2  # the first went out at once
            assert c.live.loss.count(LOCAL, "msg_loss") == 2
            assert c.live.loss.count(LOCAL, "inbox_loss") >= 2 * 3  # every failed try of both


async def test_catching_up_from_an_index(tmp_path: Path) -> None:
    key = owner_key()
    with trio.fail_after(40):
        async with line(tmp_path, 2) as (a, c):
            for i in range(6):  # published before anyone follows
                a.live.publish_feed_update(key.owner, TOPIC, i, update(i))
            last = make_update_v2(key, TOPIC, 5, b"update 5").address
            await wait_for(lambda: c.store.has(last))  # synced to the follower's node
            async with c.live.follow(key.owner, TOPIC, start=2) as follower:
                started = await follower.events.receive()
                assert isinstance(started, FollowStarted) and (started.next_index, started.latest) == (2, 5)
                shown = [await next_update(follower) for _ in range(4)]
                assert [e.update.index for e in shown] == [2, 3, 4, 5]
                assert {e.via for e in shown} == {"catch-up"}
                await interest_reached(a, follower.stream)
                a.live.publish_feed_update(key.owner, TOPIC, 6, update(6))
                assert (await next_update(follower)).update.index == 6
            assert c.live.loss.count(LOCAL, "gaps_filled") == 0  # catching up is not a gap


async def test_a_second_path_brings_repeats_that_are_counted_not_shown(tmp_path: Path) -> None:
    key = owner_key()
    with trio.fail_after(40):
        # 0 - 1 - 2 and 0 - 2: node 2 hears everything from 0 directly and through 1
        async with (
            line(tmp_path, 3, extra_links=((0, 2),)) as (a, b, c),
            c.live.follow(key.owner, TOPIC, start=0) as follower,
        ):
            # the whole triangle knows the interest: 0 pushes to 1 and 2, 1 to 2
            stream = follower.stream
            await wait_for(lambda: set(a.live.interest.targets(stream, None)) == {b.overlay, c.overlay})
            await wait_for(lambda: c.overlay in b.live.interest.targets(stream, None))
            for i in range(5):
                a.live.publish_feed_update(key.owner, TOPIC, i, update(i))
            shown = [await next_update(follower) for _ in range(5)]
            assert [e.update.index for e in shown] == list(range(5))
            # each update reaches node 2 from 0 and again through 1, unless 1 had it from 2
            # first (then 1 had it twice): either way the link 1 - 2 carries a second copy of
            # every update, counted as a repeat at 1 or at 2, never shown
            repeats = lambda: b.live.loss.total("repeat") + c.live.loss.total("repeat")  # noqa: E731
            await wait_for(lambda: repeats() >= 5)
            stats = c.live.statistics()
            assert stats.accepted == 5 and stats.received == 5 + c.live.loss.total("repeat")
            with trio.move_on_after(0.3):
                extra = await follower.events.receive()
                raise AssertionError(f"shown twice: {extra}")


async def test_topic_messages_next_skip_and_a_publisher_restart(tmp_path: Path) -> None:
    with trio.fail_after(40):
        async with line(tmp_path, 2) as (a, c), c.live.subscribe(TOPIC) as subscription:
            events = subscription.events()
            await interest_reached(a, subscription.stream)
            for text in ("one", "two"):
                a.live.publish_topic(TOPIC, text.encode())
            first, second = await next_message(events), await next_message(events)
            assert [first.verdict.status, second.verdict.status] == [Status.FIRST, Status.NEXT]
            assert first.message.owner == a.live.key.owner
            a.live.publisher.next(TOPIC, a.live._wall_ns())  # a number used but never sent: a loss
            a.live.publish_topic(TOPIC, b"four")
            skipped = await next_message(events)
            assert skipped.verdict.status is Status.SKIP and skipped.verdict.lost == 1
            a.live.publisher = PublisherSequence(min_frame=a.live.publisher.highest_frame + 1)  # restarted
            a.live.publish_topic(TOPIC, b"again")
            restart = await next_message(events)
            assert restart.verdict.status is Status.CYCLE
            peer = a.overlay.hex()
            assert c.live.loss.count(peer, "restarts") == 1
            assert c.live.loss.count(peer, "msg_loss") == 1  # the skip, not the restart


async def test_forged_and_malformed_pushes_drop_only_themselves(tmp_path: Path) -> None:
    key, forger = owner_key(), Secp256k1Key(b"\x09" * 32)
    with trio.fail_after(40):
        async with line(tmp_path, 2) as (a, c), c.live.follow(key.owner, TOPIC, start=0) as follower:
            await interest_reached(a, follower.stream)
            peer = c.peers[a.overlay]
            forged = make_update_v2(forger, TOPIC, 0, b"forged").data
            bad_topic = make_topic_push(forger, TOPIC, (1 << 35) | 1, 0, 1, b"x")
            pushes: list[FeedPush | TopicPush] = [
                FeedPush(key.owner, TOPIC, 0, forged),
                FeedPush(key.owner, TOPIC, 0, b"\x01" * 60),
                TopicPush(bad_topic.topic, key.owner, bad_topic.seq, 0, 1, bad_topic.signature, b"x"),
            ]
            for push in pushes:  # as if the peer sent them: through its connection's dispatch
                await peer.dispatch(push)
            a.live.publish_feed_update(key.owner, TOPIC, 0, update(0))
            assert (await next_update(follower)).update.soc.payload == b"update 0"
            assert c.live.loss.count(a.overlay.hex(), "invalid") == 2  # the topic one: not subscribed
            assert c.live.loss.count(a.overlay.hex(), "not_subscribed") == 1
            assert not peer.conn.closed


async def test_full_follower_waits_for_a_missing_update_however_long_it_takes(tmp_path: Path) -> None:
    key = owner_key()
    with trio.fail_after(40):
        async with (
            line(tmp_path, 2) as (a, c),
            c.live.follow(key.owner, TOPIC, start=0, mode="full") as follower,
        ):
            await interest_reached(a, follower.stream)
            for i in (0, 2):  # 1 is not written yet
                a.live.publish_feed_update(key.owner, TOPIC, i, update(i))
            assert (await next_update(follower)).update.index == 0
            await wait_for(lambda: c.live.loss.count(LOCAL, "inbox_loss") >= 4)  # past light's 3 tries
            a.live.publish_feed_update(key.owner, TOPIC, 1, update(1))  # written at last
            shown = [await next_update(follower) for _ in range(2)]
            assert [e.update.index for e in shown] == [1, 2]
            assert c.live.loss.count(LOCAL, "msg_loss") == 0


async def test_a_flood_of_forgeries_drops_the_peer(tmp_path: Path) -> None:
    key, forger = owner_key(), Secp256k1Key(b"\x09" * 32)
    with trio.fail_after(40):
        async with line(tmp_path, 2) as (a, c), c.live.follow(key.owner, TOPIC, start=0):
            peer = c.peers[a.overlay]
            forged = FeedPush(key.owner, TOPIC, 0, make_update_v2(forger, TOPIC, 0, b"forged").data)
            for _ in range(INVALID_BUDGET):
                await peer.dispatch(forged)  # each dropped by itself, the peer stays
            assert not peer.conn.closed
            with pytest.raises(RemoteProtocolError, match="live flood"):
                await peer.dispatch(forged)
            assert c.live.loss.count(a.overlay.hex(), "invalid") == INVALID_BUDGET + 1


async def test_an_update_uploaded_through_bees_routes_is_pushed_too(tmp_path: Path) -> None:
    key = owner_key()
    with trio.fail_after(40):
        async with line(tmp_path, 2) as (a, c), c.live.follow(key.owner, TOPIC, start=0) as follower:
            await interest_reached(a, follower.stream)
            for i in range(3):  # what POST /soc and POST /chunks do with a signed update
                soc = make_update_v2(key, TOPIC, i, f"update {i}".encode())
                a.store_chunks([Chunk.from_soc(soc)], verified=True)
            shown = [await next_update(follower) for _ in range(3)]
            assert [(e.update.index, e.via) for e in shown] == [(0, "push"), (1, "push"), (2, "push")]
            assert a.live.statistics().published == 3
