"""Puller: which peers, bins and ranges to pull, and the record of what has been synced.

The sync rule is applied here and nowhere else: for a peer at proximity order `po`, with this
node's depth `d` and storage radius `r` (localstore/reserve.py; at most `d`), the upstream bins
to pull are those of `rule(po, d)` (kademlia's `sync_bins`) that are `>= r`, as Bee's puller
combines them: a full reserve stops pulling the bins of peers farther than its radius. When the
depth or the radius changes (`set_depth`, `set_radius`), every peer's bins are re-evaluated: new
bins start, bins no longer wanted stop (their intervals stay stored, so pulling them again later
resumes). When the radius goes *down*, the intervals of every bin below the old radius are
dropped (as Bee does), so the chunks evicted or passed over while they were outside it are
offered, and wanted, again.

Per peer it asks the cursors and the store epoch first; a changed epoch voids every interval kept
for that peer (its store was wiped: a new cycle, counted as a reset). Per bin it runs the live
stream from cursor + 1 and, beside it, the historical stream over each missing range up to the
cursor. The client reports completed batches and the puller adds them to the peer's intervals,
persisted at once. The protocol itself is the `PullSyncClient`'s business.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from kademlia import sync_bins
from syncer.interval_store import IntervalStore
from syncer.intervals import Intervals
from syncer.lag import CursorClock
from syncer.pull_config import PullerConfig
from syncer.session_events import CursorsReceived
from syncer.stats import RETIRED, PeerStats, StatsSnapshot

__all__ = ["BinStatus", "PeerSyncStatus", "Puller", "PullerStatistics", "SyncClient", "SyncRule"]

log = logging.getLogger(__name__)

#: Which of a peer's bins to pull: (proximity of the peer to us, our depth) -> bins.
SyncRule = Callable[[int, int], list[int]]


class SyncClient(Protocol):
    """What the puller uses of a peer's `PullSyncClient`."""

    overlay: bytes

    async def cursors(self) -> CursorsReceived: ...

    def cursor(self, bin: int) -> int: ...

    def settled(self) -> bool:
        """No offer has arrived since the upstream's latest cursors reply."""

    async def sync(self, bin: int, live: bool, start: int, end: int) -> None: ...

    def open_batches(self) -> int: ...

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run a task for the connection's life; a protocol violation in it drops the peer."""


@dataclass(frozen=True)
class BinStatus:
    bin: int
    cursor: int
    synced: tuple[tuple[int, int], ...]
    lag: int  # bin IDs up to the cursor not synced yet
    behind: float = 0.0  # seconds since the oldest unsynced ID became known (syncer/lag.py)
    last_batch: float | None = None  # wall-clock time the last batch of the bin was synced


@dataclass(frozen=True)
class PeerSyncStatus:
    overlay: bytes
    po: int
    epoch: int | None
    fully_synced: bool
    bins: tuple[BinStatus, ...]


@dataclass(frozen=True)
class PullerStatistics:
    depth: int
    fully_synced: bool
    radius: int
    peers: tuple[PeerSyncStatus, ...]  # connected peers, by overlay
    stats: dict[bytes, StatsSnapshot]  # loss counters of every peer ever pulled from


@dataclass
class _Peer:
    client: SyncClient
    po: int
    epoch: int | None = None
    intervals: dict[int, Intervals] = field(default_factory=dict)
    bins: dict[int, trio.CancelScope] = field(default_factory=dict)
    started: bool = False
    confirm: trio.Event = field(default_factory=trio.Event)  # caught up: ask the cursors soon
    clocks: dict[int, CursorClock] = field(default_factory=dict)

    def clock_of(self, bin: int) -> CursorClock:
        clock = self.clocks.get(bin)
        if clock is None:
            clock = self.clocks[bin] = CursorClock()
        return clock

    def first_missing(self, bin: int) -> int | None:
        """The lowest ID up to the cursor not synced, None when the bin is caught up."""
        cursor = self.client.cursor(bin)
        if cursor == 0:
            return None
        start, _, empty = self.intervals_of(bin).next(cursor)
        return None if empty else start

    def intervals_of(self, bin: int) -> Intervals:
        intervals = self.intervals.get(bin)
        if intervals is None:
            intervals = self.intervals[bin] = Intervals()
        return intervals

    def caught_up(self) -> bool:
        """Every pulled bin covers [1, cursor] as far as this node knows the cursors."""
        return all(self.lag(bin) == 0 for bin in self.bins)

    def lag(self, bin: int) -> int:
        cursor = self.client.cursor(bin)
        intervals = self.intervals.get(bin)
        if intervals is None:
            return cursor
        return cursor - sum(min(e, cursor) - s + 1 for s, e in intervals.ranges if s <= cursor)


