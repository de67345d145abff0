"""Gossip: verified records are learned, bad ones dropped, each peer told each record once."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from kademlia.addresses import PeerAddress
from streamer.identity import NodeIdentity, make_peer_record
from streamer.messages import GoodbyeCode, Message, Peers
from streamer.outbox import Priority
from swarm.net.gossip import Gossip

NET = 3


@dataclass
class FakeConn:
    sent: list[Message] = field(default_factory=list)
    closed: bool = False

    async def send(self, msg: Message, priority: Priority) -> None:
        self.sent.append(msg)


@dataclass
class FakePeer:
    overlay: bytes
    conn: FakeConn = field(default_factory=FakeConn)


def record(identity: NodeIdentity, port: int, network_id: int = NET):
    return make_peer_record(identity, network_id=network_id, host="127.0.0.1", port=port)


def test_verified_records_are_learned_and_bad_ones_dropped() -> None:
    me = NodeIdentity.generate()
    learned: list[PeerAddress] = []

    def learn(address: PeerAddress) -> bool:
        learned.append(address)
        return True

    gossip = Gossip(me, NET, learn)
    sender = FakePeer(NodeIdentity.generate().overlay(NET))
    good = NodeIdentity.generate()
    forged = dataclasses.replace(record(NodeIdentity.generate(), 2000), port=2001)  # signature no longer fits
    foreign = record(NodeIdentity.generate(), 3000, network_id=NET + 1)
    own = record(me, 4000)
    gossip.on_records(sender, Peers((record(good, 1000), forged, foreign, own)))  # type: ignore[arg-type]
    assert learned == [PeerAddress(good.overlay(NET), "127.0.0.1", 1000)]
    assert gossip.rejected == 2 and gossip.received == 4
    assert set(gossip.records) == {good.overlay(NET)}
    # the same record again teaches nothing new; a moved peer (newly signed) is learned again
    gossip.on_records(sender, Peers((record(good, 1000),)))  # type: ignore[arg-type]
    gossip.on_records(sender, Peers((record(good, 1001),)))  # type: ignore[arg-type]
    assert [a.port for a in learned] == [1000, 1001]


async def test_each_peer_is_told_each_record_once_own_first_and_never_its_own() -> None:
    me = NodeIdentity.generate()
    gossip = Gossip(me, NET, lambda _: True)
    gossip.advertise("127.0.0.1", 9000)
    others = [NodeIdentity.generate() for _ in range(3)]
    source = FakePeer(NodeIdentity.generate().overlay(NET))
    gossip.on_records(source, Peers(tuple(record(o, 1000 + i) for i, o in enumerate(others))))  # type: ignore[arg-type]
    target = FakePeer(others[0].overlay(NET))
    assert await gossip.tell(target) == 3  # type: ignore[arg-type]  # our own + the two others it is not
    (msg,) = target.conn.sent
    assert isinstance(msg, Peers)
    assert msg.records[0].overlay == me.overlay(NET)
    assert {r.overlay for r in msg.records[1:]} == {others[1].overlay(NET), others[2].overlay(NET)}
    assert await gossip.tell(target) == 0  # type: ignore[arg-type]  # nothing new
    # the source sent those records, so it is not told them back, only our own
    assert await gossip.tell(source) == 1  # type: ignore[arg-type]


def test_a_peer_may_send_a_bounded_number_of_records_and_a_flood_drops_it() -> None:
    from streamer.errors import RemoteProtocolError
    from swarm.net.gossip import RECORDS_PER_WINDOW, WINDOW

    now = [0.0]
    gossip = Gossip(NodeIdentity.generate(), NET, lambda _: True, clock=lambda: now[0])
    sender = FakePeer(NodeIdentity.generate().overlay(NET))
    junk = Peers((record(NodeIdentity.generate(), 1),) * 128)
    for _ in range(RECORDS_PER_WINDOW // 128):
        gossip.on_records(sender, junk)  # type: ignore[arg-type]
    assert gossip.received == RECORDS_PER_WINDOW and gossip.rate_limited == 0
    gossip.on_records(sender, junk)  # type: ignore[arg-type]
    assert gossip.received == RECORDS_PER_WINDOW and gossip.rate_limited == 128
    now[0] = WINDOW  # a new window: welcome again
    gossip.on_records(sender, junk)  # type: ignore[arg-type]
    assert gossip.received == RECORDS_PER_WINDOW + 128
    with pytest.raises(RemoteProtocolError, match="gossip flood") as info:
        for _ in range(4 * RECORDS_PER_WINDOW // 128):
            gossip.on_records(sender, junk)  # type: ignore[arg-type]
    assert info.value.code == GoodbyeCode.OVERLOADED
