"""The serving side of pull syncing for one downstream peer.

Answers cursor requests; for each subscribed stream (bin, live) offers consecutive batches of up
to 128 hashes from the pull index, keeping at most `window` offers not fully served; delivers
exactly the chunks a want asks for, through the outbox class of the stream (live before
historical). A live stream waits for new chunks (`LocalStore.wait_bin`) and closes a batch after
128 hashes or `live_idle` seconds; with `UploadFirst`, a ready live offer then waits while this node
serves uploads (at most its `max_wait`). Chunks the peer itself delivered to us are not offered
back (syncer/given.py): holes of a live offer, and a range of them where an offer would start is
skipped whole, after waiting up to `skip_idle` for more of them. Nothing is ever sent unasked.

`Unsubscribe` stops the offers and is acknowledged with `Unsubscribed`; wants received before it
are still served, so the downstream's answered batches can complete. A historical stream whose
every offer has been answered may be subscribed again (for the next missing range) while its
last deliveries are still going out.

With `Provable` (this node keeps bin logs: `--provable-sync sign` or `verify`) the streams are
provable (docs/protocol.md 8.6): offers, state requests and receipts are then the business of
its `ProvenServing` (syncer/proven_upstream.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial

import trio

from localstore import ChunkDamaged, ChunkNotFound
from localstore.store import LocalStore
from streamer.connection import PeerConnection
from streamer.dispatch import Handlers
from streamer.errors import RemoteProtocolError
from streamer.messages import (
    MAX_BATCH_SIZE,
    MAX_DELIVERY_BATCH,
    OFFER_WINDOW,
    ChunkDeliveries,
    ChunkDelivery,
    CursorsReply,
    CursorsRequest,
    DeliveredChunk,
    GoodbyeCode,
    OfferedHashes,
    ProvenOffer,
    Receipt,
    RolledBack,
    SkippedOffer,
    StateRequest,
    Subscribe,
    Unsubscribe,
    Unsubscribed,
    WantedHashes,
)
from streamer.outbox import Priority
from syncer.given import GivenRanges
from syncer.offers import StreamOffers
from syncer.proven_upstream import PROOF_BYTE_KINDS, Provable, ProvenServing
from syncer.upload_first import UploadFirst

log = logging.getLogger(__name__)

DEFAULT_LIVE_IDLE = 0.05
DEFAULT_SKIP_IDLE = 0.5
"""Most seconds a live range of chunks the peer gave us waits for more of them before it is
skipped (nothing in it is offered: waiting costs the peer nothing but a later cursor)."""


Want = tuple[int, list[tuple[int, bytes]]]  # offer start, (index, address) pairs to deliver


@dataclass
class _Stream:
    offers: StreamOffers
    slots: trio.Semaphore  # one per offer not fully served
    wants_in: trio.MemorySendChannel[Want]
    wants_out: trio.MemoryReceiveChannel[Want]
    offering: trio.CancelScope = field(default_factory=trio.CancelScope)
    # where each chunk offered and not yet delivered or passed over is: (slot, length), for
    # `LocalStore.get_at` (at most `window` offers of 128: the stream's open offers)
    located: dict[bytes, tuple[int, int]] = field(default_factory=dict)


class Upstream:
    """Serves one downstream peer on one connection."""

    def __init__(
        self,
        conn: PeerConnection,
        store: LocalStore,
        *,
        window: int = OFFER_WINDOW,
        live_idle: float = DEFAULT_LIVE_IDLE,
        skip_idle: float = DEFAULT_SKIP_IDLE,
        provable: Provable | None = None,
        unwanted: Callable[[list[bytes]], None] = lambda addresses: None,
        upload_first: UploadFirst | None = None,
        given: GivenRanges | None = None,
    ) -> None:
        self.conn = conn
        self._given = given  # what the peer delivered to us: holes of our live offers to it
        self.store = store
        self._unwanted = unwanted  # told the chunks a want passed over (swarm/reserve/offer_leases.py)
        self.window = window
        self.live_idle = live_idle
        self.skip_idle = skip_idle
        self._upload_first = upload_first  # live offers wait while this node serves uploads
        self.proven = None if provable is None else ProvenServing(provable, conn, store.epoch)
        self._streams: dict[tuple[int, bool], _Stream] = {}
        self._acking: set[tuple[int, bool]] = set()  # streams whose Unsubscribed is not queued yet
        self.offered = 0
        self.delivered = 0
        self.skipped = 0  # bin IDs of chunks the peer gave us, passed over

    @property
    def subscriptions(self) -> list[tuple[int, bool]]:
        return sorted(self._streams)

    # -- messages from the downstream (called by the connection's reader) --------------------

    def handlers(self) -> Handlers:
        """What the upstream takes from the downstream: requests of cursors, subscriptions,
        wants, and (provable streams) state requests and receipts."""
        return {
            CursorsRequest: self.on_cursors_request,
            Subscribe: self.on_subscribe,
            Unsubscribe: self.on_unsubscribe,
            WantedHashes: self.on_want,
            StateRequest: self.on_state_request,
            Receipt: self.on_receipt,
            RolledBack: self.on_rolled_back,
        }

    def on_cursors_request(self, msg: CursorsRequest) -> None:
        reply = CursorsReply(epoch=self.store.epoch, cursors=tuple(self.store.cursors()))
        try:
            self.conn.send_nowait(reply, Priority.RETRIEVAL)
        except trio.WouldBlock:
            raise RemoteProtocolError(
                "too many cursor requests without reading the replies", GoodbyeCode.OVERLOADED
            ) from None

    def on_state_request(self, msg: StateRequest) -> None:
        self._proven("state request").on_state_request(msg)

    def on_receipt(self, msg: Receipt) -> None:
        self._proven("receipt").on_receipt(msg)

    def on_rolled_back(self, msg: RolledBack) -> None:
        self._proven("RolledBack").on_rolled_back(msg)

    def _proven(self, what: str) -> ProvenServing:
        if self.proven is None:
            raise RemoteProtocolError(f"{what}: this node keeps no bin logs (--provable-sync off)")
        return self.proven

    @property
    def receipts(self) -> int:
        """Receipts the downstream sent (and this node checked)."""
        return 0 if self.proven is None else self.proven.receipts

    @property
    def proof_bytes(self) -> dict[str, int]:
        """Bytes provable streams add to this connection (`syncer.proven_upstream.PROOF_BYTE_KINDS`)."""
        return dict.fromkeys(PROOF_BYTE_KINDS, 0) if self.proven is None else dict(self.proven.proof_bytes)

    def on_subscribe(self, msg: Subscribe) -> None:
        key = (msg.bin, msg.live)
        current = self._streams.get(key)
        if current is not None and not current.offers.finished():
            raise RemoteProtocolError(f"subscribe to bin {msg.bin} {_kind(msg.live)}: already subscribed")
        if not msg.live and msg.end > self.store.cursor(msg.bin):
            raise RemoteProtocolError(
                f"subscribe to bin {msg.bin} historical up to {msg.end}, beyond the cursor "
                f"{self.store.cursor(msg.bin)}"
            )
        try:
            offers = StreamOffers(msg.bin, msg.live, msg.start, msg.end, window=self.window)
        except ValueError as exc:
            raise RemoteProtocolError(f"bad subscription: {exc}") from None
        wants_in, wants_out = trio.open_memory_channel[Want](self.window)
        stream = _Stream(offers, trio.Semaphore(self.window), wants_in, wants_out)
        self._streams[key] = stream
        if msg.live and self._given is not None:
            self._given.watch(msg.bin)
        self.conn.start_soon(self._serve, key, stream)

    def on_unsubscribe(self, msg: Unsubscribe) -> None:
        key = (msg.bin, msg.live)
        if key in self._acking:
            # A downstream unsubscribes again only after subscribing again, which needs this ack:
            # a flood of Unsubscribes would otherwise queue replies without bound.
            raise RemoteProtocolError(
                f"second Unsubscribe for bin {msg.bin} {_kind(msg.live)} before its Unsubscribed went out",
                GoodbyeCode.OVERLOADED,
            )
        stream = self._streams.pop(key, None)
        if msg.live and self._given is not None:
            self._given.unwatch(msg.bin)
        if stream is not None:
            stream.offering.cancel()  # no offer can be queued after this
            stream.wants_in.close()  # what was wanted before is still delivered
        self._acking.add(key)
        # acknowledged in the stream's own class, so it follows every offer already queued
        self.conn.start_soon(self._acknowledge, key)

    async def _acknowledge(self, key: tuple[int, bool]) -> None:
        try:
            await self.conn.send(Unsubscribed(*key), Priority.of_stream(key[1]))
        finally:
            self._acking.discard(key)

    def on_want(self, msg: WantedHashes) -> None:
        stream = self._streams.get((msg.bin, msg.live))
        if stream is None:
            raise RemoteProtocolError(f"want for bin {msg.bin} {_kind(msg.live)}, which is not subscribed")
        offered = stream.offers.offered_chunks(msg.start)
        pairs = stream.offers.answer(msg.start, msg.end, msg.wanted_indices())
        wanted = {address for _, address in pairs}
        unwanted = [address for address in offered if address not in wanted]
        located = stream.located
        for address in unwanted:
            located.pop(address, None)
        self._unwanted(unwanted)
        # cannot overflow: at most `window` offers are open, and each is answered once
        stream.wants_in.send_nowait((msg.start, pairs))

    # -- streams ------------------------------------------------------------------------------

    async def _serve(self, key: tuple[int, bool], stream: _Stream) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._deliver, stream)
            with stream.offering:
                await self._offer(stream)
                # a historical stream, fully offered: once every offer is served, it is over
                for _ in range(self.window):
                    await stream.slots.acquire()
            stream.wants_in.close()
        if self._streams.get(key) is stream:
            del self._streams[key]

    async def _offer(self, stream: _Stream) -> None:
        offers = stream.offers
        bin, live = offers.bin, offers.live
        priority = Priority.of_stream(live)
        while not offers.exhausted():
            await stream.slots.acquire()
            cursor = await self._wait_for_chunks(offers) if live else self.store.cursor(bin)
            if live and self._upload_first is not None:
                cursor = await self._wait_for_uploads(self._upload_first, bin)
            rng = offers.next_range(cursor)
            assert rng is not None, "a slot is free and chunks are there"
            given = self._given.run(bin, rng[0], cursor) if live and self._given is not None else None
            if given is not None:  # what the peer gave us, from the offer's start on: skipped
                if given == cursor:  # nothing else yet: one skip (one signed state) may cover more
                    given = await self._gather_given(bin, rng[0], cursor)
                await self.conn.send(await self._skip(offers, rng[0], given), priority)
                continue
            if self.proven is not None:
                msg: OfferedHashes | ProvenOffer = await self.proven.offer(
                    offers, *rng, partial(self._offerable, stream)
                )
            else:
                hashes = [address for address, hole in self._offerable(stream, bin, *rng) if not hole]
                offers.offered(rng[0], rng[1], hashes)
                msg = OfferedHashes(bin, live, rng[0], rng[1], tuple(hashes))
            self.offered += len(msg.hashes)
            await self.conn.send(msg, priority)

    async def _gather_given(self, bin: int, start: int, end: int) -> int:
        """Wait up to `skip_idle` for more chunks while every one is a chunk the peer gave us
        (a downstream stores its pulls batch after batch); the end of that run. A chunk the peer
        did not give ends the wait at once: it is offered next, not held back."""
        assert self._given is not None
        with trio.move_on_after(self.skip_idle):
            while True:
                cursor = await self.store.wait_bin(bin, end)
                end = self._given.run(bin, start, cursor) or end
                if end < cursor:
                    break
        return end

    async def _skip(self, offers: StreamOffers, start: int, end: int) -> OfferedHashes | SkippedOffer:
        """The offer of ``[start, end]`` of a live stream, all of it chunks the peer gave us
        (syncer/given.py): nothing to offer, the range is passed over (and forgotten)."""
        assert self._given is not None
        self._given.forget_below(offers.bin, end + 1)
        self.skipped += end - start + 1
        if self.proven is not None:
            return await self.proven.skip(offers, start, end)
        offers.offered(start, end, ())
        return OfferedHashes(offers.bin, True, start, end, ())

    def _offerable(self, stream: _Stream, bin: int, start: int, end: int) -> list[tuple[bytes, bool]]:
        """``(address, hole)`` of every bin ID ``start..end``: a hole is a chunk that cannot be
        offered (evicted, or damaged: the store drops it, and its slot is read for that) or, in
        a live stream, one the peer delivered to us (syncer/given.py). Where the others are is
        kept for their delivery."""
        given = self._given
        if given is not None and stream.offers.live:
            found = self.store.offerable(bin, start, end, list(given.given_in(bin, start, end)))
            given.forget_below(bin, end + 1)
        else:
            found = self.store.offerable(bin, start, end)
        for exc in found.damaged:
            log.error("not offering a damaged chunk (dropped, to be synced again): %s", exc)
        stream.located.update(found.slots)
        return found.entries

    async def _wait_for_chunks(self, offers: StreamOffers) -> int:
        """Wait for at least one new chunk, then up to `live_idle` for a full batch."""
        first = offers.next_id
        cursor = await self.store.wait_bin(offers.bin, first - 1)
        with trio.move_on_after(self.live_idle):
            while cursor - first + 1 < MAX_BATCH_SIZE:
                cursor = await self.store.wait_bin(offers.bin, cursor)
        return self.store.cursor(offers.bin)

    async def _wait_for_uploads(self, gate: UploadFirst, bin: int) -> int:
        """Hold a ready live offer while this node serves uploads (syncer/upload_first.py); the
        cursor then, with what came meanwhile."""
        ready = gate.clock()
        held = False
        while (seconds := gate.wait(ready)) > 0:
            held = True
            await trio.sleep(seconds)
        if held:
            gate.held(gate.clock() - ready)
        return self.store.cursor(bin)

    async def _deliver(self, stream: _Stream) -> None:
        """Send each want's chunks as they are read, up to MAX_DELIVERY_BATCH in a frame (a lone
        one as a `ChunkDelivery`)."""
        bin, live = stream.offers.bin, stream.offers.live
        priority = Priority.of_stream(live)
        async for start, pairs in stream.wants_out:
            for group in self._wanted_chunks(stream, pairs):
                delivery: ChunkDelivery | ChunkDeliveries
                if len(group) == 1:
                    delivery = ChunkDelivery(bin, live, start, group[0].index, group[0].data)
                else:
                    delivery = ChunkDeliveries(bin, live, start, tuple(group))
                try:  # queued without yielding: the writer then sends the batch in few writes
                    self.conn.send_nowait(delivery, priority)
                except trio.WouldBlock:
                    await self.conn.send(delivery, priority)
                self.delivered += len(group)
            stream.slots.release()
            await trio.lowlevel.checkpoint()

    def _wanted_chunks(
        self, stream: _Stream, pairs: list[tuple[int, bytes]]
    ) -> Iterator[list[DeliveredChunk]]:
        """The wanted chunks still in the store, each with its index in the offer, read as they
        are needed: groups of up to MAX_DELIVERY_BATCH."""
        located = stream.located
        group: list[DeliveredChunk] = []
        for index, address in pairs:
            where = located.pop(address, None)
            try:
                chunk = self.store.get(address) if where is None else self.store.get_at(address, *where)
            except ChunkNotFound:
                log.error("offered chunk %s is gone; cannot deliver it", address.hex())
                continue
            except ChunkDamaged as exc:
                log.error("cannot deliver an offered chunk: %s", exc)
                continue
            group.append(DeliveredChunk(index, chunk.data))
            if len(group) == MAX_DELIVERY_BATCH:
                yield group
                group = []
        if group:
            yield group


def _kind(live: bool) -> str:
    return "live" if live else "historical"