class Puller:
    """Node-wide: the sync rule, per-peer bin runs, synced intervals and loss statistics."""

    def __init__(
        self,
        intervals: IntervalStore,
        *,
        rule: SyncRule = sync_bins,
        config: PullerConfig | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.intervals = intervals
        self.rule = rule
        self.config = config or PullerConfig()
        self.clock = clock
        self.depth = 0
        self.radius = 0
        self._peers: dict[bytes, _Peer] = {}
        self.stats: dict[bytes, PeerStats] = {}  # every peer ever pulled from

    def stats_of(self, peer: bytes) -> PeerStats:
        """The loss counters of a peer, kept across its connections."""
        stats = self.stats.get(peer)
        if stats is None:
            stats = self.stats[peer] = PeerStats()
        return stats

    def retire(self, peer: bytes) -> None:
        """A peer long gone: sum its counters into the `RETIRED` entry and forget its own."""
        stats = self.stats.get(peer) if peer not in self._peers and peer != RETIRED else None
        if stats is not None:
            del self.stats[peer]
            self.stats_of(RETIRED).absorb(stats)

    # -- peers ------------------------------------------------------------------------------

    async def pull(self, client: SyncClient, po: int) -> None:
        """Pull from a connected peer for as long as the connection lives (run it as one of the
        connection's tasks). Learns cursors and epoch, starts the bins the rule names, then
        keeps the cursors fresh."""
        overlay = client.overlay
        peer = self._peers[overlay] = _Peer(client, po)
        try:
            reply = await client.cursors()
            self._observe_all(peer, reply)
            peer.epoch = reply.epoch
            if self.intervals.check_epoch(overlay, reply.epoch):
                self.stats_of(overlay).add("resets", 1, self.clock())
                log.info("peer %s has a new store epoch: its intervals were voided", overlay.hex()[:12])
            peer.intervals = self.intervals.bins(overlay)
            peer.started = True
            self._set_bins(peer, self.bins_for(po))
            while True:
                # Every cursor_refresh, and soon after catching up (which only a cursors reply
                # with no offer after it confirms: fully_synced), at most every cursor_confirm.
                with trio.move_on_after(self.config.cursor_refresh):
                    await peer.confirm.wait()
                    await trio.sleep(self.config.cursor_confirm)
                peer.confirm = trio.Event()
                self._observe_all(peer, await client.cursors())
        finally:
            if self._peers.get(overlay) is peer:
                del self._peers[overlay]

    def _observe_all(self, peer: _Peer, reply: CursorsReceived) -> None:
        now = self.clock()
        for bin, cursor in enumerate(reply.cursors):
            if cursor:
                peer.clock_of(bin).observe(cursor, now)

    def observe(self, peer: bytes, bin: int, cursor: int) -> None:
        """The upstream `peer` was seen (in an offer or a cursors reply) to hold `bin` up to
        `cursor`: the time its new IDs became known, for the lag in seconds."""
        state = self._peers.get(peer)
        if state is not None:
            state.clock_of(bin).observe(cursor, self.clock())

    def bins_for(self, po: int) -> list[int]:
        """The bins to pull from a peer at ``po``: the rule's, at or above the radius."""
        return [bin for bin in self.rule(po, self.depth) if bin >= self.radius]

    def set_depth(self, depth: int) -> None:
        """Our depth changed: every peer's bins follow the rule again."""
        if depth == self.depth:
            return
        log.info("depth %d -> %d", self.depth, depth)
        self.depth = depth
        self._follow()

    def set_radius(self, radius: int) -> None:
        """Our storage radius changed: every peer's bins follow; going down, the intervals below
        the old radius are dropped so that what was passed over is pulled again."""
        if radius == self.radius:
            return
        old, self.radius = self.radius, radius
        if radius < old:
            self._forget_below(old)
        self._follow()

    def _forget_below(self, radius: int) -> None:
        for overlay in self.intervals.peers():
            for bin in self.intervals.bins(overlay):
                if bin < radius:
                    self.intervals.put(overlay, bin, Intervals(1))
        for peer in self._peers.values():
            for bin in [b for b in peer.intervals if b < radius]:
                peer.intervals[bin] = Intervals(1)

    def _follow(self) -> None:
        for peer in self._peers.values():
            if peer.started:
                self._set_bins(peer, self.bins_for(peer.po))

    def record(self, peer: bytes, bin: int, start: int, end: int) -> None:
        """A batch of `peer`'s `bin` is complete: `[start, end]` is synced (persisted at once)."""
        state = self._peers.get(peer)
        intervals = state.intervals_of(bin) if state is not None else self.intervals.get(peer, bin)
        intervals.add(start, end)
        self.intervals.put(peer, bin, intervals)
        if state is not None:
            now = self.clock()
            clock = state.clock_of(bin)
            clock.observe(state.client.cursor(bin), now)
            clock.batch(now)
        if state is not None and state.caught_up() and not state.client.settled():
            state.confirm.set()

    # -- bins -------------------------------------------------------------------------------

    def _set_bins(self, peer: _Peer, bins: list[int]) -> None:
        wanted = set(bins)
        for bin in sorted(set(peer.bins) - wanted):
            peer.bins.pop(bin).cancel()
        for bin in sorted(wanted - set(peer.bins)):
            scope = peer.bins[bin] = trio.CancelScope()
            peer.client.start_soon(self._sync_bin, peer, bin, scope)

    async def _sync_bin(self, peer: _Peer, bin: int, scope: trio.CancelScope) -> None:
        client = peer.client
        with scope:
            cursor = client.cursor(bin)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.sync, bin, True, cursor + 1, 0)
                while cursor > 0:
                    start, end, empty = peer.intervals_of(bin).next(cursor)
                    if empty:
                        break
                    await client.sync(bin, False, start, end)

    # -- status -----------------------------------------------------------------------------

    def fully_synced(self) -> bool:
        return all(self._fully_synced(peer) for peer in self._peers.values())

    def _fully_synced(self, peer: _Peer) -> bool:
        """Every pulled bin covers [1, cursor], no batch of this peer is in flight, and the
        upstream's latest cursors reply came after its latest offer (a lull between offers is
        not the end: the reply says nothing newer was there)."""
        if not peer.started or peer.client.open_batches() or not peer.client.settled():
            return False
        return peer.caught_up()

    def _bin_status(self, peer: _Peer, bin: int, now: float) -> BinStatus:
        cursor = peer.client.cursor(bin)
        clock = peer.clock_of(bin)
        clock.observe(cursor, now)  # a growth no offer or reply reported yet counts from now
        synced = tuple(peer.intervals[bin].ranges) if bin in peer.intervals else ()
        behind = clock.behind(peer.first_missing(bin), now)
        return BinStatus(bin, cursor, synced, peer.lag(bin), behind, clock.last_batch)

    def statistics(self) -> PullerStatistics:
        peers = []
        now = self.clock()
        for overlay, peer in sorted(self._peers.items()):
            bins = tuple(self._bin_status(peer, bin, now) for bin in sorted(peer.bins))
            peers.append(PeerSyncStatus(overlay, peer.po, peer.epoch, self._fully_synced(peer), bins))
        return PullerStatistics(
            depth=self.depth,
            fully_synced=all(p.fully_synced for p in peers),
            radius=self.radius,
            peers=tuple(peers),
            stats={overlay: stats.snapshot() for overlay, stats in self.stats.items()},
        )
