"""Wire messages validate themselves; strategies for every message type (reused by test_codec)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamer import (
    MAX_BATCH_SIZE,
    MAX_BIN,
    MAX_CHUNK_DATA_SIZE,
    MAX_HOST_SIZE,
    MAX_PEER_RECORDS,
    MAX_REASON_SIZE,
    MESSAGE_CLASSES,
    ChunkDelivery,
    CursorsReply,
    CursorsRequest,
    Goodbye,
    GoodbyeCode,
    Handshake,
    Hello,
    MessageError,
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
    RolledBack,
    SignedState,
    SkippedOffer,
    StateReply,
    StateRequest,
    Subscribe,
    Unsubscribe,
    Unsubscribed,
    WantedHashes,
    overlay_address,
    payload_size,
)
from streamer.messages import (
    MAX_DELIVERY_BATCH,
    MAX_PUSH_BATCH,
    ChunkDeliveries,
    DeliveredChunk,
    PushBatch,
    PushBatchReceipt,
    PushedChunk,
)
from tests.live_strategies import LIVE_STRATEGIES, LIVE_TYPE_CODES

U64_MAX = 2**64 - 1

# -- strategies -----------------------------------------------------------------------------------

u8 = st.integers(0, 0xFF)
u16 = st.integers(0, 0xFFFF)
u64 = st.integers(0, U64_MAX)
bins = st.integers(0, MAX_BIN)
hashes32 = st.binary(min_size=32, max_size=32)
keys32 = st.binary(min_size=32, max_size=32)
sigs64 = st.binary(min_size=64, max_size=64)
chunk_data = st.binary(min_size=8, max_size=MAX_CHUNK_DATA_SIZE)


def text(max_bytes: int) -> st.SearchStrategy[str]:
    """Any text, cut to at most ``max_bytes`` of UTF-8 (on a character boundary)."""
    return st.text(max_size=max_bytes).map(lambda s: s.encode()[:max_bytes].decode("utf-8", "ignore"))


@st.composite
def stream_ranges(draw: st.DrawFn, min_len: int = 1) -> tuple[int, int]:
    start = draw(st.integers(1, U64_MAX - min_len + 1))
    end = draw(st.integers(start + min_len - 1, U64_MAX))
    return start, end


@st.composite
def offered_hashes(draw: st.DrawFn) -> OfferedHashes:
    hashes = draw(st.lists(hashes32, max_size=MAX_BATCH_SIZE))
    start, end = draw(stream_ranges(max(len(hashes), 1)))
    return OfferedHashes(draw(bins), draw(st.booleans()), start, end, tuple(hashes))


@st.composite
def wanted_hashes(draw: st.DrawFn) -> WantedHashes:
    start, end = draw(stream_ranges())
    return WantedHashes(
        draw(bins), draw(st.booleans()), start, end, draw(st.binary(min_size=16, max_size=16))
    )


@st.composite
def subscribes(draw: st.DrawFn) -> Subscribe:
    if draw(st.booleans()):
        return Subscribe(draw(bins), True, draw(st.integers(1, U64_MAX)), 0)
    start, end = draw(stream_ranges())
    return Subscribe(draw(bins), False, start, end)


peer_records = st.builds(PeerRecord, u64, text(MAX_HOST_SIZE), u16, keys32, sigs64)
signed_states = st.builds(SignedState, bins, u64, u64, hashes32, sigs64)


@st.composite
def proven_offers(draw: st.DrawFn) -> ProvenOffer:
    count = draw(st.integers(1, MAX_BATCH_SIZE))
    start = draw(st.integers(1, U64_MAX - count + 1))
    end = start + count - 1
    bin, live = draw(bins), draw(st.booleans())
    holes = sorted(draw(st.sets(st.integers(0, count - 1), max_size=8)))
    mask = bytearray(16)
    for i in holes:
        mask[i >> 3] |= 1 << (i & 7)
    hashes = tuple(draw(st.lists(hashes32, min_size=count, max_size=count)))
    if live:
        state = SignedState(bin, draw(u64), end, draw(hashes32), draw(sigs64))
        return ProvenOffer(bin, True, start, end, hashes, bytes(mask), state)
    left = tuple(draw(st.lists(hashes32, max_size=64)))
    right = tuple(draw(st.lists(hashes32, max_size=128)))
    return ProvenOffer(bin, False, start, end, hashes, bytes(mask), None, left, right)


@st.composite
def skipped_offers(draw: st.DrawFn) -> SkippedOffer:
    start, end = draw(stream_ranges())
    proof = tuple(draw(st.lists(hashes32, max_size=128)))
    return SkippedOffer(draw(bins), start, end, draw(u64), draw(hashes32), draw(sigs64), proof)


@st.composite
def receipts(draw: st.DrawFn) -> Receipt:
    start, end = draw(stream_ranges())
    return Receipt(draw(bins), draw(u64), start, end, draw(hashes32), draw(sigs64))


STRATEGIES: dict[type, st.SearchStrategy] = {
    Hello: st.builds(Hello, st.binary(min_size=32, max_size=32)),
    Handshake: st.builds(Handshake, u16, u64, hashes32, u64, text(MAX_HOST_SIZE), u16, keys32, sigs64),
    Goodbye: st.builds(Goodbye, st.sampled_from(list(GoodbyeCode)) | u16, text(MAX_REASON_SIZE)),
    Ping: st.builds(Ping, u64),
    Pong: st.builds(Pong, u64),
    CursorsRequest: st.just(CursorsRequest()),
    CursorsReply: st.builds(CursorsReply, u64, st.lists(u64, max_size=32).map(tuple)),
    Subscribe: subscribes(),
    Unsubscribe: st.builds(Unsubscribe, bins, st.booleans()),
    Unsubscribed: st.builds(Unsubscribed, bins, st.booleans()),
    OfferedHashes: offered_hashes(),
    WantedHashes: wanted_hashes(),
    ChunkDelivery: st.builds(
        ChunkDelivery, bins, st.booleans(), st.integers(1, U64_MAX), st.integers(0, 127), chunk_data
    ),
    ChunkDeliveries: st.builds(
        ChunkDeliveries,
        bins,
        st.booleans(),
        st.integers(1, U64_MAX),
        st.dictionaries(st.integers(0, 127), chunk_data, min_size=1, max_size=MAX_DELIVERY_BATCH).map(
            lambda d: tuple(DeliveredChunk(i, data) for i, data in d.items())
        ),
    ),
    StateRequest: st.builds(StateRequest, bins, st.integers(1, U64_MAX), u64),
    StateReply: st.builds(StateReply, signed_states, u64, st.lists(hashes32, max_size=192).map(tuple)),
    ProvenOffer: proven_offers(),
    SkippedOffer: skipped_offers(),
    Receipt: receipts(),
    RolledBack: signed_states.map(RolledBack.of),
    RetrieveRequest: st.builds(RetrieveRequest, u64, hashes32, u8),
    RetrieveDelivery: st.builds(RetrieveDelivery, u64, chunk_data),
    RetrieveFailure: st.builds(RetrieveFailure, u64, text(MAX_REASON_SIZE)),
    PushDelivery: st.builds(PushDelivery, u64, hashes32, u8, chunk_data),
    PushReceipt: st.builds(PushReceipt, u64, hashes32, keys32, st.integers(0, 32), sigs64),
    PushFailure: st.builds(PushFailure, u64, text(MAX_REASON_SIZE)),
    PushBatch: st.builds(
        PushBatch,
        u64,
        st.booleans(),
        st.dictionaries(hashes32, chunk_data, min_size=1, max_size=MAX_PUSH_BATCH).map(
            lambda d: tuple(PushedChunk(a, data) for a, data in d.items())
        ),
    ),
    PushBatchReceipt: st.builds(
        PushBatchReceipt,
        u64,
        keys32,
        st.integers(0, 32),
        sigs64,
        st.lists(hashes32, max_size=MAX_PUSH_BATCH).map(tuple),
    ),
    Peers: st.builds(Peers, st.lists(peer_records, max_size=MAX_PEER_RECORDS).map(tuple)),
}

STRATEGIES.update(LIVE_STRATEGIES)

messages = st.one_of(*STRATEGIES.values())


def test_strategies_cover_every_message_class() -> None:
    assert set(STRATEGIES) == set(MESSAGE_CLASSES)


def test_type_codes_are_distinct_and_documented_values() -> None:
    codes = {cls.TYPE for cls in MESSAGE_CLASSES}
    assert len(codes) == len(MESSAGE_CLASSES) == len(MessageType)
    assert {cls.__name__: int(cls.TYPE) for cls in MESSAGE_CLASSES} == {
        "Handshake": 0x01,
        "Goodbye": 0x02,
        "Ping": 0x03,
        "Pong": 0x04,
        "Hello": 0x05,
        "CursorsRequest": 0x10,
        "CursorsReply": 0x11,
        "Subscribe": 0x12,
        "Unsubscribe": 0x13,
        "OfferedHashes": 0x14,
        "WantedHashes": 0x15,
        "ChunkDelivery": 0x16,
        "Unsubscribed": 0x17,
        "StateRequest": 0x18,
        "StateReply": 0x19,
        "ProvenOffer": 0x1A,
        "Receipt": 0x1B,
        "RolledBack": 0x1C,
        "SkippedOffer": 0x1D,
        "ChunkDeliveries": 0x1E,
        "RetrieveRequest": 0x20,
        "RetrieveDelivery": 0x21,
        "RetrieveFailure": 0x22,
        "PushDelivery": 0x23,
        "PushReceipt": 0x24,
        "PushFailure": 0x25,
        "PushBatch": 0x26,
        "PushBatchReceipt": 0x27,
        "Peers": 0x30,
        **LIVE_TYPE_CODES,
    }


def test_goodbye_codes() -> None:
    assert [(c.name, int(c)) for c in GoodbyeCode] == [
        ("NORMAL", 0),
        ("PROTOCOL_ERROR", 1),
        ("BAD_HANDSHAKE", 2),
        ("WRONG_NETWORK", 3),
        ("VERSION_MISMATCH", 4),
        ("INVALID_CHUNK", 5),
        ("UNSOLICITED_DELIVERY", 6),
        ("SHUTDOWN", 7),
        ("DUPLICATE_CONNECTION", 8),
        ("PRUNED", 9),
        ("OVERLOADED", 10),
        ("BAD_PROOF", 11),
        ("INCONSISTENT_STATE", 12),
    ]


# -- valid construction ---------------------------------------------------------------------------


@given(messages)
def test_messages_are_frozen_and_hashable(msg: object) -> None:
    assert hash(msg) == hash(dataclasses.replace(msg))  # type: ignore[type-var]
    fields = dataclasses.fields(msg)  # type: ignore[arg-type]
    if fields:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(msg, fields[0].name, getattr(msg, fields[0].name))


@given(messages)
def test_messages_compare_hash_and_show_as_dataclasses_do(msg: object) -> None:
    """streamer/wire/declare.py writes these methods itself (fewer compiles at start-up): they
    must behave as those `dataclasses` would write for a frozen class."""
    values = tuple(getattr(msg, f.name) for f in dataclasses.fields(msg))  # type: ignore[arg-type]
    assert msg == dataclasses.replace(msg)  # type: ignore[type-var]
    assert hash(msg) == hash(values)
    assert msg != values and msg != object()
    if "__repr__" not in vars(type(msg)):
        shown = ", ".join(f"{f.name}={getattr(msg, f.name)!r}" for f in dataclasses.fields(msg))  # type: ignore[arg-type]
        assert repr(msg) == f"{type(msg).__qualname__}({shown})"


def test_byte_like_fields_are_stored_as_bytes_and_sequences_as_tuples() -> None:
    loose: Any = [bytearray(32), memoryview(bytes(range(32)))]
    offer = OfferedHashes(0, False, 1, 2, loose)
    assert offer.hashes == (bytes(32), bytes(range(32)))
    assert all(type(h) is bytes for h in offer.hashes)
    reply = CursorsReply(1, [3, 4])  # type: ignore[arg-type]
    assert reply.cursors == (3, 4)
    delivery = RetrieveDelivery(1, bytearray(8))  # type: ignore[arg-type]
    assert type(delivery.data) is bytes
    assert hash(delivery) == hash(RetrieveDelivery(1, bytes(8)))
    hello = Hello(memoryview(bytes(range(32))))  # type: ignore[arg-type]
    assert type(hello.nonce) is bytes and hello == Hello(bytes(range(32)))


def test_goodbye_code_known_becomes_enum_unknown_stays_int() -> None:
    known = Goodbye(3, "x")
    assert known.code is GoodbyeCode.WRONG_NETWORK
    unknown = Goodbye(999)
    assert unknown.code == 999 and type(unknown.code) is int
    assert Goodbye(GoodbyeCode.PRUNED).reason == ""


def test_limits_are_inclusive() -> None:
    Handshake(0xFFFF, U64_MAX, bytes(32), U64_MAX, "é" * 127 + "a", 0xFFFF, bytes(32), bytes(64))
    Goodbye(0xFFFF, "€" * 341 + "a")  # 1024 bytes
    CursorsReply(U64_MAX, (U64_MAX,) * 32)
    Subscribe(MAX_BIN, False, U64_MAX, U64_MAX)
    Unsubscribe(MAX_BIN, True)
    Unsubscribed(MAX_BIN, True)
    Unsubscribed(0, False)
    Subscribe(0, False, 1, 1)
    OfferedHashes(MAX_BIN, True, 1, 128, (bytes(32),) * 128)
    OfferedHashes(0, False, 5, 5, ())
    ChunkDelivery(MAX_BIN, True, 1, 127, bytes(MAX_CHUNK_DATA_SIZE))
    ChunkDelivery(0, False, 1, 0, bytes(8))
    ChunkDeliveries(MAX_BIN, True, 1, tuple(DeliveredChunk(i, bytes(MAX_CHUNK_DATA_SIZE)) for i in range(15)))
    RetrieveRequest(U64_MAX, bytes(32), 255)
    RetrieveFailure(0, "x" * MAX_REASON_SIZE)
    Peers((PeerRecord(0, "x" * MAX_HOST_SIZE, 0, bytes(32), bytes(64)),) * MAX_PEER_RECORDS)


# -- invalid construction -------------------------------------------------------------------------

HS: dict[str, Any] = {
    "version": 1,
    "network_id": 1,
    "overlay": bytes(32),
    "epoch": 1,
    "host": "h",
    "port": 1,
    "public_key": bytes(32),
    "signature": bytes(64),
}
REC: dict[str, Any] = {
    "network_id": 1,
    "host": "h",
    "port": 1,
    "public_key": bytes(32),
    "signature": bytes(64),
}

INVALID = [
    # (constructor, kwargs, pattern the error must match)
    (Handshake, {**HS, "version": 0x10000}, r"Handshake\.version .*u16"),
    (Handshake, {**HS, "version": -1}, r"Handshake\.version"),
    (Handshake, {**HS, "network_id": 2**64}, r"Handshake\.network_id .*u64"),
    (Handshake, {**HS, "overlay": bytes(31)}, r"Handshake\.overlay must be 32 bytes, got 31"),
    (Handshake, {**HS, "overlay": "00" * 32}, r"Handshake\.overlay must be bytes"),
    (Handshake, {**HS, "epoch": 1.0}, r"Handshake\.epoch must be an int"),
    (Handshake, {**HS, "host": "x" * 256}, r"Handshake\.host must be at most 255 bytes"),
    (Handshake, {**HS, "host": "é" * 128}, r"Handshake\.host must be at most 255 bytes of UTF-8, got 256"),
    (Handshake, {**HS, "host": "\udc80"}, r"Handshake\.host is not encodable as UTF-8"),
    (Handshake, {**HS, "host": b"h"}, r"Handshake\.host must be a str"),
    (Handshake, {**HS, "port": 65536}, r"Handshake\.port"),
    (Handshake, {**HS, "public_key": bytes(33)}, r"Handshake\.public_key must be 32 bytes"),
    (Handshake, {**HS, "signature": bytes(63)}, r"Handshake\.signature must be 64 bytes"),
    (Hello, {"nonce": bytes(31)}, r"Hello\.nonce must be 32 bytes, got 31"),
    (Hello, {"nonce": bytes(33)}, r"Hello\.nonce must be 32 bytes, got 33"),
    (Hello, {"nonce": "00" * 32}, r"Hello\.nonce must be bytes"),
    (Goodbye, {"code": 0x10000}, r"Goodbye\.code"),
    (Goodbye, {"code": 1, "reason": "x" * 1025}, r"Goodbye\.reason must be at most 1024 bytes"),
    (Ping, {"nonce": 2**64}, r"Ping\.nonce"),
    (Ping, {"nonce": True}, r"Ping\.nonce must be an int, got bool"),
    (Pong, {"nonce": -1}, r"Pong\.nonce"),
    (CursorsReply, {"epoch": -1, "cursors": ()}, r"CursorsReply\.epoch"),
    (
        CursorsReply,
        {"epoch": 1, "cursors": (0,) * 33},
        r"CursorsReply\.cursors holds at most 32 items, got 33",
    ),
    (CursorsReply, {"epoch": 1, "cursors": (0, 2**64)}, r"CursorsReply\.cursors\[1\]"),
    (CursorsReply, {"epoch": 1, "cursors": b"\x00"}, r"CursorsReply\.cursors must be a tuple"),
    (
        Subscribe,
        {"bin": 32, "live": False, "start": 1, "end": 1},
        r"Subscribe\.bin must be in 0\.\.31, got 32",
    ),
    (Subscribe, {"bin": -1, "live": False, "start": 1, "end": 1}, r"Subscribe\.bin"),
    (Subscribe, {"bin": 0, "live": 1, "start": 1, "end": 1}, r"Subscribe\.live must be a bool"),
    (Subscribe, {"bin": 0, "live": False, "start": 0, "end": 1}, r"Subscribe\.start must be >= 1"),
    (Subscribe, {"bin": 0, "live": False, "start": 5, "end": 4}, r"Subscribe\.end must be >= start \(5\)"),
    (Subscribe, {"bin": 0, "live": True, "start": 5, "end": 9}, r"Subscribe\.end must be 0 .*live"),
    (Subscribe, {"bin": 0, "live": False, "start": 1, "end": 2**64}, r"Subscribe\.end"),
    (Unsubscribe, {"bin": 99, "live": False}, r"Unsubscribe\.bin"),
    (Unsubscribe, {"bin": 0, "live": None}, r"Unsubscribe\.live must be a bool"),
    (Unsubscribed, {"bin": 32, "live": False}, r"Unsubscribed\.bin must be in 0\.\.31, got 32"),
    (Unsubscribed, {"bin": -1, "live": True}, r"Unsubscribed\.bin"),
    (Unsubscribed, {"bin": 0, "live": 1}, r"Unsubscribed\.live must be a bool"),
    (
        OfferedHashes,
        {"bin": 0, "live": False, "start": 1, "end": 200, "hashes": (bytes(32),) * 129},
        r"OfferedHashes\.hashes holds at most 128 items, got 129",
    ),
    (
        OfferedHashes,
        {"bin": 0, "live": False, "start": 5, "end": 4, "hashes": ()},
        r"OfferedHashes\.end must be >= start",
    ),
    (
        OfferedHashes,
        {"bin": 0, "live": False, "start": 0, "end": 4, "hashes": ()},
        r"OfferedHashes\.start must be >= 1",
    ),
    (
        OfferedHashes,
        {"bin": 0, "live": False, "start": 1, "end": 2, "hashes": (bytes(32),) * 3},
        r"OfferedHashes\.hashes holds 3 hashes, more than the range \[1, 2\]",
    ),
    (
        OfferedHashes,
        {"bin": 0, "live": False, "start": 1, "end": 9, "hashes": (bytes(32), bytes(31))},
        r"OfferedHashes\.hashes\[1\] must be 32 bytes, got 31",
    ),
    (
        OfferedHashes,
        {"bin": 0, "live": False, "start": 1, "end": 99, "hashes": bytes(64)},
        r"OfferedHashes\.hashes must be a tuple",
    ),
    (OfferedHashes, {"bin": 32, "live": False, "start": 1, "end": 1, "hashes": ()}, r"OfferedHashes\.bin"),
    (
        WantedHashes,
        {"bin": 0, "live": False, "start": 1, "end": 1, "want": bytes(15)},
        r"WantedHashes\.want must be 16 bytes, got 15",
    ),
    (
        WantedHashes,
        {"bin": 0, "live": False, "start": 3, "end": 2, "want": bytes(16)},
        r"WantedHashes\.end must be >= start",
    ),
    (
        WantedHashes,
        {"bin": 0, "live": "yes", "start": 1, "end": 2, "want": bytes(16)},
        r"WantedHashes\.live must be a bool",
    ),
    (
        ChunkDelivery,
        {"bin": 0, "live": False, "start": 1, "index": 128, "data": bytes(8)},
        r"ChunkDelivery\.index must be in 0\.\.127, got 128",
    ),
    (
        ChunkDelivery,
        {"bin": 0, "live": False, "start": 1, "index": 0, "data": bytes(7)},
        r"ChunkDelivery\.data must be 8\.\.4201 bytes, got 7",
    ),
    (
        ChunkDelivery,
        {"bin": 0, "live": False, "start": 1, "index": 0, "data": bytes(4202)},
        r"ChunkDelivery\.data must be 8\.\.4201 bytes, got 4202",
    ),
    (
        ChunkDelivery,
        {"bin": 0, "live": False, "start": 0, "index": 0, "data": bytes(8)},
        r"ChunkDelivery\.start must be >= 1",
    ),
    (RetrieveRequest, {"request_id": 1, "address": bytes(31), "hop_limit": 0}, r"RetrieveRequest\.address"),
    (
        RetrieveRequest,
        {"request_id": 1, "address": bytes(32), "hop_limit": 256},
        r"RetrieveRequest\.hop_limit",
    ),
    (
        RetrieveRequest,
        {"request_id": -1, "address": bytes(32), "hop_limit": 0},
        r"RetrieveRequest\.request_id",
    ),
    (RetrieveDelivery, {"request_id": 1, "data": b""}, r"RetrieveDelivery\.data must be 8\.\.4201 bytes"),
    (RetrieveFailure, {"request_id": 1, "reason": "x" * 1025}, r"RetrieveFailure\.reason"),
    (
        PushReceipt,
        {
            "request_id": 1,
            "address": bytes(32),
            "public_key": bytes(32),
            "radius": 33,
            "signature": bytes(64),
        },
        r"PushReceipt\.radius must be in 0\.\.32",
    ),
    (
        PushDelivery,
        {"request_id": 1, "address": bytes(31), "hop_limit": 1, "data": bytes(8)},
        r"PushDelivery\.address must be 32 bytes",
    ),
    (
        PushBatch,
        {"request_id": 1, "direct": False, "chunks": ()},
        r"PushBatch\.chunks must hold at least one chunk",
    ),
    (
        PushBatch,
        {"request_id": 1, "direct": False, "chunks": (PushedChunk(bytes(32), bytes(8)),) * 2},
        r"PushBatch\.chunks names a chunk twice",
    ),
    (
        PushBatch,
        {
            "request_id": 1,
            "direct": True,
            "chunks": tuple(PushedChunk(bytes([i]) * 32, bytes(8)) for i in range(16)),
        },
        r"PushBatch\.chunks holds at most 15 items, got 16",
    ),
    (PushedChunk, {"address": bytes(32), "data": bytes(7)}, r"PushedChunk\.data must be 8\.\.4201 bytes"),
    (PeerRecord, {**REC, "host": "x" * 256}, r"PeerRecord\.host"),
    (PeerRecord, {**REC, "port": -1}, r"PeerRecord\.port"),
    (PeerRecord, {**REC, "network_id": 2**64}, r"PeerRecord\.network_id"),
    (PeerRecord, {**REC, "public_key": bytes(31)}, r"PeerRecord\.public_key"),
    (PeerRecord, {**REC, "signature": bytes(65)}, r"PeerRecord\.signature"),
    (Peers, {"records": (PeerRecord(**REC),) * 129}, r"Peers\.records holds at most 128 items, got 129"),
    (Peers, {"records": ("not a record",)}, r"Peers\.records\[0\] must be a PeerRecord"),
]


@pytest.mark.parametrize(("cls", "kwargs", "pattern"), INVALID, ids=lambda v: getattr(v, "__name__", ""))
def test_invalid_fields_raise_message_error_naming_message_and_field(
    cls: type, kwargs: dict[str, object], pattern: str
) -> None:
    with pytest.raises(MessageError, match=pattern):
        cls(**kwargs)


def test_message_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        Ping(-1)


# -- want bitvector -------------------------------------------------------------------------------


def test_bitvector_layout_worked_example() -> None:
    want = WantedHashes.from_indices(3, False, 1, 128, [0, 3, 9])
    assert want.want == bytes([0x09, 0x02]) + bytes(14)
    assert want.wanted_indices() == [0, 3, 9]
    assert [i for i in range(128) if want.is_wanted(i)] == [0, 3, 9]


def test_bitvector_last_bit_is_msb_of_last_byte() -> None:
    want = WantedHashes.from_indices(0, True, 1, 128, [127, 8])
    assert want.want == bytes([0, 0x01]) + bytes(13) + bytes([0x80])
    assert want.wanted_indices() == [8, 127]


@given(st.sets(st.integers(0, 127)))
def test_bitvector_matches_reference_layout(indices: set[int]) -> None:
    want = WantedHashes.from_indices(0, False, 1, 128, indices)
    expected = bytearray(16)
    for i in indices:
        expected[i // 8] |= 1 << (i % 8)
    assert want.want == bytes(expected)
    assert want.wanted_indices() == sorted(indices)
    assert all(want.is_wanted(i) == (i in indices) for i in range(128))


def test_bitvector_bad_indices() -> None:
    with pytest.raises(MessageError, match=r"index must be in 0\.\.127, got 128"):
        WantedHashes.from_indices(0, False, 1, 2, [128])
    with pytest.raises(MessageError, match="index"):
        WantedHashes.from_indices(0, False, 1, 2, [-1])
    want = WantedHashes.from_indices(0, False, 1, 2, [])
    assert want.want == bytes(16) and want.wanted_indices() == []
    with pytest.raises(IndexError):
        want.is_wanted(128)


# -- helpers --------------------------------------------------------------------------------------


def test_payload_size_counts_chunk_data_only() -> None:
    assert payload_size(ChunkDelivery(0, False, 1, 0, bytes(4104))) == 4104
    assert payload_size(RetrieveDelivery(1, bytes(11))) == 11
    assert (
        payload_size(
            ChunkDeliveries(0, False, 1, (DeliveredChunk(0, bytes(4104)), DeliveredChunk(3, bytes(9))))
        )
        == 4113
    )
    assert payload_size(OfferedHashes(0, False, 1, 2, (bytes(32),) * 2)) == 0
    assert payload_size(Ping(1)) == 0


def test_bulky_messages_have_short_reprs() -> None:
    assert repr(ChunkDelivery(1, True, 5, 2, bytes(4104))) == (
        "ChunkDelivery(bin=1, live=True, start=5, index=2, data=<4104 bytes>)"
    )
    assert repr(RetrieveDelivery(9, bytes(8))) == "RetrieveDelivery(request_id=9, data=<8 bytes>)"
    assert "<3 hashes>" in repr(OfferedHashes(0, False, 1, 3, (bytes(32),) * 3))


def test_peer_record_overlay_is_derived_from_key_and_network() -> None:
    rec = PeerRecord(7, "h", 1, bytes(range(32)), bytes(64))
    assert rec.overlay == overlay_address(bytes(range(32)), 7)
    assert rec.overlay != overlay_address(bytes(range(32)), 8)
    assert len(rec.overlay) == 32
