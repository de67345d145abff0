"""Puller on its own: the sync rule, depth changes, epochs and intervals, with scripted clients.

A fake client answers `cursors()` with fixed cursors and records every `sync` it is asked for;
a historical sync "completes" by reporting its range, as the real client does batch by batch.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from kademlia import sync_bins
from syncer.interval_store import IntervalStore
from syncer.pull_config import PullerConfig
from syncer.puller import Puller
from syncer.session_events import CursorsReceived
from tests.test_intervals import DictState

EPOCH = 1_700_000_000
PEER = b"P" * 32


@dataclass
class FakeClient:
    overlay: bytes
    nursery: trio.Nursery
    puller: Puller
    cursors_: tuple[int, ...]
    epoch: int = EPOCH
    syncs: list[tuple[int, bool, int, int]] = field(default_factory=list)
    running: set[tuple[int, bool]] = field(default_factory=set)
    open: int = 0
    record_historical: bool = True  # False: historical syncs never complete (the test records)
    quiet: bool = True  # no offer since the latest cursors reply
    asked: int = 0  # cursors requests

    async def cursors(self) -> CursorsReceived:
        self.asked += 1
        self.quiet = True  # the reply came after every offer so far
        return CursorsReceived(self.epoch, self.cursors_)

    def cursor(self, bin: int) -> int:
        return self.cursors_[bin]

    def settled(self) -> bool:
        return self.quiet

    def open_batches(self) -> int:
        return self.open

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        self.nursery.start_soon(fn, *args)

    async def sync(self, bin: int, live: bool, start: int, end: int) -> None:
        self.syncs.append((bin, live, start, end))
        self.running.add((bin, live))
        try:
            if live or not self.record_historical:
                await trio.sleep_forever()
            self.puller.record(self.overlay, bin, start, end)  # the whole range completed
        finally:
            self.running.discard((bin, live))


def cursors(**bins: int) -> tuple[int, ...]:
    values = [0] * 32
    for name, cursor in bins.items():
        values[int(name.removeprefix("b"))] = cursor
    return tuple(values)


async def settle() -> None:
    await trio.testing.wait_all_tasks_blocked()


def puller(state: DictState | None = None) -> Puller:
    return Puller(IntervalStore(state or DictState()), rule=sync_bins, config=PullerConfig(cursor_refresh=60))


async def test_a_neighbour_gives_every_bin_from_depth_history_first_then_live() -> None:
    state = DictState()
    p = puller(state)
    stored = IntervalStore(state)
    stored.set_epoch(PEER, EPOCH)
    pre = stored.get(PEER, 3)
    pre.add(1, 50)
    stored.put(PEER, 3, pre)
    async with trio.open_nursery() as nursery:
        client = FakeClient(PEER, nursery, p, cursors(b3=100, b5=7))
        nursery.start_soon(p.pull, client, 4)  # po 4 >= depth 0: a neighbour
        await settle()
        historical = sorted(s for s in client.syncs if not s[1])
        assert historical == [(3, False, 51, 100), (5, False, 1, 7)]
        assert {b for b, live in client.running if live} == set(range(32))
        assert (3, True, 101, 0) in client.syncs and (0, True, 1, 0) in client.syncs
        assert stored.get(PEER, 3).ranges == [(1, 100)]
        assert p.fully_synced()
        (status,) = p.statistics().peers
        assert status.po == 4 and status.epoch == EPOCH and status.fully_synced
        assert [b.lag for b in status.bins if b.bin in (3, 5)] == [0, 0]
        nursery.cancel_scope.cancel()


async def test_depth_changes_move_the_bins_and_keep_the_intervals() -> None:
    p = puller()
    async with trio.open_nursery() as nursery:
        client = FakeClient(PEER, nursery, p, cursors(b1=10, b2=10))
        nursery.start_soon(p.pull, client, 1)
        await settle()
        assert {b for b, _ in client.running} == set(range(32))
        p.set_depth(3)  # po 1 < depth 3: only the chunks closer to us, bin 1
        await settle()
        assert client.running == {(1, True)}
        assert p.statistics().depth == 3
        p.set_depth(0)
        await settle()
        assert {b for b, _ in client.running} == set(range(32))
        # bin 2 was fully synced before: nothing historical again, only live
        assert [s for s in client.syncs if s[0] == 2 and not s[1]] == [(2, False, 1, 10)]
        nursery.cancel_scope.cancel()


async def test_a_new_store_epoch_voids_the_intervals_and_is_counted() -> None:
    state = DictState()
    stored = IntervalStore(state)
    stored.set_epoch(PEER, EPOCH - 1)
    old = stored.get(PEER, 0)
    old.add(1, 5)
    stored.put(PEER, 0, old)
    p = puller(state)
    async with trio.open_nursery() as nursery:
        client = FakeClient(PEER, nursery, p, cursors(b0=5))
        nursery.start_soon(p.pull, client, 0)
        await settle()
        assert (0, False, 1, 5) in client.syncs, "synced again from the start"
        assert p.stats_of(PEER)["resets"] == 1
        assert stored.epoch(PEER) == EPOCH
        nursery.cancel_scope.cancel()


async def test_open_batches_or_lag_mean_not_fully_synced() -> None:
    p = puller()
    async with trio.open_nursery() as nursery:
        client = FakeClient(PEER, nursery, p, cursors(b0=5))
        client.open = 1
        nursery.start_soon(p.pull, client, 0)
        await settle()
        assert not p.fully_synced()
        client.open = 0
        assert p.fully_synced()
        client.cursors_ = cursors(b0=9)  # the upstream got 4 more chunks
        assert not p.fully_synced()
        (status,) = p.statistics().peers
        assert [b.lag for b in status.bins if b.bin == 0] == [4]
        nursery.cancel_scope.cancel()
    assert p.statistics().peers == (), "a peer whose pull ended is no longer listed"


async def test_a_lull_between_offers_is_not_fully_synced_until_a_cursors_reply_confirms_it() -> None:
    """Issue 30 item 10: every bin covered up to the cursors the offers showed, but an offer came
    after the upstream's latest cursors reply: more may be on the way, so not fully synced. The
    puller asks the cursors again soon (cursor_confirm, not cursor_refresh), and the reply with
    no offer after it confirms the sync."""
    p = Puller(IntervalStore(DictState()), config=PullerConfig(cursor_refresh=60, cursor_confirm=0.01))
    async with trio.open_nursery() as nursery:
        client = FakeClient(PEER, nursery, p, cursors(b0=5))
        nursery.start_soon(p.pull, client, 0)
        await settle()
        assert p.fully_synced() and client.asked == 1
        client.quiet = False  # a live offer of 3 more chunks, all stored at once
        client.cursors_ = cursors(b0=8)
        p.record(PEER, 0, 6, 8)
        assert not p.fully_synced()
        assert not p.statistics().fully_synced
        with trio.fail_after(5):
            while client.asked < 2:
                await trio.sleep(0.005)
        assert p.fully_synced()
        nursery.cancel_scope.cancel()
