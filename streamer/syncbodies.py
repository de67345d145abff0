"""Bodies of the pull-sync streams, plain and provable: cursors, subscriptions, offers, wants,
deliveries, and the signed bin states, proven offers and receipts of provable sync.

One writer and one reader per message (layouts in docs/protocol.md), kept together because
they share the stream range ``bin, live, start, end`` and the 32-byte hash lists;
streamer/codec.py merges :data:`WRITERS` and :data:`READERS` into its tables.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from streamer.bodyfields import U8, U64, BodyReader
from streamer.messages import (
    ADDRESS_SIZE,
    HASH_SIZE,
    HOLES_SIZE,
    MAX_BATCH_SIZE,
    SIGNATURE_SIZE,
    WANT_SIZE,
    ChunkDelivery,
    CursorsReply,
    CursorsRequest,
    Message,
    MessageType,
    OfferedHashes,
    ProvenOffer,
    Receipt,
    SignedState,
    StateReply,
    StateRequest,
    Subscribe,
    Unsubscribe,
    Unsubscribed,
    WantedHashes,
)

_STREAM = struct.Struct(">BBQQ")  # bin, live, start, end
_DELIVERY = struct.Struct(">BBQB")  # bin, live, start, index
_STATE_REQUEST = struct.Struct(">BQQ")  # bin, size, known
_STATE_FIXED = struct.Struct(f">BQQ{HASH_SIZE}s{SIGNATURE_SIZE}sQ")  # bin, epoch, size, root, sig, known
_LIVE_STATE = struct.Struct(f">Q{HASH_SIZE}s{SIGNATURE_SIZE}s")  # epoch, root, signature
_RECEIPT = struct.Struct(f">BQQQ{HASH_SIZE}s{SIGNATURE_SIZE}s")  # bin, epoch, start, end, root, sig


# -- writing --------------------------------------------------------------------------------------


def _write_state_reply(m: StateReply) -> bytes:
    st = m.state
    return _STATE_FIXED.pack(st.bin, st.epoch, st.size, st.root, st.signature, m.known) + b"".join(m.proof)


def _write_proven_offer(m: ProvenOffer) -> bytes:
    head = _STREAM.pack(m.bin, m.live, m.start, m.end) + m.holes + b"".join(m.hashes)
    if m.state is not None:
        return head + _LIVE_STATE.pack(m.state.epoch, m.state.root, m.state.signature)
    return head + U8.pack(len(m.left)) + b"".join(m.left) + b"".join(m.right)


WRITERS: dict[type[Any], Callable[[Any], bytes]] = {
    CursorsRequest: lambda m: b"",
    CursorsReply: lambda m: (
        U64.pack(m.epoch) + U8.pack(len(m.cursors)) + struct.pack(f">{len(m.cursors)}Q", *m.cursors)
    ),
    Subscribe: lambda m: _STREAM.pack(m.bin, m.live, m.start, m.end),
    Unsubscribe: lambda m: struct.pack(">BB", m.bin, m.live),
    Unsubscribed: lambda m: struct.pack(">BB", m.bin, m.live),
    OfferedHashes: lambda m: _STREAM.pack(m.bin, m.live, m.start, m.end) + b"".join(m.hashes),
    WantedHashes: lambda m: _STREAM.pack(m.bin, m.live, m.start, m.end) + m.want,
    ChunkDelivery: lambda m: _DELIVERY.pack(m.bin, m.live, m.start, m.index) + m.data,
    StateRequest: lambda m: _STATE_REQUEST.pack(m.bin, m.size, m.known),
    StateReply: _write_state_reply,
    ProvenOffer: _write_proven_offer,
    Receipt: lambda m: _RECEIPT.pack(m.bin, m.epoch, m.start, m.end, m.root, m.signature),
}


# -- reading --------------------------------------------------------------------------------------


def _read_stream_range(r: BodyReader) -> tuple[int, bool, int, int]:
    bin_, live, start, end = r.fixed(_STREAM, "bin/live/start/end")
    return bin_, r.boolean(live, "live"), start, end


def _read_cursors(r: BodyReader) -> CursorsReply:
    epoch = r.u64("epoch")
    count = r.u8("count")
    raw = r.raw(8 * count, f"cursors ({count} x u64)")
    return CursorsReply(epoch, struct.unpack(f">{count}Q", raw))


def _read_unsubscribed(r: BodyReader) -> Unsubscribed:
    bin_ = r.u8("bin")
    return Unsubscribed(bin_, r.boolean(r.u8("live"), "live"))


def _read_unsubscribe(r: BodyReader) -> Unsubscribe:
    bin_ = r.u8("bin")
    return Unsubscribe(bin_, r.boolean(r.u8("live"), "live"))


def _read_offer(r: BodyReader) -> OfferedHashes:
    bin_, live, start, end = _read_stream_range(r)
    if r.left() % ADDRESS_SIZE:
        raise r.error(f"hashes take {r.left()} bytes, not a multiple of {ADDRESS_SIZE}")
    raw = r.rest()
    hashes = tuple(raw[i : i + ADDRESS_SIZE] for i in range(0, len(raw), ADDRESS_SIZE))
    return OfferedHashes(bin_, live, start, end, hashes)


def _read_want(r: BodyReader) -> WantedHashes:
    bin_, live, start, end = _read_stream_range(r)
    return WantedHashes(bin_, live, start, end, r.raw(WANT_SIZE, "want"))


def _read_delivery(r: BodyReader) -> ChunkDelivery:
    bin_, live, start, index = r.fixed(_DELIVERY, "bin/live/start/index")
    return ChunkDelivery(bin_, r.boolean(live, "live"), start, index, r.rest())


def _read_hashes(r: BodyReader, field: str) -> tuple[bytes, ...]:
    """32-byte hashes to the end of the body."""
    if r.left() % HASH_SIZE:
        raise r.error(f"{field} take {r.left()} bytes, not a multiple of {HASH_SIZE}")
    raw = r.rest()
    return tuple(raw[i : i + HASH_SIZE] for i in range(0, len(raw), HASH_SIZE))


def _read_state_reply(r: BodyReader) -> StateReply:
    bin_, epoch, size, root, signature, known = r.fixed(_STATE_FIXED, "bin..known")
    return StateReply(SignedState(bin_, epoch, size, root, signature), known, _read_hashes(r, "proof"))


def _read_proven_offer(r: BodyReader) -> ProvenOffer:
    bin_, live, start, end = _read_stream_range(r)
    holes = r.raw(HOLES_SIZE, "holes")
    if not 1 <= start <= end < start + MAX_BATCH_SIZE:
        raise r.error(f"range [{start}, {end}] is not 1..{MAX_BATCH_SIZE} bin IDs from 1 on")
    raw = r.raw(HASH_SIZE * (end - start + 1), f"hashes ({end - start + 1} x 32)")
    hashes = tuple(raw[i : i + HASH_SIZE] for i in range(0, len(raw), HASH_SIZE))
    if live:
        epoch, root, signature = r.fixed(_LIVE_STATE, "epoch/root/signature")
        state = SignedState(bin_, epoch, end, root, signature)
        return ProvenOffer(bin_, live, start, end, hashes, holes, state)
    count = r.u8("left count")
    left = r.raw(HASH_SIZE * count, f"left ({count} x 32)")
    lefts = tuple(left[i : i + HASH_SIZE] for i in range(0, len(left), HASH_SIZE))
    return ProvenOffer(bin_, live, start, end, hashes, holes, None, lefts, _read_hashes(r, "right"))


def _read_receipt(r: BodyReader) -> Receipt:
    return Receipt(*r.fixed(_RECEIPT, "bin..signature"))


READERS: dict[int, tuple[str, Callable[[BodyReader], Message]]] = {
    MessageType.CURSORS_REQUEST: ("CursorsRequest", lambda r: CursorsRequest()),
    MessageType.CURSORS_REPLY: ("CursorsReply", _read_cursors),
    MessageType.SUBSCRIBE: ("Subscribe", lambda r: Subscribe(*_read_stream_range(r))),
    MessageType.UNSUBSCRIBE: ("Unsubscribe", _read_unsubscribe),
    MessageType.UNSUBSCRIBED: ("Unsubscribed", _read_unsubscribed),
    MessageType.OFFERED_HASHES: ("OfferedHashes", _read_offer),
    MessageType.WANTED_HASHES: ("WantedHashes", _read_want),
    MessageType.CHUNK_DELIVERY: ("ChunkDelivery", _read_delivery),
    MessageType.STATE_REQUEST: (
        "StateRequest",
        lambda r: StateRequest(*r.fixed(_STATE_REQUEST, "bin/size/known")),
    ),
    MessageType.STATE_REPLY: ("StateReply", _read_state_reply),
    MessageType.PROVEN_OFFER: ("ProvenOffer", _read_proven_offer),
    MessageType.RECEIPT: ("Receipt", _read_receipt),
}
