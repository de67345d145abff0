"""ConnectionManager with a fake dialler: fills bins, backs off failures, prunes surplus peers."""

from __future__ import annotations

import random

import trio
import trio.testing

from kademlia import PeerTable, get_strategy, is_settled
from kademlia.addresses import AddressBook, Backoff, PeerAddress
from kademlia.manager import ConnectionManager

BASE = bytes(2)


def peers(count: int, seed: int = 1) -> list[bytes]:
    rng = random.Random(seed)
    found: set[bytes] = set()
    while len(found) < count:
        p = rng.randbytes(2)
        if p != BASE:
            found.add(p)
    return sorted(found)


class FakeNetwork:
    """Dials succeed instantly unless the peer is marked dead; connects update the table."""

    def __init__(self, table: PeerTable) -> None:
        self.table = table
        self.dead: set[bytes] = set()
        self.dialled: list[bytes] = []
        self.disconnected: list[tuple[bytes, str]] = []

    async def dial(self, address: PeerAddress) -> None:
        self.dialled.append(address.overlay)
        await trio.sleep(0)
        if address.overlay in self.dead:
            raise OSError("connection refused")
        self.table.connect(address.overlay)

    def disconnect(self, overlay: bytes, reason: str) -> None:
        self.disconnected.append((overlay, reason))
        self.table.disconnect(overlay)


def setup(known: list[bytes], **table_args: int) -> tuple[PeerTable, AddressBook, FakeNetwork]:
    table = PeerTable(BASE, **table_args)
    book = AddressBook(BASE)
    for i, p in enumerate(known):
        table.add_known(p)
        book.add(PeerAddress(p, "127.0.0.1", 10000 + i))
    return table, book, FakeNetwork(table)


async def test_dials_until_the_table_is_settled_and_no_further() -> None:
    known = peers(60)
    table, book, net = setup(known)
    manager = ConnectionManager(table, book, get_strategy("gap"), net.dial, net.disconnect, interval=0.05)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(manager.run)
            while not is_settled(table, manager.callable):
                await trio.sleep(0.01)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    assert len(net.dialled) == len(set(net.dialled)) == table.connected_count()
    assert table.connected_count() < len(known)  # saturated bins did not take every known peer
    depth = table.depth()
    for po in range(depth):
        assert len(table.connected(po)) == min(table.saturation, len(table.known(po)))
    for po in range(depth, 32):
        assert set(table.connected(po)) == set(table.known(po))  # the neighbourhood is complete


async def test_failed_dials_back_off_and_succeed_later(autojump_clock: trio.testing.MockClock) -> None:
    """With a mock clock (time jumps whenever every task waits): 1, 2, 4, 8, 8 ... between tries."""
    known = peers(3, seed=2)
    table, book, net = setup(known)
    net.dead.add(known[0])
    backoff = Backoff(base=1.0, cap=8.0)
    manager = ConnectionManager(table, book, get_strategy("first"), net.dial, net.disconnect, backoff=backoff)
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        await trio.sleep(0.5)
        assert net.dialled.count(known[0]) == 1
        assert backoff.failures(known[0]) == 1
        assert table.is_connected(known[1]) and table.is_connected(known[2])
        await trio.sleep(1 + 2 + 4)  # tried again after 1 s, then 2 s, then 4 s
        assert net.dialled.count(known[0]) == 4
        net.dead.clear()
        await trio.sleep(8.5)  # the next try, after the capped 8 s, succeeds
        assert table.is_connected(known[0])
        assert net.dialled.count(known[0]) == 5
        # the count goes on until the session ends cleanly (a peer that refuses us right after
        # the handshake is not dialled again at once)
        assert backoff.failures(known[0]) == 4
        manager.session_ended(known[0], broken=False)
        assert backoff.failures(known[0]) == 0
        nursery.cancel_scope.cancel()


async def test_sessions_broken_off_back_off_exponentially(autojump_clock: trio.testing.MockClock) -> None:
    """Issue 30 item 9: a peer whose sessions end in a protocol violation right after each
    handshake (it refuses us) is dialled again after 1, 2, 4, 8 s, not at once (a restored node
    saw 85 connect-and-refuse cycles a second)."""
    known = peers(1, seed=3)
    table, book, net = setup(known)
    backoff = Backoff(base=1.0, cap=8.0)
    manager = ConnectionManager(table, book, get_strategy("first"), net.dial, net.disconnect, backoff=backoff)

    async def refuse_each_session() -> None:
        while True:
            await trio.sleep(0.01)
            if table.is_connected(known[0]):
                table.disconnect(known[0])
                manager.session_ended(known[0], broken=True)
                manager.changed()

    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        nursery.start_soon(refuse_each_session)
        await trio.sleep(1 + 2 + 4 + 8 + 0.5)
        assert net.dialled.count(known[0]) == 5  # at 0, 1, 3, 7 and 15 s
        assert backoff.failures(known[0]) == 5
        nursery.cancel_scope.cancel()


async def test_over_saturated_bins_are_pruned_once_each() -> None:
    # bin 0 of BASE: addresses with the top bit set; eight connected there, saturation 2, limit 3
    bin0 = [bytes([0x80 | i, i]) for i in range(8)]
    deep = [bytes([0x40 >> k, 0]) for k in range(7)] + [b"\x00\x01", b"\x00\x02", b"\x00\x03"]
    table, book, net = setup(bin0 + deep, saturation=2, over_saturation=3)
    for p in bin0 + deep:
        table.connect(p)
    assert table.depth() > 0
    manager = ConnectionManager(table, book, get_strategy("gap"), net.dial, net.disconnect, interval=0.05)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(manager.run)
            await trio.sleep(0.2)
            manager.changed()
            await trio.sleep(0.2)
            nursery.cancel_scope.cancel()
    dropped = [o for o, reason in net.disconnected]
    assert len(dropped) == len(set(dropped)) == 5  # 8 down to the limit of 3
    assert all(reason == "bin over-saturated" for _, reason in net.disconnected)
    assert len(table.connected(0)) == 3
    assert manager.statistics().pruned == 5
