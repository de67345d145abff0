"""DownstreamSession: the pulling side's protocol rules for one connection, as a pure state machine.

The mirror of the upstream's `StreamOffers`, in the manner of h11: every pull-sync message that
crosses the connection passes through it, ours (`send`) and the peer's (`receive`). It keeps what
the rules need (the store epoch the handshake signed, the cursors, each stream's phase, the offers
not yet answered, the chunks wanted and not yet delivered: syncer/wanted.py) and nothing else: it
does no I/O, knows no time and chooses nothing. Which chunks to want, when to subscribe and when
to stop are the client's and the puller's business.

`receive` returns what a message means (an event) or raises `RemoteProtocolError` naming the rule
the peer broke and the Goodbye code for it (docs/protocol.md, section 8.2, "Violations"). `send`
raises `LocalProtocolError` when this node itself would break a rule: a bug here, never the peer's.

With ``logs`` (a `ProvenLogs`: this node verifies provable streams, `--provable-sync verify`) the
session also holds the upstream to its signed states (section 8.6): every offer must be a
`ProvenOffer` (or, for a live range of chunks we gave the upstream, a `SkippedOffer`) whose
proof checks out, and every state it accepts must extend or be a prefix of the ones accepted
before. Without, a `ProvenOffer` is taken for its entries and holes alone, a `SkippedOffer` for
its range.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from enum import Enum

from pot import MAX_PO, proximity
from streamer.errors import LocalProtocolError, RemoteProtocolError
from streamer.messages import (
    OFFER_WINDOW,
    ChunkDeliveries,
    ChunkDelivery,
    CursorsReply,
    CursorsRequest,
    GoodbyeCode,
    OfferedHashes,
    ProvenOffer,
    Receipt,
    RolledBack,
    SkippedOffer,
    StateReply,
    StateRequest,
    Subscribe,
    Unsubscribe,
    Unsubscribed,
    WantedHashes,
)
from syncer.intervals import MAX_ID
from syncer.provable import ProvenLogs
from syncer.session_events import (
    CursorsReceived,
    Offer,
    OfferCrossed,
    OfferReceived,
    SessionEvent,
    StreamKey,
    UnsubscribeAcked,
    UpstreamMessage,
    stream_name,
)
from syncer.wanted import WantedChunks

__all__ = ["DownstreamSession"]

BINS = MAX_PO + 1
_PREFIXES = struct.Struct(">I28x")  # the first 32 bits of each address of a run of addresses


class _Phase(Enum):
    SUBSCRIBED = "subscribed"
    UNSUBSCRIBING = "unsubscribing"


@dataclass
class _Stream:
    end: int  # the subscription's last bin ID (0: live, open-ended)
    next_start: int  # where the next offer must start
    unanswered: deque[Offer]
    phase: _Phase = _Phase.SUBSCRIBED
    offered_all: bool = False  # historical: its last offer has arrived


class DownstreamSession:
    """The pulling side of one connection: judges every pull-sync message both ways."""

    def __init__(
        self,
        upstream: bytes,
        handshake_epoch: int,
        *,
        window: int = OFFER_WINDOW,
        logs: ProvenLogs | None = None,
    ) -> None:
        self.upstream = upstream  # its overlay: an offered chunk must lie in the stream's bin of it
        self._upstream_prefix = int.from_bytes(upstream[:4], "big")
        self.handshake_epoch = handshake_epoch
        self.window = window
        self.logs = logs  # None: this node does not verify provable streams
        self.epoch: int | None = None  # from the first cursors reply
        self._replied = [0] * BINS  # cursors of the last reply: they never go back
        self._cursors = [0] * BINS  # highest bin ID known, from replies and offers
        self._cursors_asked = False
        self._offered_since_reply = False
        self._streams: dict[StreamKey, _Stream] = {}
        self._wanted = WantedChunks()

    # -- what the client may ask ------------------------------------------------------------

    def cursor(self, bin: int) -> int:
        """The highest bin ID of `bin` known so far (0: none)."""
        return self._cursors[bin]

    def nonempty_bins(self) -> int:
        """Bins of the upstream known to hold chunks: one historical stream each."""
        return sum(1 for cursor in self._cursors if cursor)

    def subscribed(self, key: StreamKey) -> bool:
        """The stream is open: offers of it are expected (an Unsubscribe is still allowed)."""
        stream = self._streams.get(key)
        return stream is not None and stream.phase is _Phase.SUBSCRIBED

    def unsubscribing(self, key: StreamKey) -> bool:
        """We sent an Unsubscribe for the stream and its Unsubscribed has not arrived."""
        stream = self._streams.get(key)
        return stream is not None and stream.phase is _Phase.UNSUBSCRIBING

    def active(self, key: StreamKey) -> bool:
        """Subscribed or unsubscribing: a new Subscribe to the stream must wait."""
        return key in self._streams

    @property
    def subscriptions(self) -> list[StreamKey]:
        return sorted(key for key, s in self._streams.items() if s.phase is _Phase.SUBSCRIBED)

    @property
    def settled(self) -> bool:
        """The upstream answered a cursors request and no offer has arrived since: what it held
        then is all there is to know of (`Puller.fully_synced` needs this, or a lull between
        two live offers would pass for the end of the sync)."""
        return self.epoch is not None and not self._offered_since_reply

    @property
    def cursors_pending(self) -> bool:
        """We sent a `CursorsRequest` whose reply has not arrived."""
        return self._cursors_asked

    def undelivered(self) -> int:
        """Chunks wanted from the peer and not delivered yet (lost if the connection ends now)."""
        return len(self._wanted)

    # -- what we send -----------------------------------------------------------------------

    def request_state(self, bin: int, size: int) -> StateRequest:
        """The `StateRequest` to send for the upstream's state of ``bin`` at ``size`` (verifying)."""
        if self.logs is None:
            raise LocalProtocolError("this session does not verify provable streams")
        return self.logs.request(bin, size)

    def send(self, msg: CursorsRequest | Subscribe | Unsubscribe | WantedHashes | Receipt) -> None:
        """Record a message we are about to send; `LocalProtocolError` if it breaks a rule."""
        if isinstance(msg, Receipt):
            if self.logs is None:
                raise LocalProtocolError("a receipt from a session that verifies nothing")
        elif isinstance(msg, WantedHashes):
            self._send_want(msg)
        elif isinstance(msg, Subscribe):
            self._send_subscribe(msg)
        elif isinstance(msg, Unsubscribe):
            self._send_unsubscribe(msg)
        elif isinstance(msg, CursorsRequest):
            if self._cursors_asked:
                raise LocalProtocolError("a cursors request is already waiting for its reply")
            self._cursors_asked = True
        else:
            raise LocalProtocolError(f"{type(msg).__name__} is not a downstream message")

    def _send_subscribe(self, msg: Subscribe) -> None:
        key = (msg.bin, msg.live)
        if key in self._streams:
            raise LocalProtocolError(f"subscribe to {stream_name(*key)}: it is still active")
        if not msg.live and msg.end > self._cursors[msg.bin]:
            raise LocalProtocolError(
                f"subscribe to {stream_name(*key)} up to {msg.end}, beyond the known cursor "
                f"{self._cursors[msg.bin]}"
            )
        if self.logs is not None:
            self.logs.subscribe(msg.bin, msg.live, msg.start, msg.end)
        self._streams[key] = _Stream(end=msg.end, next_start=msg.start, unanswered=deque())

    def _send_unsubscribe(self, msg: Unsubscribe) -> None:
        key = (msg.bin, msg.live)
        stream = self._streams.get(key)
        if stream is None or stream.phase is not _Phase.SUBSCRIBED:
            raise LocalProtocolError(f"unsubscribe from {stream_name(*key)}, which is not subscribed")
        stream.phase = _Phase.UNSUBSCRIBING
        stream.unanswered.clear()  # the upstream forgets them too
        if self.logs is not None:
            self.logs.unsubscribe(*key)

    def _send_want(self, msg: WantedHashes) -> None:
        key = (msg.bin, msg.live)
        stream = self._streams.get(key)
        if stream is None or not stream.unanswered:
            raise LocalProtocolError(f"want for {stream_name(*key)}: no offer waits for an answer")
        offer = stream.unanswered[0]
        if (msg.start, msg.end) != (offer.start, offer.end):
            raise LocalProtocolError(
                f"want for {stream_name(*key)} [{msg.start}, {msg.end}] does not answer the oldest "
                f"offer [{offer.start}, {offer.end}]"
            )
        indices = msg.wanted_indices()
        if indices and indices[-1] >= len(offer.hashes):
            raise LocalProtocolError(
                f"want sets bit {indices[-1]}, the offer carried {len(offer.hashes)} hashes"
            )
        if isinstance(offer, ProvenOffer) and set(indices) & set(offer.hole_indices()):
            raise LocalProtocolError(f"want for {stream_name(*key)} asks for an entry marked as a hole")
        stream.unanswered.popleft()
        self._wanted.want((msg.bin, msg.live, msg.start), {i: offer.hashes[i] for i in indices})
        if stream.offered_all and not stream.unanswered:
            del self._streams[key]  # the historical stream is over
            if self.logs is not None:
                self.logs.unsubscribe(*key)

    # -- what the peer sends ----------------------------------------------------------------

    def receive(
        self,
        msg: UpstreamMessage,
    ) -> SessionEvent:
        """Judge a message from the upstream; returns what it means."""
        if isinstance(msg, ChunkDeliveries):
            return self._wanted.take_frame(msg)
        if isinstance(msg, ChunkDelivery):
            return self._wanted.take(msg)
        if isinstance(msg, OfferedHashes | ProvenOffer | SkippedOffer):
            return self._receive_offer(msg)
        if isinstance(msg, StateReply):
            if self.logs is None:
                raise RemoteProtocolError(f"state of bin {msg.state.bin} nobody asked for")
            return self.logs.on_reply(msg)
        if isinstance(msg, CursorsReply):
            return self._receive_cursors(msg)
        if isinstance(msg, Unsubscribed):
            return self._receive_unsubscribed(msg)
        raise LocalProtocolError(f"{type(msg).__name__} is not an upstream message")

    def _receive_cursors(self, msg: CursorsReply) -> CursorsReceived:
        if not self._cursors_asked:
            raise RemoteProtocolError("cursors reply without a request")
        if msg.epoch != self.handshake_epoch:
            raise RemoteProtocolError(
                f"cursors reply gives store epoch {msg.epoch}, the handshake signed {self.handshake_epoch}"
            )
        cursors = (*msg.cursors, *[0] * (BINS - len(msg.cursors)))
        for bin, cursor in enumerate(cursors):
            if cursor >= MAX_ID:
                raise RemoteProtocolError(f"cursor of bin {bin} is {cursor}, beyond the largest bin ID")
            if cursor < self._replied[bin]:
                raise RemoteProtocolError(
                    f"cursor of bin {bin} went back from {self._replied[bin]} to {cursor}"
                )
            latest = self.logs.latest(bin) if self.logs is not None else None
            if latest is not None and cursor < latest.size:
                # its store went back (restored from an older copy): show it the state it signed,
                # so it can take a new epoch (docs/protocol.md 8.6) instead of being refused for good
                raise RemoteProtocolError(
                    f"cursor of bin {bin} is {cursor} (stale), below the state at "
                    f"{latest.size} the upstream signed",
                    GoodbyeCode.INCONSISTENT_STATE,
                    farewell=RolledBack.of(latest),
                )
        self._cursors_asked = False
        self._offered_since_reply = False
        self.epoch = msg.epoch
        for bin, cursor in enumerate(cursors):
            self._replied[bin] = cursor
            # A reply may lag what offers showed: a live offer sent after the upstream took
            # the snapshot can arrive first.
            self._cursors[bin] = max(self._cursors[bin], cursor)
        return CursorsReceived(msg.epoch, tuple(self._cursors))

    def _receive_offer(self, msg: Offer) -> OfferReceived | OfferCrossed:
        key = (msg.bin, msg.live)
        stream = self._streams.get(key)
        if stream is not None and stream.phase is _Phase.UNSUBSCRIBING:
            return OfferCrossed(msg)
        if stream is None or stream.offered_all:
            raise RemoteProtocolError(f"offer for {stream_name(*key)}, which is not subscribed")
        if msg.start != stream.next_start or (not msg.live and msg.end > stream.end):
            raise RemoteProtocolError(
                f"offer [{msg.start}, {msg.end}] for {stream_name(*key)} does not continue "
                f"the stream at {stream.next_start}" + ("" if msg.live else f" (ending at {stream.end})")
            )
        if len(stream.unanswered) >= self.window:
            raise RemoteProtocolError(f"more than {self.window} unanswered offers for {stream_name(*key)}")
        self._check_bin(msg)
        root = None
        if self.logs is not None:
            if isinstance(msg, OfferedHashes):
                raise RemoteProtocolError(
                    f"offer [{msg.start}, {msg.end}] for {stream_name(*key)} comes without a proof: this "
                    "node verifies provable streams",
                    GoodbyeCode.BAD_PROOF,
                )
            root = self.logs.check_offer(msg).root
        stream.unanswered.append(msg)
        self._offered_since_reply = True
        stream.next_start = msg.end + 1
        self._cursors[msg.bin] = max(self._cursors[msg.bin], msg.end)
        last = not msg.live and msg.end == stream.end
        stream.offered_all = last
        return OfferReceived(msg, last, root)

    def _check_bin(self, msg: Offer) -> None:
        """Every offered hash must be in the stream's bin of the upstream's pull index: the sync
        rule pulls only bins whose chunks this node is responsible for, so a hash from elsewhere
        is junk the peer wants stored here. (A proven offer's holes are never wanted, and may be
        a lost entry's zero address: not checked.)"""
        # An address is in bin b < MAX_PO iff its first b bits are the upstream's and bit b is
        # not, i.e. its first 32 bits XOR the upstream's, shifted right by 31 - b, are 1; in bin
        # MAX_PO iff its first 31 bits are the upstream's (the shift by 1 gives 0). One unpack,
        # XOR and shift an address, not a 256-bit `proximity` (every chunk is offered this way).
        bin = msg.bin
        shift, expected = (31 - bin, 1) if bin < MAX_PO else (1, 0)
        upstream = self._upstream_prefix
        holes = frozenset(msg.hole_indices()) if isinstance(msg, ProvenOffer) else frozenset()
        for index, (prefix,) in enumerate(_PREFIXES.iter_unpack(b"".join(msg.hashes))):
            if (prefix ^ upstream) >> shift != expected and index not in holes:
                address = msg.hashes[index]
                po = min(proximity(address, self.upstream), MAX_PO)
                raise RemoteProtocolError(
                    f"offer for {stream_name(msg.bin, msg.live)} carries {address.hex()}, "
                    f"which is in bin {po} of the upstream"
                )

    def _receive_unsubscribed(self, msg: Unsubscribed) -> UnsubscribeAcked:
        key = (msg.bin, msg.live)
        stream = self._streams.get(key)
        if stream is None or stream.phase is not _Phase.UNSUBSCRIBING:
            raise RemoteProtocolError(f"Unsubscribed for {stream_name(*key)}, which we did not ask")
        del self._streams[key]
        return UnsubscribeAcked(key)
