"""Frame codec of the streamer wire protocol, sans-IO.

:func:`encode` turns a message into one frame and :func:`decode_body` reads one frame's body;
`streamer.framing.FrameDecoder` takes bytes as they arrive (any split) and hands back messages.
None of them touches a socket. A frame is::

    u32 BE length L (= 1 + body size, 1..max_frame_size) | u8 type | body (L - 1 bytes)

The body layouts are below, one writer and one reader per message, and in docs/protocol.md.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from streamer.errors import LocalProtocolError, MessageError, RemoteProtocolError
from streamer.messages import (
    ADDRESS_SIZE,
    HASH_SIZE,
    HOLES_SIZE,
    MAX_BATCH_SIZE,
    MAX_FRAME_SIZE,
    NONCE_SIZE,
    PUBLIC_KEY_SIZE,
    SIGNATURE_SIZE,
    WANT_SIZE,
    ChunkDelivery,
    CursorsReply,
    CursorsRequest,
    FeedPush,
    Goodbye,
    Handshake,
    Hello,
    InterestEntry,
    LiveInterest,
    Message,
    MessageType,
    OfferedHashes,
    PeerRecord,
    Peers,
    Ping,
    Pong,
    ProvenOffer,
    PushDelivery,
    PushFailure,
    PushReceipt,
    Receipt,
    RetrieveDelivery,
    RetrieveFailure,
    RetrieveRequest,
    SignedState,
    StateReply,
    StateRequest,
    Subscribe,
    TopicPush,
    Unsubscribe,
    Unsubscribed,
    WantedHashes,
)

_HEADER = struct.Struct(">IB")  # length, type
_LENGTH = struct.Struct(">I")
_U8 = struct.Struct(">B")
_U16 = struct.Struct(">H")
_U64 = struct.Struct(">Q")
_STREAM = struct.Struct(">BBQQ")  # bin, live, start, end
_DELIVERY = struct.Struct(">BBQB")  # bin, live, start, index
_HANDSHAKE_FIXED = struct.Struct(f">HQ{ADDRESS_SIZE}sQH{PUBLIC_KEY_SIZE}s{SIGNATURE_SIZE}s")
_RECORD_FIXED = struct.Struct(f">QH{PUBLIC_KEY_SIZE}s{SIGNATURE_SIZE}s")
_PUSH_DELIVERY = struct.Struct(f">Q{ADDRESS_SIZE}sB")  # request_id, address, hop_limit
_PUSH_RECEIPT = struct.Struct(f">Q{ADDRESS_SIZE}s{PUBLIC_KEY_SIZE}sB{SIGNATURE_SIZE}s")
_STATE_REQUEST = struct.Struct(">BQQ")  # bin, size, known
_STATE_FIXED = struct.Struct(f">BQQ{HASH_SIZE}s{SIGNATURE_SIZE}sQ")  # bin, epoch, size, root, sig, known
_LIVE_STATE = struct.Struct(f">Q{HASH_SIZE}s{SIGNATURE_SIZE}s")  # epoch, root, signature
_RECEIPT = struct.Struct(f">BQQQ{HASH_SIZE}s{SIGNATURE_SIZE}s")  # bin, epoch, start, end, root, sig
_INTEREST_ENTRY = struct.Struct(">B20s32sB")  # kind, owner, topic, hops
_FEED_PUSH_FIXED = struct.Struct(">20s32sQ")  # owner, topic, index
_TOPIC_PUSH_FIXED = struct.Struct(">32s20sQQQ65s")  # topic, owner, seq, chain, time, signature


# -- writing --------------------------------------------------------------------------------------


def _str8(s: str) -> bytes:
    raw = s.encode("utf-8")
    return _U8.pack(len(raw)) + raw


def _str16(s: str) -> bytes:
    raw = s.encode("utf-8")
    return _U16.pack(len(raw)) + raw


def _write_handshake(m: Handshake) -> bytes:
    fixed = _HANDSHAKE_FIXED.pack(
        m.version, m.network_id, m.overlay, m.epoch, m.port, m.public_key, m.signature
    )
    return fixed + _str8(m.host)


def _write_record(r: PeerRecord) -> bytes:
    return _RECORD_FIXED.pack(r.network_id, r.port, r.public_key, r.signature) + _str8(r.host)


def _write_state_reply(m: StateReply) -> bytes:
    st = m.state
    return _STATE_FIXED.pack(st.bin, st.epoch, st.size, st.root, st.signature, m.known) + b"".join(m.proof)


def _write_proven_offer(m: ProvenOffer) -> bytes:
    head = _STREAM.pack(m.bin, m.live, m.start, m.end) + m.holes + b"".join(m.hashes)
    if m.state is not None:
        return head + _LIVE_STATE.pack(m.state.epoch, m.state.root, m.state.signature)
    return head + _U8.pack(len(m.left)) + b"".join(m.left) + b"".join(m.right)


_WRITERS: dict[type[Any], Callable[[Any], bytes]] = {
    Hello: lambda m: m.nonce,
    Handshake: _write_handshake,
    Goodbye: lambda m: _U16.pack(m.code) + _str16(m.reason),
    Ping: lambda m: _U64.pack(m.nonce),
    Pong: lambda m: _U64.pack(m.nonce),
    CursorsRequest: lambda m: b"",
    CursorsReply: lambda m: (
        _U64.pack(m.epoch) + _U8.pack(len(m.cursors)) + struct.pack(f">{len(m.cursors)}Q", *m.cursors)
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
    RetrieveRequest: lambda m: _U64.pack(m.request_id) + m.address + _U8.pack(m.hop_limit),
    RetrieveDelivery: lambda m: _U64.pack(m.request_id) + m.data,
    RetrieveFailure: lambda m: _U64.pack(m.request_id) + _str16(m.reason),
    PushDelivery: lambda m: _PUSH_DELIVERY.pack(m.request_id, m.address, m.hop_limit) + m.data,
    PushReceipt: lambda m: _PUSH_RECEIPT.pack(m.request_id, m.address, m.public_key, m.radius, m.signature),
    PushFailure: lambda m: _U64.pack(m.request_id) + _str16(m.reason),
    Peers: lambda m: _U16.pack(len(m.records)) + b"".join(_write_record(r) for r in m.records),
    LiveInterest: lambda m: (
        _U16.pack(len(m.entries))
        + b"".join(_INTEREST_ENTRY.pack(e.kind, e.owner, e.topic, e.hops) for e in m.entries)
    ),
    FeedPush: lambda m: _FEED_PUSH_FIXED.pack(m.owner, m.topic, m.index) + m.data,
    TopicPush: lambda m: (
        _TOPIC_PUSH_FIXED.pack(m.topic, m.owner, m.seq, m.chain, m.time, m.signature) + m.payload
    ),
}


def encode(msg: Message) -> bytes:
    """The whole frame (length, type, body) for ``msg``."""
    writer = _WRITERS.get(type(msg))
    if writer is None:
        raise LocalProtocolError(f"cannot encode {type(msg).__name__!r}: not a streamer message")
    try:
        body = writer(msg)
    except (struct.error, UnicodeEncodeError, TypeError) as exc:  # only if fields were forced past validation
        raise LocalProtocolError(f"cannot encode {type(msg).__name__}: {exc}") from exc
    length = 1 + len(body)
    if length > MAX_FRAME_SIZE:
        raise LocalProtocolError(
            f"cannot encode {type(msg).__name__}: frame length {length} exceeds "
            f"MAX_FRAME_SIZE {MAX_FRAME_SIZE}"
        )
    return _HEADER.pack(length, msg.TYPE) + body


# -- reading --------------------------------------------------------------------------------------


class _Reader:
    """Reads the fields of one body; every shortfall names the message and the field."""

    __slots__ = ("_body", "_name", "_pos")

    def __init__(self, name: str, body: bytes) -> None:
        self._name = name
        self._body = body
        self._pos = 0

    def error(self, what: str) -> RemoteProtocolError:
        return RemoteProtocolError(f"malformed {self._name} body ({len(self._body)} bytes): {what}")

    def _take(self, size: int, field: str) -> bytes:
        left = len(self._body) - self._pos
        if size > left:
            raise self.error(f"field {field} needs {size} bytes at offset {self._pos}, only {left} left")
        raw = self._body[self._pos : self._pos + size]
        self._pos += size
        return raw

    def fixed(self, st: struct.Struct, field: str) -> tuple[Any, ...]:
        return st.unpack(self._take(st.size, field))

    def u8(self, field: str) -> int:
        return self._take(1, field)[0]

    def u16(self, field: str) -> int:
        return int(_U16.unpack(self._take(2, field))[0])

    def u64(self, field: str) -> int:
        return int(_U64.unpack(self._take(8, field))[0])

    def raw(self, size: int, field: str) -> bytes:
        return self._take(size, field)

    def boolean(self, value: int, field: str) -> bool:
        if value not in (0, 1):
            raise self.error(f"field {field} must be 0 or 1 (a bool), got {value}")
        return value == 1

    def text(self, size: int, field: str) -> str:
        raw = self._take(size, field)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(f"field {field} is not valid UTF-8: {exc.reason} at byte {exc.start}") from exc

    def str8(self, field: str) -> str:
        return self.text(self.u8(f"{field} length"), field)

    def str16(self, field: str) -> str:
        return self.text(self.u16(f"{field} length"), field)

    def rest(self) -> bytes:
        raw = self._body[self._pos :]
        self._pos = len(self._body)
        return raw

    def left(self) -> int:
        return len(self._body) - self._pos

    def done(self) -> None:
        if self._pos != len(self._body):
            raise self.error(f"{len(self._body) - self._pos} unexpected trailing bytes at offset {self._pos}")


def _read_handshake(r: _Reader) -> Handshake:
    version, network_id, overlay, epoch, port, public_key, signature = r.fixed(
        _HANDSHAKE_FIXED, "version..signature"
    )
    host = r.str8("host")
    return Handshake(version, network_id, overlay, epoch, host, port, public_key, signature)


def _read_stream_range(r: _Reader) -> tuple[int, bool, int, int]:
    bin_, live, start, end = r.fixed(_STREAM, "bin/live/start/end")
    return bin_, r.boolean(live, "live"), start, end


def _read_cursors(r: _Reader) -> CursorsReply:
    epoch = r.u64("epoch")
    count = r.u8("count")
    raw = r.raw(8 * count, f"cursors ({count} x u64)")
    return CursorsReply(epoch, struct.unpack(f">{count}Q", raw))


def _read_unsubscribed(r: _Reader) -> Unsubscribed:
    bin_ = r.u8("bin")
    return Unsubscribed(bin_, r.boolean(r.u8("live"), "live"))


def _read_unsubscribe(r: _Reader) -> Unsubscribe:
    bin_ = r.u8("bin")
    return Unsubscribe(bin_, r.boolean(r.u8("live"), "live"))


def _read_offer(r: _Reader) -> OfferedHashes:
    bin_, live, start, end = _read_stream_range(r)
    if r.left() % ADDRESS_SIZE:
        raise r.error(f"hashes take {r.left()} bytes, not a multiple of {ADDRESS_SIZE}")
    raw = r.rest()
    hashes = tuple(raw[i : i + ADDRESS_SIZE] for i in range(0, len(raw), ADDRESS_SIZE))
    return OfferedHashes(bin_, live, start, end, hashes)


def _read_want(r: _Reader) -> WantedHashes:
    bin_, live, start, end = _read_stream_range(r)
    return WantedHashes(bin_, live, start, end, r.raw(WANT_SIZE, "want"))


def _read_delivery(r: _Reader) -> ChunkDelivery:
    bin_, live, start, index = r.fixed(_DELIVERY, "bin/live/start/index")
    return ChunkDelivery(bin_, r.boolean(live, "live"), start, index, r.rest())


def _read_push_delivery(r: _Reader) -> PushDelivery:
    request_id, address, hop_limit = r.fixed(_PUSH_DELIVERY, "request_id/address/hop_limit")
    return PushDelivery(request_id, address, hop_limit, r.rest())


def _read_hashes(r: _Reader, field: str) -> tuple[bytes, ...]:
    """32-byte hashes to the end of the body."""
    if r.left() % HASH_SIZE:
        raise r.error(f"{field} take {r.left()} bytes, not a multiple of {HASH_SIZE}")
    raw = r.rest()
    return tuple(raw[i : i + HASH_SIZE] for i in range(0, len(raw), HASH_SIZE))


def _read_state_reply(r: _Reader) -> StateReply:
    bin_, epoch, size, root, signature, known = r.fixed(_STATE_FIXED, "bin..known")
    return StateReply(SignedState(bin_, epoch, size, root, signature), known, _read_hashes(r, "proof"))


def _read_proven_offer(r: _Reader) -> ProvenOffer:
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


def _read_receipt(r: _Reader) -> Receipt:
    return Receipt(*r.fixed(_RECEIPT, "bin..signature"))


def _read_record(r: _Reader, i: int) -> PeerRecord:
    network_id, port, public_key, signature = r.fixed(_RECORD_FIXED, f"records[{i}]")
    host = r.str8(f"records[{i}].host")
    return PeerRecord(network_id, host, port, public_key, signature)


def _read_peers(r: _Reader) -> Peers:
    count = r.u16("count")
    return Peers(tuple(_read_record(r, i) for i in range(count)))


def _read_interest(r: _Reader) -> LiveInterest:
    count = r.u16("count")
    return LiveInterest(
        tuple(InterestEntry(*r.fixed(_INTEREST_ENTRY, f"entries[{i}]")) for i in range(count))
    )


def _read_feed_push(r: _Reader) -> FeedPush:
    owner, topic, index = r.fixed(_FEED_PUSH_FIXED, "owner/topic/index")
    return FeedPush(owner, topic, index, r.rest())


def _read_topic_push(r: _Reader) -> TopicPush:
    topic, owner, seq, chain, time, signature = r.fixed(
        _TOPIC_PUSH_FIXED, "topic/owner/seq/chain/time/signature"
    )
    return TopicPush(topic, owner, seq, chain, time, signature, r.rest())


_READERS: dict[int, tuple[str, Callable[[_Reader], Message]]] = {
    MessageType.HELLO: ("Hello", lambda r: Hello(r.raw(NONCE_SIZE, "nonce"))),
    MessageType.HANDSHAKE: ("Handshake", _read_handshake),
    MessageType.GOODBYE: ("Goodbye", lambda r: Goodbye(r.u16("code"), r.str16("reason"))),
    MessageType.PING: ("Ping", lambda r: Ping(r.u64("nonce"))),
    MessageType.PONG: ("Pong", lambda r: Pong(r.u64("nonce"))),
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
    MessageType.RETRIEVE_REQUEST: (
        "RetrieveRequest",
        lambda r: RetrieveRequest(r.u64("request_id"), r.raw(ADDRESS_SIZE, "address"), r.u8("hop_limit")),
    ),
    MessageType.RETRIEVE_DELIVERY: (
        "RetrieveDelivery",
        lambda r: RetrieveDelivery(r.u64("request_id"), r.rest()),
    ),
    MessageType.RETRIEVE_FAILURE: (
        "RetrieveFailure",
        lambda r: RetrieveFailure(r.u64("request_id"), r.str16("reason")),
    ),
    MessageType.PUSH_DELIVERY: ("PushDelivery", _read_push_delivery),
    MessageType.PUSH_RECEIPT: (
        "PushReceipt",
        lambda r: PushReceipt(*r.fixed(_PUSH_RECEIPT, "request_id..signature")),
    ),
    MessageType.PUSH_FAILURE: (
        "PushFailure",
        lambda r: PushFailure(r.u64("request_id"), r.str16("reason")),
    ),
    MessageType.PEERS: ("Peers", _read_peers),
    MessageType.LIVE_INTEREST: ("LiveInterest", _read_interest),
    MessageType.FEED_PUSH: ("FeedPush", _read_feed_push),
    MessageType.TOPIC_PUSH: ("TopicPush", _read_topic_push),
}


def is_known_type(type_code: int) -> bool:
    """Whether a frame's type byte names a message this implementation reads."""
    return type_code in _READERS


def decode_body(type_code: int, body: bytes) -> Message:
    """The message a frame of ``type_code`` carries in ``body``; RemoteProtocolError if malformed."""
    entry = _READERS.get(type_code)
    if entry is None:
        raise RemoteProtocolError(f"unknown message type 0x{type_code:02x}")
    name, read = entry
    reader = _Reader(name, body)
    try:
        msg = read(reader)
    except MessageError as exc:
        raise RemoteProtocolError(f"invalid {name} from peer: {exc}") from exc
    reader.done()
    return msg
