"""Pruning of redundant live paths between in-process nodes over loopback TCP (`LivePause`,
`LiveHave`).

The triangle 0 - 1 - 2, 0 - 2 with a follower at node 2 and updates published at node 0: node 2
hears each update directly and again through node 1. Keeping one eager carrier (``eager=1``),
node 2 pauses the second path after its first repeats, which then only announces the updates;
when the eager path goes away, the paused one is resumed; a node whose every path is paused
grafts them back on the announcements.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from streamer.messages import GoodbyeCode
from swarm.live.follower import FeedFollower
from swarm.live.messages import Chain
from swarm.node import Node
from swarm.testing import wait_for
from tests.test_live_service import FAST, TOPIC, line, next_update, owner_key, update

ONE_EAGER = dataclasses.replace(FAST, eager=1)


@dataclasses.dataclass
class Triangle:
    a: Node
    b: Node
    c: Node
    follower: FeedFollower  # at node 2
    chain: Chain  # the feed's


@asynccontextmanager
async def triangle(tmp_path: Path) -> AsyncIterator[Triangle]:
    """The triangle with one eager carrier, once interest has spread: node 0 pushes to nodes 1
    and 2, node 1 to node 2."""
    key = owner_key()
    async with (
        line(tmp_path, 3, extra_links=((0, 2),), live=ONE_EAGER) as (a, b, c),
        c.live.follow(key.owner, TOPIC, start=0) as follower,
    ):
        stream = follower.stream
        await wait_for(lambda: c.overlay in b.live.interest.targets(stream, None))
        await wait_for(lambda: set(a.live.interest.targets(stream, None)) == {b.overlay, c.overlay})
        yield Triangle(a, b, c, follower, Chain(stream.kind, key.owner, TOPIC))


def repeats(node: Node) -> int:
    return node.live.loss.total("repeat")


async def test_a_repeat_pauses_the_second_path_and_later_updates_come_once(tmp_path: Path) -> None:
    key = owner_key()
    with trio.fail_after(40):
        async with triangle(tmp_path) as t:
            a, b, c, follower, chain = t.a, t.b, t.c, t.follower, t.chain
            for i in range(3):
                a.live.publish_feed_update(key.owner, TOPIC, i, update(i))
                assert (await next_update(follower)).update.index == i
            # node 2 heard a repeat and paused the carrier that brought it; its peer honours it
            await wait_for(lambda: len(c.live.paths.pruning.paused(chain)) == 1)
            paused = c.live.paths.pruning.paused(chain)[0]
            sender = a if paused == a.overlay else b
            await wait_for(lambda: sender.live.paths.pruning.paused_by(c.overlay, chain))
            before, pruned_before = repeats(c), sender.live.paths.pruned
            for i in range(3, 13):
                a.live.publish_feed_update(key.owner, TOPIC, i, update(i))
                assert (await next_update(follower)).update.index == i
            assert sender.live.paths.pruned - pruned_before == 10  # none of them sent on the paused path
            assert repeats(c) == before
            assert c.live.statistics().pruning.pauses_sent == 1


async def test_when_the_eager_path_goes_the_paused_one_is_resumed(tmp_path: Path) -> None:
    key = owner_key()
    with trio.fail_after(40):
        async with triangle(tmp_path) as t:
            a, b, c, follower, chain = t.a, t.b, t.c, t.follower, t.chain
            index = 0
            while not c.live.paths.pruning.paused(chain):
                a.live.publish_feed_update(key.owner, TOPIC, index, update(index))
                assert (await next_update(follower)).update.index == index
                index += 1
            paused = c.live.paths.pruning.paused(chain)[0]
            eager = next(p for p in c.live.paths.pruning.carriers(chain) if p != paused)
            c.sessions.close(eager, GoodbyeCode.NORMAL, "test: the eager path goes away")
            await wait_for(lambda: c.live.paths.pruning.paused(chain) == [])
            sender = a if paused == a.overlay else b
            await wait_for(lambda: not sender.live.paths.pruning.paused_by(c.overlay, chain))
            assert c.live.statistics().pruning.resumes_sent >= 1
            for i in range(index, index + 5):
                a.live.publish_feed_update(key.owner, TOPIC, i, update(i))
                assert (await next_update(follower)).update.index == i


async def test_a_node_whose_every_path_is_paused_grafts_on_the_announcements(tmp_path: Path) -> None:
    key = owner_key()
    with trio.fail_after(40):
        async with triangle(tmp_path) as t:
            a, b, c, follower, chain = t.a, t.b, t.c, t.follower, t.chain
            a.live.publish_feed_update(key.owner, TOPIC, 0, update(0))
            assert (await next_update(follower)).update.index == 0
            # the starving ring pruning could make: both of node 2's carriers hold it paused
            for sender in (a, b):
                sender.live.paths.pruning.asked(c.overlay, chain, True)
            accepted = c.live.relay.accepted
            a.live.publish_feed_update(key.owner, TOPIC, 1, update(1))
            # only announced to node 2; a second later it resumes the announcers
            await wait_for(lambda: c.live.statistics().pruning.grafts >= 1)
            await wait_for(lambda: not a.live.paths.pruning.paused_by(c.overlay, chain))
            assert c.live.statistics().pruning.haves_received >= 1
            a.live.publish_feed_update(key.owner, TOPIC, 2, update(2))
            await wait_for(lambda: c.live.relay.accepted >= accepted + 1)  # update 2 came by push
            shown = {(await next_update(follower)).update.index for _ in range(2)}
            assert shown == {1, 2}
