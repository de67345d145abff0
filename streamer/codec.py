"""Frame codec of the streamer wire protocol, sans-IO.

:func:`encode` turns a message into one frame and :func:`decode_body` reads one frame's body;
`streamer.framing.FrameDecoder` takes bytes as they arrive (any split) and hands back messages.
None of them touches a socket. A frame is::

    u32 BE length L (= 1 + body size, 1..max_frame_size) | u8 type | body (L - 1 bytes)

The body layouts are below (the handshake, peers, retrieval, push sync and live pushes) and in
streamer/syncbodies.py (the pull-sync streams, plain and provable), one writer and one reader per
message, and in docs/protocol.md; streamer/bodyfields.py has the fields they are built of.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from streamer import syncbodies
from streamer.bodyfields import U8, U16, U64, BodyReader, str8, str16
from streamer.errors import LocalProtocolError, MessageError, RemoteProtocolError
from streamer.messages import (
    ADDRESS_SIZE,
    MAX_FRAME_SIZE,
    NONCE_SIZE,
    PUBLIC_KEY_SIZE,
    SIGNATURE_SIZE,
    FeedPush,
    Goodbye,
    Handshake,
    Hello,
    InterestEntry,
    LiveHave,
    LiveInterest,
    LivePause,
    Message,
    MessageType,
    PeerRecord,
    Peers,
    Ping,
    Pong,
    PushDelivery,
    PushFailure,
    PushReceipt,
    RetrieveDelivery,
    RetrieveFailure,
    RetrieveRequest,
    TopicPush,
)

_HEADER = struct.Struct(">IB")  # length, type
_LENGTH = struct.Struct(">I")
_HANDSHAKE_FIXED = struct.Struct(f">HQ{ADDRESS_SIZE}sQH{PUBLIC_KEY_SIZE}s{SIGNATURE_SIZE}s")
_RECORD_FIXED = struct.Struct(f">QH{PUBLIC_KEY_SIZE}s{SIGNATURE_SIZE}s")
_PUSH_DELIVERY = struct.Struct(f">Q{ADDRESS_SIZE}sB")  # request_id, address, hop_limit
_PUSH_RECEIPT = struct.Struct(f">Q{ADDRESS_SIZE}s{PUBLIC_KEY_SIZE}sB{SIGNATURE_SIZE}s")
_INTEREST_ENTRY = struct.Struct(">B20s32sB")  # kind, owner, topic, hops
_FEED_PUSH_FIXED = struct.Struct(">20s32sQ")  # owner, topic, index
_TOPIC_PUSH_FIXED = struct.Struct(">32s20sQQQ65s")  # topic, owner, seq, chain, time, signature
_LIVE_PAUSE = struct.Struct(">B20s32sB")  # kind, owner, topic, paused
_LIVE_HAVE = struct.Struct(">B20s32sQ")  # kind, owner, topic, number


# -- writing --------------------------------------------------------------------------------------


def _write_handshake(m: Handshake) -> bytes:
    fixed = _HANDSHAKE_FIXED.pack(
        m.version, m.network_id, m.overlay, m.epoch, m.port, m.public_key, m.signature
    )
    return fixed + str8(m.host)


def _write_record(r: PeerRecord) -> bytes:
    return _RECORD_FIXED.pack(r.network_id, r.port, r.public_key, r.signature) + str8(r.host)


_WRITERS: dict[type[Any], Callable[[Any], bytes]] = {
    **syncbodies.WRITERS,
    Hello: lambda m: m.nonce,
    Handshake: _write_handshake,
    Goodbye: lambda m: U16.pack(m.code) + str16(m.reason),
    Ping: lambda m: U64.pack(m.nonce),
    Pong: lambda m: U64.pack(m.nonce),
    RetrieveRequest: lambda m: U64.pack(m.request_id) + m.address + U8.pack(m.hop_limit),
    RetrieveDelivery: lambda m: U64.pack(m.request_id) + m.data,
    RetrieveFailure: lambda m: U64.pack(m.request_id) + str16(m.reason),
    PushDelivery: lambda m: _PUSH_DELIVERY.pack(m.request_id, m.address, m.hop_limit) + m.data,
    PushReceipt: lambda m: _PUSH_RECEIPT.pack(m.request_id, m.address, m.public_key, m.radius, m.signature),
    PushFailure: lambda m: U64.pack(m.request_id) + str16(m.reason),
    Peers: lambda m: U16.pack(len(m.records)) + b"".join(_write_record(r) for r in m.records),
    LiveInterest: lambda m: (
        U16.pack(len(m.entries))
        + b"".join(_INTEREST_ENTRY.pack(e.kind, e.owner, e.topic, e.hops) for e in m.entries)
    ),
    FeedPush: lambda m: _FEED_PUSH_FIXED.pack(m.owner, m.topic, m.index) + m.data,
    TopicPush: lambda m: (
        _TOPIC_PUSH_FIXED.pack(m.topic, m.owner, m.seq, m.chain, m.time, m.signature) + m.payload
    ),
    LivePause: lambda m: _LIVE_PAUSE.pack(m.kind, m.owner, m.topic, m.paused),
    LiveHave: lambda m: _LIVE_HAVE.pack(m.kind, m.owner, m.topic, m.number),
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


def _read_handshake(r: BodyReader) -> Handshake:
    version, network_id, overlay, epoch, port, public_key, signature = r.fixed(
        _HANDSHAKE_FIXED, "version..signature"
    )
    host = r.str8("host")
    return Handshake(version, network_id, overlay, epoch, host, port, public_key, signature)


def _read_push_delivery(r: BodyReader) -> PushDelivery:
    request_id, address, hop_limit = r.fixed(_PUSH_DELIVERY, "request_id/address/hop_limit")
    return PushDelivery(request_id, address, hop_limit, r.rest())


def _read_record(r: BodyReader, i: int) -> PeerRecord:
    network_id, port, public_key, signature = r.fixed(_RECORD_FIXED, f"records[{i}]")
    host = r.str8(f"records[{i}].host")
    return PeerRecord(network_id, host, port, public_key, signature)


def _read_peers(r: BodyReader) -> Peers:
    count = r.u16("count")
    return Peers(tuple(_read_record(r, i) for i in range(count)))


def _read_interest(r: BodyReader) -> LiveInterest:
    count = r.u16("count")
    return LiveInterest(
        tuple(InterestEntry(*r.fixed(_INTEREST_ENTRY, f"entries[{i}]")) for i in range(count))
    )


def _read_feed_push(r: BodyReader) -> FeedPush:
    owner, topic, index = r.fixed(_FEED_PUSH_FIXED, "owner/topic/index")
    return FeedPush(owner, topic, index, r.rest())


def _read_topic_push(r: BodyReader) -> TopicPush:
    topic, owner, seq, chain, time, signature = r.fixed(
        _TOPIC_PUSH_FIXED, "topic/owner/seq/chain/time/signature"
    )
    return TopicPush(topic, owner, seq, chain, time, signature, r.rest())


_READERS: dict[int, tuple[str, Callable[[BodyReader], Message]]] = {
    **syncbodies.READERS,
    MessageType.HELLO: ("Hello", lambda r: Hello(r.raw(NONCE_SIZE, "nonce"))),
    MessageType.HANDSHAKE: ("Handshake", _read_handshake),
    MessageType.GOODBYE: ("Goodbye", lambda r: Goodbye(r.u16("code"), r.str16("reason"))),
    MessageType.PING: ("Ping", lambda r: Ping(r.u64("nonce"))),
    MessageType.PONG: ("Pong", lambda r: Pong(r.u64("nonce"))),
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
    MessageType.LIVE_PAUSE: (
        "LivePause",
        lambda r: LivePause(*r.fixed(_LIVE_PAUSE, "kind/owner/topic/paused")),
    ),
    MessageType.LIVE_HAVE: ("LiveHave", lambda r: LiveHave(*r.fixed(_LIVE_HAVE, "kind/owner/topic/number"))),
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
    reader = BodyReader(name, body)
    try:
        msg = read(reader)
    except MessageError as exc:
        raise RemoteProtocolError(f"invalid {name} from peer: {exc}") from exc
    reader.done()
    return msg
