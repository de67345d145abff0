"""PullSyncClient: pulling from one upstream over one connection, a thin trio shell.

Every rule lives in the `DownstreamSession` (pure), which judges each message both ways; this
class does the I/O around it and keeps the seam small, as bee's pullsync does:

- `cursors()` asks the upstream for its store epoch and cursors;
- `sync(bin, live, start, end)` pulls one stream: historical `[start, end]` (returns when every
  batch of it is complete) or live from `start` on (runs until cancelled). Each completed batch
  is reported through the `completed` callback as it completes, in whatever order that happens;
  every offer reports the cursor it showed through `observed` (when the upstream's IDs became
  known: the lag in seconds, syncer/lag.py).

Offers are answered with what `Transfers` says to want (one transfer per chunk, node-wide); at
most `max_incomplete` batches per stream, on average over the peer's streams, wait for their
chunks (a stream may borrow up to `max_incomplete_lent` from the others while they have room),
which bounds memory, and what a crash makes the node fetch again, whatever the backlog.
Deliveries go to this peer's `DeliveryIntake`, which verifies and stores them through the
node's `ChunkIntake`. Stopping a stream (cancelling its `sync`) unsubscribes; a new `sync` of
the same stream waits until the upstream acknowledged that and the old batches completed.

Verifying provable streams (`Verifying`, docs/protocol.md 8.6), a `sync` first makes sure the
session holds the upstream's signed state its stream is anchored to (syncer/anchors.py); the
states it accepts are persisted, and its `Takeover` (syncer/takeover.py) records
what it took over as batches complete and sends the receipts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import trio

from chunks import Chunk, InvalidChunk
from streamer.dispatch import Handlers
from streamer.errors import RemoteProtocolError
from streamer.messages import (
    OFFER_WINDOW,
    ChunkDeliveries,
    ChunkDelivery,
    CursorsReply,
    CursorsRequest,
    GoodbyeCode,
    Message,
    OfferedHashes,
    ProvenOffer,
    SkippedOffer,
    StateReply,
    Subscribe,
    Unsubscribe,
    Unsubscribed,
    WantedHashes,
)
from streamer.outbox import Priority
from streamer.requests import RetrieveFailed
from syncer.anchors import StateAnchors
from syncer.batches import CompletedBatch
from syncer.deliveries import DeliveryIntake
from syncer.given import GivenRanges
from syncer.intake import ChunkIntake
from syncer.pull_config import PullerConfig
from syncer.session import DownstreamSession
from syncer.session_events import (
    ChunkArrived,
    ChunksArrived,
    CursorsReceived,
    Offer,
    OfferReceived,
    StateAccepted,
    StateSuperseded,
    StreamKey,
    UnsubscribeAcked,
    UpstreamMessage,
    stream_name,
)
from syncer.stats import PeerStats
from syncer.takeover import Takeover, Verifying
from syncer.transfers import Transfers

__all__ = ["Completed", "Fetch", "PullSyncClient", "SyncConnection", "Verifying"]

log = logging.getLogger(__name__)

#: A direct request for one chunk from this peer (used when a delivery failed).
Fetch = Callable[[bytes], Awaitable[bytes]]
#: Reports a completed batch: (bin, start, end) of the upstream's pull index is synced.
Completed = Callable[[int, int, int], None]
#: (bin, cursor): an offer showed the upstream's cursor of `bin` (for the lag in seconds)
Observed = Callable[[int, int], None]


class SyncConnection(Protocol):
    """What the client uses of a peer connection."""

    @property
    def overlay(self) -> bytes: ...

    async def send(self, msg: Message, priority: Priority = ...) -> None: ...

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None: ...

    def broke_protocol(self, violation: RemoteProtocolError) -> None: ...


class PullSyncClient:
    """The downstream role on one connection."""

    def __init__(
        self,
        conn: SyncConnection,
        handshake_epoch: int,
        *,
        transfers: Transfers,
        intake: ChunkIntake,
        stats: PeerStats,
        fetch: Fetch,
        completed: Completed,
        config: PullerConfig | None = None,
        clock: Callable[[], float] = time.time,
        verifying: Verifying | None = None,
        observed: Observed | None = None,
        given: GivenRanges | None = None,
    ) -> None:
        self.conn = conn
        self._observed = observed
        self.overlay = conn.overlay
        self.epoch = handshake_epoch
        self.verifying = verifying
        logs = verifying.logs if verifying else None
        self.session = DownstreamSession(conn.overlay, handshake_epoch, logs=logs)
        self.transfers = transfers
        self.intake = intake
        self.stats = stats
        self.config = config or PullerConfig()
        self.clock = clock
        self._fetch = fetch
        self._completed = completed
        self.deliveries = DeliveryIntake(intake, stats, conn.broke_protocol, clock=clock, given=given)
        self._offers: dict[StreamKey, trio.MemorySendChannel[OfferReceived]] = {}
        self._cursors: trio.MemorySendChannel[CursorsReceived] | None = None
        self._progress = trio.lowlevel.ParkingLot()  # woken by completions, acks, streams ending
        self._anchors = StateAnchors(self.session, conn.send, self.config.cursor_timeout)
        self.takeover = (
            Takeover(
                verifying,
                self.session,
                conn,
                intake.has,
                upstream=self.overlay,
                epoch=handshake_epoch,
                interval=self.config.receipt_interval,
            )
            if verifying is not None
            else None
        )
        transfers.attach(self.overlay, self)

    def close(self) -> None:
        """The connection ended: count the wanted chunks it never delivered, release its batches."""
        self.stats.add("missing", self.session.undelivered(), self.clock())
        self.transfers.detach(self.overlay)

    # -- the seam ---------------------------------------------------------------------------

    async def cursors(self) -> CursorsReceived:
        """The upstream's epoch and cursors (as known now: offers may have shown higher ones)."""
        send, receive = trio.open_memory_channel[CursorsReceived](1)
        self._cursors = send
        try:
            # a request of a call cancelled meanwhile may still wait for its reply: take that one
            if not self.session.cursors_pending:
                self.session.send(CursorsRequest())
                await self.conn.send(CursorsRequest(), Priority.RETRIEVAL)
            timeout = self.config.cursor_timeout
            with trio.move_on_after(timeout):
                return await receive.receive()
            raise RemoteProtocolError(f"no cursors reply within {timeout:g}s")
        finally:
            if self._cursors is send:
                self._cursors = None

    def cursor(self, bin: int) -> int:
        return self.session.cursor(bin)

    def settled(self) -> bool:
        """No offer has arrived since the upstream's latest cursors reply."""
        return self.session.settled

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run a task for the connection's life; a protocol violation in it drops the peer."""
        self.conn.start_soon(fn, *args)

    async def sync(self, bin: int, live: bool, start: int, end: int) -> None:
        """Pull one stream; see the module docstring."""
        key = (bin, live)
        await self._wait_until(lambda: not self._busy(key), f"{stream_name(*key)} to be free again")
        await self._anchors.anchor(bin, start - 1 if live else end, live)
        send, receive = trio.open_memory_channel[OfferReceived](OFFER_WINDOW)
        self._offers[key] = send
        priority = Priority.of_stream(live)
        try:
            subscribe = Subscribe(bin, live, start, end)
            self.session.send(subscribe)
            await self.conn.send(subscribe, priority)
            while True:
                event = await self._next_offer(receive, key)
                await self._wait_until(lambda: self._may_want(key), f"wanted chunks of {stream_name(*key)}")
                await self._answer(event.offer, priority)
                if event.last:
                    break
            await self._wait_until(lambda: not self._incomplete(key), f"wanted chunks of {stream_name(*key)}")
        finally:
            del self._offers[key]
            if self.session.subscribed(key):
                # Queued from a connection task: it may have to wait for room in the outbox. Until
                # the ack arrives, offers of the stream are ignored and a new sync of it waits.
                self.session.send(Unsubscribe(bin, live))
                self.conn.start_soon(self.conn.send, Unsubscribe(bin, live), priority)
            self._progress.unpark_all()

    async def _next_offer(
        self, receive: trio.MemoryReceiveChannel[OfferReceived], key: StreamKey
    ) -> OfferReceived:
        """The stream's next offer. A live stream waits for new chunks as long as it takes; a
        historical one is owed its next offer (every offer so far is answered, and the cursor
        said the chunks are there): one that does not come within the batch timeout breaks
        the protocol, or a peer claiming a cursor it never offers (2^64 - 2, with a signed
        state to match) would hold the sync, and fully_synced, for good."""
        if key[1]:
            return await receive.receive()
        timeout = self.config.batch_timeout
        with trio.move_on_after(timeout):
            return await receive.receive()
        raise RemoteProtocolError(
            f"no offer of {stream_name(*key)} within {timeout:g}s (cursor {self.cursor(key[0])})",
            GoodbyeCode.PROTOCOL_ERROR,
        )

    def _busy(self, key: StreamKey) -> bool:
        """A sync of the stream runs, its Unsubscribed is pending, or batches it left are open."""
        return key in self._offers or self.session.active(key) or self._incomplete(key) > 0

    def open_batches(self) -> int:
        return self.transfers.open_batches(self.overlay)

    async def _answer(self, offer: Offer, priority: Priority) -> None:
        wanted = self.transfers.offer(self.overlay, offer, self.intake.unwanted)
        want = WantedHashes.from_indices(offer.bin, offer.live, offer.start, offer.end, wanted)
        self.session.send(want)
        now = self.clock()
        self.stats.add("offered", len(offer.hashes), now)
        self.stats.add("wanted", len(wanted), now)
        # The want must go out even if the stream is being stopped, or its batch waits forever;
        # it is queued before the stream's Unsubscribe, in the same priority class.
        with trio.CancelScope(shield=True):
            await self.conn.send(want, priority)

    def _incomplete(self, key: StreamKey) -> int:
        return self.transfers.incomplete(self.overlay, *key)

    def _may_want(self, key: StreamKey) -> bool:
        """Room for another batch of the stream: below `max_incomplete` of its own, or up to
        `max_incomplete_lent` while the peer's streams together stay below `max_incomplete`
        per non-empty bin."""
        config, mine = self.config, self._incomplete(key)
        if mine < config.max_incomplete:
            return True
        pool = config.max_incomplete * self.session.nonempty_bins()
        return mine < config.max_incomplete_lent and self.open_batches() < pool

    async def _wait_until(self, condition: Callable[[], bool], what: str) -> None:
        if condition():  # the usual case: no timeout scope to set up and tear down (per offer)
            return
        timeout = self.config.batch_timeout
        with trio.move_on_after(timeout) as scope:
            while not condition():
                await self._progress.park()
        if scope.cancelled_caught:
            raise RemoteProtocolError(f"waited {timeout:g}s for {what}", GoodbyeCode.PROTOCOL_ERROR)

    # -- messages from the upstream (the connection's reader) -------------------------------

    def handlers(self) -> Handlers:
        """What the client takes from the upstream; each waits while the delivery intake is full."""
        return dict.fromkeys(
            (
                ChunkDeliveries,
                ChunkDelivery,
                OfferedHashes,
                ProvenOffer,
                SkippedOffer,
                StateReply,
                CursorsReply,
                Unsubscribed,
            ),
            self.receive,
        )

    async def receive(
        self,
        msg: UpstreamMessage,
    ) -> None:
        """Judge a message through the session and act on it; waits only while this peer's
        delivery intake is full (which stops the reader: backpressure)."""
        try:
            event = self.session.receive(msg)
        except RemoteProtocolError as exc:
            if exc.code == GoodbyeCode.UNSOLICITED_DELIVERY:
                self.stats.add("unsolicited", 1, self.clock())
            if self.takeover is not None:
                self.takeover.keep_evidence()
            raise
        if isinstance(event, ChunksArrived):
            await self.deliveries.put_many(event.chunks)
        elif isinstance(event, ChunkArrived):
            await self.deliveries.put(Chunk(event.address, event.delivery.data))
        elif isinstance(event, OfferReceived):
            if self._observed is not None:
                self._observed(event.offer.bin, self.session.cursor(event.offer.bin))
            if self.takeover is not None:
                self.takeover.offer_verified(event)
            # cannot block: the session allows at most OFFER_WINDOW unanswered offers
            self._offers[(event.offer.bin, event.offer.live)].send_nowait(event)
        elif isinstance(event, StateAccepted | StateSuperseded):
            if isinstance(event, StateAccepted) and event.latest and self.verifying is not None:
                self.verifying.proofs.accept(self.overlay, event.state)
            self._anchors.answered(event)
        elif isinstance(event, CursorsReceived):
            waiter, self._cursors = self._cursors, None
            if waiter is not None:  # else the call that asked was cancelled: nothing waits
                waiter.send_nowait(event)
        elif isinstance(event, UnsubscribeAcked):
            self._progress.unpark_all()
        # OfferCrossed: it crossed our Unsubscribe; the upstream has forgotten it

    # -- the transfers' callbacks -----------------------------------------------------------

    def batch_completed(self, done: CompletedBatch) -> None:
        self._completed(done.bin, done.start, done.end)
        if self.takeover is not None:
            self.takeover.batch_completed(done)
        self._progress.unpark_all()

    def fetch_soon(self, address: bytes) -> None:
        self.conn.start_soon(self._fetch_again, address)

    async def _fetch_again(self, address: bytes) -> None:
        try:
            self.intake.store(Chunk(address, await self._fetch(address)))
        except (RetrieveFailed, InvalidChunk) as exc:
            log.warning(
                "re-request of %s from %s failed: %s", address.hex()[:12], self.overlay.hex()[:12], exc
            )
            self.transfers.request_failed(address, self.overlay)
