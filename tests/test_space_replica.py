"""A space replica over an in-memory chunk source: pushed updates, bounded buffers, writing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from chunks.chunk import Chunk
from chunks.ethkey import Secp256k1Key
from chunks.feeds import make_update_v2
from swarm.spaces.config import SpaceConfig
from swarm.spaces.messages import (
    MEMBERS_TOPIC,
    Kind,
    MemberEntry,
    compose,
    encode_member_entry,
    message_topic,
)
from swarm.spaces.replica import NotCaughtUp, Replica
from swarm.testing import wait_for

SPACE_KEY = Secp256k1Key.generate()
SPACE = SPACE_KEY.owner
ALICE, BOB = Secp256k1Key.generate(), Secp256k1Key.generate()


class DictSource:
    """Chunks in a dict; the swarm has nothing more."""

    def __init__(self) -> None:
        self.chunks: dict[bytes, bytes] = {}
        self.remote_asked = 0

    def local(self, address: bytes) -> bytes | None:
        return self.chunks.get(address)

    async def remote(self, address: bytes) -> bytes | None:
        self.remote_asked += 1
        return None

    def keep(self, chunk: Chunk) -> None:
        self.chunks[chunk.address] = chunk.data


def member_update(index: int, key: Secp256k1Key, name: str | None = None) -> Chunk:
    return Chunk.from_soc(
        make_update_v2(SPACE_KEY, MEMBERS_TOPIC, index, encode_member_entry(MemberEntry(key.owner, name)))
    )


def message(
    key: Secp256k1Key, member: int, seq: int, previous: tuple[int, ...], timeframe: tuple[int, ...]
) -> Chunk:
    payload = compose(member, previous, timeframe, Kind.SAY, text=f"{member}:{seq}")
    return Chunk.from_soc(make_update_v2(key, message_topic(SPACE), seq, payload))


def put(source: DictSource, *chunks: Chunk) -> None:
    for chunk in chunks:
        source.keep(chunk)


async def test_pushed_updates_are_processed_without_waiting_for_a_poll() -> None:
    """With polls and probes far apart, only the pushes can bring the messages in."""
    source = DictSource()
    put(source, member_update(0, ALICE, "s"), member_update(1, BOB))
    channels = {
        owner: trio.open_memory_channel[tuple[int, bytes]](10) for owner in (SPACE, ALICE.owner, BOB.owner)
    }
    followed: list[tuple[bytes, int]] = []

    @asynccontextmanager
    async def follow(
        owner: bytes, topic: bytes, start: int
    ) -> AsyncIterator[AsyncIterator[tuple[int, bytes]]]:
        followed.append((owner, start))

        yield channels[owner][1]

    config = SpaceConfig(poll=1000.0, remote_every=1000.0, tick=1000.0)
    replica = Replica(SPACE, source, config, follow=follow)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(replica.run)
            await wait_for(lambda: replica.reader.members == 2 and len(followed) == 3)
            assert {f for f in followed if f[0] != SPACE} == {(ALICE.owner, 0), (BOB.owner, 0)}
            assert SPACE in {owner for owner, _ in followed}  # the member list is followed too
            await channels[BOB.owner][0].send((0, message(BOB, 1, 0, (), (-1, -1)).data))
            await channels[ALICE.owner][0].send((0, message(ALICE, 0, 0, (), (-1, 0)).data))
            await wait_for(lambda: replica.reader.orderer.processed == 2)
            assert [(r.member, r.seq) for r in replica.reader.causal_log] == [(1, 0), (0, 0)]
            nursery.cancel_scope.cancel()


async def test_a_stalled_replica_holds_a_bounded_number_of_messages() -> None:
    """Bob's 200 messages all depend on Alice's first, which is missing: the replica holds only
    its window of them; once Alice's message is there, it reads and processes all."""
    source = DictSource()
    put(source, member_update(0, ALICE, "s"), member_update(1, BOB))
    for seq in range(200):
        put(source, message(BOB, 1, seq, (0 if seq else -1, seq - 2), (0, seq - 1)))
    replica = Replica(SPACE, source, SpaceConfig(capacity=16, poll=0.01, tick=0.05))
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(replica.run)
            assert await replica.wait_settled(5)
            assert replica.reader.orderer.held_total() == 8 and replica.reader.orderer.processed == 0
            [missing] = replica.reader.status(0.0).missing
            assert (missing.member, missing.seq) == (0, 0)
            put(source, message(ALICE, 0, 0, (), (-1, -1)))
            replica.wake()
            await wait_for(lambda: replica.reader.orderer.processed == 201)
            assert replica.reader.orderer.held_total() == 0
            nursery.cancel_scope.cancel()


async def test_a_writer_waits_for_its_own_messages_before_writing_again() -> None:
    source = DictSource()
    put(source, member_update(0, ALICE, "s"), member_update(1, BOB))
    put(source, message(BOB, 1, 0, (), (0, -1)))  # needs Alice's message 0, which is not here
    replica = Replica(SPACE, source, SpaceConfig(poll=0.01, tick=0.05, remote_every=1000.0))
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(replica.run)
            view = await replica.writer_view(ALICE.owner, 5)
            assert (view.member, view.next, view.timeframe) == (0, 0, (-1, -1))
            assert source.remote_asked == 1  # is message 0 of Alice somewhere in the swarm?
            with pytest.raises(NotCaughtUp, match="1 more held; it waits for 0:0"):
                await replica.writer_view(BOB.owner, 0.5)
            with pytest.raises(NotCaughtUp, match="not a member"):
                await replica.writer_view(SPACE, 0.5)
            nursery.cancel_scope.cancel()


async def test_live_propagation_drives_the_replica_through_the_adapter() -> None:
    """`live_follow` over an object shaped like the node's live service (issue 14)."""
    from types import SimpleNamespace

    from chunks.feeds import parse_update, update_address
    from swarm.spaces.live_source import live_follow

    source = DictSource()
    put(source, member_update(0, ALICE, "s"))
    sent, shown = trio.open_memory_channel[object](10)
    asked: list[tuple[bytes, int | None, str]] = []

    class Live:
        @asynccontextmanager
        async def follow(
            self, owner: bytes, topic: bytes, *, start: int | None = None, mode: str = "light"
        ) -> AsyncIterator[SimpleNamespace]:
            asked.append((owner, start, mode))
            if owner != ALICE.owner:
                await trio.sleep_forever()
            yield SimpleNamespace(events=shown)

    config = SpaceConfig(poll=1000.0, remote_every=1000.0, tick=1000.0)
    replica = Replica(SPACE, source, config, follow=live_follow(Live()))
    chunk = message(ALICE, 0, 0, (), (-1,))
    update = parse_update(ALICE.owner, message_topic(SPACE), 0, chunk.data)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(replica.run)
            await wait_for(lambda: (ALICE.owner, 0, "full") in asked)
            await sent.send(SimpleNamespace(stream="a start event, no update"))
            await sent.send(SimpleNamespace(update=update, via="pushed"))
            await wait_for(lambda: replica.reader.orderer.processed == 1)
            assert source.local(update_address(ALICE.owner, message_topic(SPACE), 0)) == chunk.data
            nursery.cancel_scope.cancel()
