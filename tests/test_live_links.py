"""A peer link sends interest before pushes, never blocks the relay, and a link whose connection
was replaced leaves the new connection's announcements alone."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import trio

from streamer.messages import FeedPush, LiveInterest
from swarm.live.interest import InterestTable
from swarm.live.links import PeerLink
from swarm.live.messages import Stream

PEER = b"\x01" * 32
STREAM = Stream.feed(b"\x02" * 20, b"\x03" * 32)


@dataclass
class FakeConn:
    closed: bool = False
    sent: list[Any] = field(default_factory=list)

    async def send(self, msg: Any, priority: Any) -> None:
        if self.closed:
            raise trio.ClosedResourceError
        self.sent.append(msg)
        await trio.lowlevel.checkpoint()


@dataclass
class FakePeer:
    overlay: bytes
    conn: FakeConn


async def test_interest_goes_first_then_pushes_and_a_full_queue_drops() -> None:
    table = InterestTable()
    table.follow(STREAM)
    table.add_peer(PEER)
    conn = FakeConn()
    link = PeerLink(FakePeer(PEER, conn), table, capacity=2)  # type: ignore[arg-type]
    push = FeedPush(STREAM.owner, STREAM.topic, 0, b"")
    assert link.push(push) and link.push(push)
    assert not link.push(push) and link.dropped == 1
    with trio.move_on_after(0.5):
        await link.run()
    assert isinstance(conn.sent[0], LiveInterest) and conn.sent[1:] == [push, push]


async def test_a_replaced_link_does_not_take_the_new_connections_announcements() -> None:
    table = InterestTable()
    table.follow(STREAM)
    table.add_peer(PEER)
    old = PeerLink(FakePeer(PEER, FakeConn(closed=True)), table)  # type: ignore[arg-type]
    table.remove_peer(PEER)
    table.add_peer(PEER)  # the peer reconnected
    new_conn = FakeConn()
    new = PeerLink(FakePeer(PEER, new_conn), table)  # type: ignore[arg-type]
    old.interest_changed()
    new.interest_changed()
    with trio.move_on_after(0.2), contextlib.suppress(trio.ClosedResourceError):
        await old.run()  # runs first: it must not take what is meant for the new connection
    with trio.move_on_after(0.2):
        await new.run()
    assert len(new_conn.sent) == 1 and isinstance(new_conn.sent[0], LiveInterest)
    assert new_conn.sent[0].entries[0].hops == 0
