"""PeerPuller: pull syncing from one connected upstream, per bin, historical and live.

On start it asks for the cursors and the store epoch; a changed epoch voids every interval kept
for that peer (its store was wiped: a new cycle, counted as a reset). For each bin the policy
names it then runs a historical stream over the missing ranges up to the cursor, and a live
stream from cursor + 1 on. Every offer is answered with a want (only chunks neither stored nor
requested elsewhere); at most `max_incomplete` batches per stream wait for their chunks, which
bounds memory whatever the backlog; a batch's range joins the intervals only when all its chunks
are stored. The node-wide side (tracker, intervals, statistics) is `syncer.downstream.Puller`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio

from localstore import BINS, Chunk, InvalidChunk
from streamer.connection import PeerConnection
from streamer.errors import RemoteProtocolError
from streamer.messages import (
    ChunkDelivery,
    CursorsReply,
    CursorsRequest,
    GoodbyeCode,
    OfferedHashes,
    Subscribe,
    Unsubscribe,
    Unsubscribed,
    WantedHashes,
)
from streamer.outbox import Priority
from streamer.requests import RetrieveFailed
from syncer.batches import CompletedBatch, SyncViolation, UnsolicitedDelivery
from syncer.deliveries import DeliveryIntake
from syncer.intervals import Intervals
from syncer.upstream import DEFAULT_WINDOW, stream_priority

if TYPE_CHECKING:
    from syncer.downstream import Puller

__all__ = ["Fetch", "PeerPuller", "SyncPolicy"]

log = logging.getLogger(__name__)

#: Which of a peer's bins to pull: (proximity of the peer to us, our depth) -> bins.
SyncPolicy = Callable[[int, int], list[int]]
#: A direct request for one chunk from this peer (used when a delivery failed).
Fetch = Callable[[bytes], Awaitable[bytes]]


class PeerPuller:
    """Pulls from one upstream peer over one connection."""

    def __init__(
        self,
        puller: Puller,
        conn: PeerConnection,
        po: int,
        *,
        policy: SyncPolicy,
        depth: Callable[[], int],
        fetch: Fetch,
    ) -> None:
        self.puller = puller
        self.conn = conn
        self.overlay = conn.overlay
        self.po = po
        self.policy = policy
        self.depth = depth
        self.fetch = fetch
        self.stats = puller.stats_of(self.overlay)
        self.deliveries = DeliveryIntake(puller, conn, self.stats)  # run by the connection's owner
        self.epoch: int | None = None
        self.cursors: list[int] = [0] * BINS  # highest bin ID known, from replies and offers
        self._replied: list[int] = [0] * BINS  # the cursors of the last reply
        self.intervals: dict[int, Intervals] = {}
        self._bins: dict[int, trio.CancelScope] = {}
        self._bin_done: dict[int, trio.Event] = {}
        self._subscribed: set[tuple[int, bool]] = set()  # streams the upstream is serving us
        self._unsubscribing: dict[tuple[int, bool], trio.Event] = {}  # set by the Unsubscribed ack
        self._streams: dict[tuple[int, bool], trio.MemorySendChannel[OfferedHashes]] = {}
        self._unanswered: dict[tuple[int, bool], int] = {}  # offers received, want not sent yet
        self._cursor_reply: trio.MemorySendChannel[CursorsReply] | None = None
        self._progress = trio.lowlevel.ParkingLot()  # woken whenever one of our batches completes
        self.started = trio.Event()

    # -- lifetime -----------------------------------------------------------------------------

    async def run(self) -> None:
        """Learn cursors and epoch, start the bins the policy names, keep the cursors fresh."""
        reply = await self._ask_cursors()
        if reply.epoch != self.conn.remote.epoch:
            raise RemoteProtocolError(
                f"cursors reply gives store epoch {reply.epoch}, "
                f"the handshake signed {self.conn.remote.epoch}"
            )
        self.epoch = reply.epoch
        if self.puller.intervals.check_epoch(self.overlay, reply.epoch):
            self.stats.add("resets", 1, self.puller.clock())
            log.info("peer %s has a new store epoch: its intervals were voided", self.overlay.hex()[:12])
        self.intervals = self.puller.intervals.bins(self.overlay)
        self._take_cursors(reply)
        self.set_bins(self.policy(self.po, self.depth()))
        self.started.set()
        while True:
            await trio.sleep(self.puller.config.cursor_refresh)
            self._take_cursors(await self._ask_cursors())

    async def _ask_cursors(self) -> CursorsReply:
        send, receive = trio.open_memory_channel[CursorsReply](1)
        self._cursor_reply = send
        await self.conn.send(CursorsRequest(), Priority.RETRIEVAL)
        with trio.move_on_after(self.puller.config.cursor_timeout):
            return await receive.receive()
        raise RemoteProtocolError(f"no cursors reply within {self.puller.config.cursor_timeout:g}s")

    def _take_cursors(self, reply: CursorsReply) -> None:
        """Take a cursors reply. Replies must never go back; they may lag our view, though:
        a live offer sent after the snapshot can be answered before the reply is read here."""
        if reply.epoch != self.epoch:
            raise RemoteProtocolError("store epoch changed within one connection")
        for bin, cursor in enumerate(reply.cursors[:BINS]):
            if cursor < self._replied[bin]:
                raise RemoteProtocolError(
                    f"cursor of bin {bin} went back from {self._replied[bin]} to {cursor}"
                )
            self._replied[bin] = cursor
            self.cursors[bin] = max(self.cursors[bin], cursor)

    def set_bins(self, bins: list[int]) -> None:
        """Pull exactly these bins: start the new ones, stop those no longer wanted.

        Intervals of stopped bins stay stored, so pulling them again later resumes. A stopped
        bin unsubscribes before a later restart of the same bin may subscribe again, so the two
        can never reach the upstream in the wrong order.
        """
        wanted = set(bins)
        for bin in sorted(set(self._bins) - wanted):
            self._bins.pop(bin).cancel()
        for bin in sorted(wanted - set(self._bins)):
            scope = trio.CancelScope()
            self._bins[bin] = scope
            # chain on the latest run of this bin, even one still waiting for its own
            # predecessor: two runs of a bin must never overlap (they share _subscribed)
            previous = self._bin_done.get(bin)
            done = self._bin_done[bin] = trio.Event()
            self.conn.start_soon(self._sync_bin, bin, scope, previous, done)

    @property
    def bins(self) -> list[int]:
        return sorted(self._bins)

    async def _sync_bin(
        self, bin: int, scope: trio.CancelScope, previous: trio.Event | None, done: trio.Event
    ) -> None:
        try:
            if previous is not None:
                # the bin ran before: wait until the upstream acknowledged its Unsubscribe (no
                # stale offer can follow) and the batches it left open are complete (or the new
                # subscription's first offer could repeat one of them)
                await previous.wait()
                for live in (False, True):
                    acked = self._unsubscribing.get((bin, live))
                    if acked is not None:
                        await self._wait_for(acked, f"Unsubscribed for bin {bin}")
                await self._wait_until(
                    lambda: not self._incomplete(bin, False) and not self._incomplete(bin, True), bin
                )
            with scope:
                cursor = self.cursors[bin]
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._pull, bin, True, cursor + 1, 0)
                    await self._historical(bin, cursor)
        finally:
            # Stop what the upstream still serves us. The Unsubscribe goes out from a connection
            # task (it may have to wait for room in the outbox); until its ack arrives, offers of
            # the stream are ignored, and a restart of the bin waits for that ack.
            for live in (False, True):
                if (bin, live) in self._subscribed:
                    self._subscribed.discard((bin, live))
                    self._unsubscribing[(bin, live)] = trio.Event()
                    self.conn.start_soon(self.conn.send, Unsubscribe(bin, live), stream_priority(live))
            done.set()

    async def _historical(self, bin: int, ceiling: int) -> None:
        while ceiling > 0:
            start, end, empty = self._intervals(bin).next(ceiling)
            if empty:
                return
            await self._pull(bin, False, start, end)
            # every batch of that range is complete (or we would not be here): on to the next gap

    # -- one stream ---------------------------------------------------------------------------

    async def _pull(self, bin: int, live: bool, start: int, end: int) -> None:
        key = (bin, live)
        send, receive = trio.open_memory_channel[OfferedHashes](DEFAULT_WINDOW)
        self._streams[key] = send
        self._unanswered[key] = 0
        priority = stream_priority(live)
        expected = start
        try:
            await self.conn.send(Subscribe(bin, live, start, end), priority)
            self._subscribed.add(key)
            async for offer in receive:
                if offer.start != expected or (not live and offer.end > end):
                    raise RemoteProtocolError(
                        f"offer [{offer.start}, {offer.end}] for bin {bin} does not continue "
                        f"the stream at {expected}"
                    )
                expected = offer.end + 1
                await self._wait_until(
                    lambda: self._incomplete(bin, live) < self.puller.config.max_incomplete, bin
                )
                await self._answer(offer, priority)
                if not live and offer.end == end:
                    self._subscribed.discard(key)  # the upstream ends a historical stream itself
                    break
        finally:
            if self._streams.get(key) is send:
                del self._streams[key]
        await self._wait_until(lambda: self._incomplete(bin, live) == 0, bin)

    async def _answer(self, offer: OfferedHashes, priority: Priority) -> None:
        now = self.puller.clock()
        if offer.end > self.cursors[offer.bin]:
            self.cursors[offer.bin] = offer.end
        try:
            decision = self.puller.tracker.offer(
                self.overlay,
                offer.bin,
                offer.live,
                offer.start,
                offer.end,
                offer.hashes,
                self.puller.store.has,
            )
        except SyncViolation as exc:
            raise RemoteProtocolError(str(exc)) from None
        self.stats.add("offered", len(offer.hashes), now)
        self.stats.add("wanted", len(decision.wanted), now)
        want = WantedHashes.from_indices(offer.bin, offer.live, offer.start, offer.end, decision.wanted)
        # The offer counts as answered before the want is queued: the writer may send the want and
        # the upstream's next offer may be read before this task resumes from send(). And the want
        # must go out even if the bin is being stopped, or the tracker waits for its batch forever.
        self._unanswered[(offer.bin, offer.live)] -= 1
        with trio.CancelScope(shield=True):
            await self.conn.send(want, priority)
        if decision.completed is not None:
            self.batch_completed(decision.completed)

    def _incomplete(self, bin: int, live: bool) -> int:
        return self.puller.tracker.incomplete(self.overlay, bin, live)

    async def _wait_for(self, event: trio.Event, what: str) -> None:
        timeout = self.puller.config.batch_timeout
        with trio.move_on_after(timeout):
            await event.wait()
            return
        raise RemoteProtocolError(f"no {what} within {timeout:g}s")

    async def _wait_until(self, condition: Callable[[], bool], bin: int) -> None:
        timeout = self.puller.config.batch_timeout
        with trio.move_on_after(timeout) as scope:
            while not condition():
                await self._progress.park()
        if scope.cancelled_caught:
            raise RemoteProtocolError(
                f"wanted chunks of bin {bin} not delivered within {timeout:g}s", GoodbyeCode.PROTOCOL_ERROR
            )

    # -- messages from the upstream (called by the connection's reader) -----------------------

    def on_cursors_reply(self, msg: CursorsReply) -> None:
        waiter, self._cursor_reply = self._cursor_reply, None
        if waiter is None:
            raise RemoteProtocolError("cursors reply without a request")
        waiter.send_nowait(msg)

    def on_offer(self, msg: OfferedHashes) -> None:
        key = (msg.bin, msg.live)
        stream = self._streams.get(key)
        if stream is None:
            if key in self._unsubscribing or key in self._subscribed:
                # the stream is being stopped (its Unsubscribe is queued, or about to be) and this
                # offer was sent before the upstream read it: it crossed on the wire
                return
            raise RemoteProtocolError(f"offer for bin {msg.bin} {_kind(msg.live)}, which is not subscribed")
        if self._unanswered[key] >= DEFAULT_WINDOW:
            raise RemoteProtocolError(f"more than {DEFAULT_WINDOW} unanswered offers for bin {msg.bin}")
        self._unanswered[key] += 1
        stream.send_nowait(msg)  # cannot block: the channel holds DEFAULT_WINDOW

    def on_unsubscribed(self, msg: Unsubscribed) -> None:
        done = self._unsubscribing.pop((msg.bin, msg.live), None)
        if done is None:
            raise RemoteProtocolError(
                f"Unsubscribed for bin {msg.bin} {_kind(msg.live)}, which we did not ask"
            )
        done.set()

    async def on_delivery(self, msg: ChunkDelivery) -> None:
        """Check that we wanted it, then queue it to be verified and stored (`DeliveryIntake`).

        Waits only while this peer's intake is full, which stops the reader: backpressure.
        """
        try:
            address = self.puller.tracker.delivery(self.overlay, msg.bin, msg.live, msg.start, msg.index)
        except UnsolicitedDelivery as exc:
            self.stats.add("unsolicited", 1, self.puller.clock())
            raise RemoteProtocolError(str(exc), GoodbyeCode.UNSOLICITED_DELIVERY) from None
        await self.deliveries.put(Chunk(address, msg.data), msg)

    # -- completion and re-requests -----------------------------------------------------------

    def batch_completed(self, done: CompletedBatch) -> None:
        intervals = self._intervals(done.bin)
        intervals.add(done.start, done.end)
        self.puller.intervals.put(self.overlay, done.bin, intervals)
        self._progress.unpark_all()

    def _intervals(self, bin: int) -> Intervals:
        intervals = self.intervals.get(bin)
        if intervals is None:
            intervals = self.intervals[bin] = Intervals()
        return intervals

    def fetch_soon(self, address: bytes) -> None:
        """Fetch a chunk this peer offered by a direct request (its first request failed)."""
        self.conn.start_soon(self._fetch, address)

    async def _fetch(self, address: bytes) -> None:
        try:
            data = await self.fetch(address)
            self.puller.store_chunk(Chunk(address, data))
        except (RetrieveFailed, InvalidChunk) as exc:
            log.warning(
                "re-request of %s from %s failed: %s", address.hex()[:12], self.overlay.hex()[:12], exc
            )
            again = self.puller.tracker.request_failed(address, self.overlay)
            if again is not None:
                other = self.puller.peer(again.peer)
                if other is not None:
                    other.fetch_soon(address)

    # -- status -------------------------------------------------------------------------------

    def fully_synced(self) -> bool:
        """Every pulled bin covers [1, cursor] and no batch of this peer is in flight."""
        if not self.started.is_set() or self.puller.tracker.open_batches(self.overlay):
            return False
        return all(self._missing(bin) == 0 for bin in self._bins)

    def _missing(self, bin: int) -> int:
        cursor = self.cursors[bin]
        intervals = self.intervals.get(bin)
        synced = (
            0
            if intervals is None
            else sum(min(e, cursor) - s + 1 for s, e in intervals.ranges if s <= cursor)
        )
        return cursor - synced

    def status(self) -> dict[str, object]:
        """The `/sync` view of this peer (bins and loss statistics)."""
        bins = []
        for bin in self.bins:
            intervals = self.intervals.get(bin)
            bins.append(
                {
                    "bin": bin,
                    "cursor": self.cursors[bin],
                    "synced": [list(r) for r in intervals.ranges] if intervals else [],
                    "lag": self._missing(bin),
                }
            )
        return {
            "overlay": self.overlay.hex(),
            "po": self.po,
            "epoch": self.epoch,
            "fully_synced": self.fully_synced(),
            "bins": bins,
        }


def _kind(live: bool) -> str:
    return "live" if live else "historical"
