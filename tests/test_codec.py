"""Frame codec: exact layouts, round trips, any split of a stream, rejection of bad input."""

from __future__ import annotations

import itertools
import re
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamer import (
    MAX_FRAME_SIZE,
    MESSAGE_CLASSES,
    ChunkDeliveries,
    ChunkDelivery,
    CursorsReply,
    CursorsRequest,
    DeliveredChunk,
    FrameDecoder,
    Goodbye,
    GoodbyeCode,
    Handshake,
    Hello,
    LocalProtocolError,
    Message,
    MessageError,
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
    RemoteProtocolError,
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
    decode,
    encode,
)
from streamer.messages import PushBatch, PushBatchReceipt, PushedChunk
from tests.live_strategies import LIVE_GOLDEN
from tests.test_messages import STRATEGIES, messages


def frame(type_code: int, body: bytes) -> bytes:
    return struct.pack(">IB", 1 + len(body), type_code) + body


def decode_all(chunks: list[bytes], max_frame_size: int = MAX_FRAME_SIZE) -> list[Message]:
    """Feed ``chunks`` one by one, draining after each (the way a connection uses the decoder)."""
    decoder = FrameDecoder(max_frame_size)
    out: list[Message] = []
    for chunk in chunks:
        decoder.receive_data(chunk)
        while (msg := decoder.next_message()) is not None:
            out.append(msg)
        assert decoder.buffered_bytes < 4 + max_frame_size
    decoder.receive_eof()
    assert decoder.buffered_bytes == 0
    return out


CHUNK = bytes.fromhex("0300000000000000") + b"foo"

# (message, frame in hex): the layouts of docs/protocol.md, byte for byte.
GOLDEN = [
    (Ping(0x0102030405060708), "00000009 03 0102030405060708"),
    (Pong(1), "00000009 04 0000000000000001"),
    (CursorsRequest(), "00000001 10"),
    (CursorsReply(5, (1, 2)), "0000001a 11 0000000000000005 02 0000000000000001 0000000000000002"),
    (Subscribe(4, False, 1, 300), "00000013 12 04 00 0000000000000001 000000000000012c"),
    (Subscribe(4, True, 301, 0), "00000013 12 04 01 000000000000012d 0000000000000000"),
    (Unsubscribe(4, True), "00000003 13 04 01"),
    (Unsubscribed(4, True), "00000003 17 04 01"),
    (Unsubscribed(31, False), "00000003 17 1f 00"),
    (
        OfferedHashes(2, True, 10, 11, (b"\xaa" * 32, b"\xbb" * 32)),
        "00000053 14 02 01 000000000000000a 000000000000000b" + " aa" * 32 + " bb" * 32,
    ),
    (
        WantedHashes.from_indices(2, True, 10, 11, [0, 3, 9]),
        "00000023 15 02 01 000000000000000a 000000000000000b 0902" + " 00" * 14,
    ),
    (ChunkDelivery(2, True, 10, 1, CHUNK), "00000017 16 02 01 000000000000000a 01 0300000000000000 666f6f"),
    (
        ChunkDeliveries(2, True, 10, (DeliveredChunk(1, CHUNK), DeliveredChunk(5, CHUNK))),
        "00000029 1e 02 01 000000000000000a 0002"
        + " 01 000b 0300000000000000 666f6f"
        + " 05 000b 0300000000000000 666f6f",
    ),
    (StateRequest(4, 300, 128), "00000012 18 04 000000000000012c 0000000000000080"),
    (
        StateReply(SignedState(4, 5, 3, b"\x11" * 32, b"\x22" * 64), 2, (b"\xaa" * 32, b"\xbb" * 32)),
        "000000ba 19 04 0000000000000005 0000000000000003"
        + " 11" * 32
        + " 22" * 64
        + " 0000000000000002"
        + " aa" * 32
        + " bb" * 32,
    ),
    (
        ProvenOffer(
            2,
            True,
            10,
            11,
            (b"\xaa" * 32, b"\xbb" * 32),
            b"\x02" + bytes(15),
            SignedState(2, 5, 11, b"\x11" * 32, b"\x22" * 64),
        ),
        "000000cb 1a 02 01 000000000000000a 000000000000000b 02"
        + " 00" * 15
        + " aa" * 32
        + " bb" * 32
        + " 0000000000000005"
        + " 11" * 32
        + " 22" * 64,
    ),
    (
        ProvenOffer(2, False, 10, 10, (b"\xaa" * 32,), bytes(16), None, (b"\xcc" * 32,), (b"\xdd" * 32,)),
        "00000084 1a 02 00 000000000000000a 000000000000000a"
        + " 00" * 16
        + " aa" * 32
        + " 01"
        + " cc" * 32
        + " dd" * 32,
    ),
    (
        Receipt(4, 5, 1, 300, b"\x11" * 32, b"\x22" * 64),
        "0000007a 1b 04 0000000000000005 0000000000000001 000000000000012c" + " 11" * 32 + " 22" * 64,
    ),
    (
        SkippedOffer(2, 12, 300, 5, b"\x11" * 32, b"\x22" * 64, (b"\xaa" * 32,)),
        "0000009a 1d 02 000000000000000c 000000000000012c 0000000000000005"
        + " 11" * 32
        + " 22" * 64
        + " aa" * 32,
    ),
    (
        RolledBack(4, 5, 300, b"\x11" * 32, b"\x22" * 64),
        "00000072 1c 04 0000000000000005 000000000000012c" + " 11" * 32 + " 22" * 64,
    ),
    (RetrieveRequest(7, b"\xcc" * 32, 3), "0000002a 20 0000000000000007" + " cc" * 32 + " 03"),
    (RetrieveDelivery(7, CHUNK), "00000014 21 0000000000000007 0300000000000000 666f6f"),
    (RetrieveFailure(7, "not found"), "00000014 22 0000000000000007 0009 6e6f7420666f756e64"),
    (
        PushDelivery(7, b"\xcc" * 32, 3, CHUNK),
        "00000035 23 0000000000000007" + " cc" * 32 + " 03 0300000000000000 666f6f",
    ),
    (
        PushReceipt(7, b"\xcc" * 32, b"\xdd" * 32, 5, b"\xee" * 64),
        "0000008a 24 0000000000000007" + " cc" * 32 + " dd" * 32 + " 05" + " ee" * 64,
    ),
    (PushFailure(7, "no peer"), "00000012 25 0000000000000007 0007 6e6f2070656572"),
    (
        PushBatch(7, True, (PushedChunk(b"\xaa" * 32, bytes(8)),)),
        "00000036 26 0000000000000007 01 0001" + " aa" * 32 + " 0008" + " 00" * 8,
    ),
    (
        PushBatchReceipt(7, b"\xdd" * 32, 5, b"\xee" * 64, (b"\xaa" * 32,)),
        "0000008a 27 0000000000000007" + " dd" * 32 + " 05" + " ee" * 64 + " aa" * 32,
    ),
    (Goodbye(GoodbyeCode.WRONG_NETWORK, "bye"), "00000008 02 0003 0003 627965"),
    (Hello(bytes(range(32))), "00000021 05 " + bytes(range(32)).hex()),
    (
        Handshake(1, 10, b"\x11" * 32, 0x5F, "h", 1634, b"\x22" * 32, b"\x33" * 64),
        "00000097 01 0001 000000000000000a"
        + " 11" * 32
        + " 000000000000005f 0662"
        + " 22" * 32
        + " 33" * 64
        + " 01 68",
    ),
    (
        Peers((PeerRecord(10, "h", 1634, b"\x22" * 32, b"\x33" * 64),)),
        "0000006f 30 0001 000000000000000a 0662" + " 22" * 32 + " 33" * 64 + " 01 68",
    ),
]
GOLDEN += LIVE_GOLDEN


def test_golden_vectors_cover_every_message_class() -> None:
    assert {type(msg) for msg, _ in GOLDEN} == set(MESSAGE_CLASSES)


@pytest.mark.parametrize(
    ("msg", "wire"), GOLDEN, ids=lambda v: type(v).__name__ if not isinstance(v, str) else ""
)
def test_golden_layout(msg: Message, wire: str) -> None:
    assert encode(msg).hex() == wire.replace(" ", "")
    assert decode(bytes.fromhex(wire)) == msg


def test_chunk_delivery_overhead_is_16_bytes() -> None:
    assert len(encode(ChunkDelivery(0, False, 1, 0, bytes(4104)))) - 4104 == 16


@pytest.mark.parametrize("cls", MESSAGE_CLASSES, ids=lambda c: c.__name__)
@given(data=st.data())
def test_round_trip_every_message_type(cls: Any, data: st.DataObject) -> None:
    msg = data.draw(STRATEGIES[cls])
    wire = encode(msg)
    assert wire[4] == cls.TYPE
    assert struct.unpack(">I", wire[:4])[0] == len(wire) - 4 <= MAX_FRAME_SIZE
    decoded = decode(wire)
    assert type(decoded) is cls
    assert decoded == msg
    assert encode(decoded) == wire


def test_largest_messages_fit_in_a_frame() -> None:
    big_records = (PeerRecord(2**64 - 1, "€" * 85, 65535, bytes(32), bytes(64)),) * 128
    largest: list[Message] = [
        Peers(big_records),
        ChunkDelivery(31, True, 2**64 - 1, 127, bytes(4104)),
        ChunkDeliveries(31, True, 2**64 - 1, tuple(DeliveredChunk(i, bytes(4201)) for i in range(15))),
        OfferedHashes(31, True, 1, 128, (bytes(32),) * 128),
        Handshake(1, 1, bytes(32), 1, "x" * 255, 1, bytes(32), bytes(64)),
        Goodbye(1, "x" * 1024),
    ]
    for msg in largest:
        wire = encode(msg)
        assert len(wire) - 4 <= MAX_FRAME_SIZE
        assert decode(wire) == msg


def test_encode_rejects_what_is_not_a_message() -> None:
    with pytest.raises(LocalProtocolError, match="not a streamer message"):
        encode("Ping(1)")  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError, match="PeerRecord"):
        encode(PeerRecord(1, "h", 1, bytes(32), bytes(64)))  # type: ignore[arg-type]


def test_encode_rejects_a_frame_over_the_limit() -> None:
    msg = RetrieveDelivery(1, bytes(8))
    object.__setattr__(msg, "data", bytes(MAX_FRAME_SIZE))  # forced past validation
    with pytest.raises(LocalProtocolError, match=r"frame length 65545 exceeds MAX_FRAME_SIZE 65536"):
        encode(msg)


# -- splitting ------------------------------------------------------------------------------------

SHORT: list[Message] = [
    Ping(1),
    CursorsRequest(),
    Subscribe(3, True, 9, 0),
    ChunkDelivery(3, True, 9, 0, CHUNK),
    Goodbye(0),
]
SHORT_STREAM = b"".join(encode(m) for m in SHORT)


def test_short_stream_split_at_every_position() -> None:
    for i in range(len(SHORT_STREAM) + 1):
        assert decode_all([SHORT_STREAM[:i], SHORT_STREAM[i:]]) == SHORT, i


def test_short_stream_split_at_every_pair_of_positions() -> None:
    n = len(SHORT_STREAM)
    for i in range(n + 1):
        for j in range(i, n + 1):
            chunks = [SHORT_STREAM[:i], SHORT_STREAM[i:j], SHORT_STREAM[j:]]
            assert decode_all(chunks) == SHORT, (i, j)


def test_short_stream_byte_by_byte() -> None:
    assert decode_all([SHORT_STREAM[i : i + 1] for i in range(len(SHORT_STREAM))]) == SHORT


@given(st.lists(messages, min_size=1, max_size=8), st.data())
def test_any_split_of_a_stream_gives_the_same_messages(msgs: list[Message], data: st.DataObject) -> None:
    stream = b"".join(encode(m) for m in msgs)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(stream)), max_size=20)))
    bounds = [0, *cuts, len(stream)]
    chunks = [stream[a:b] for a, b in itertools.pairwise(bounds)]
    assert decode_all(chunks) == msgs
    assert decode_all([memoryview(stream)]) == msgs  # type: ignore[list-item]


def test_counters_and_buffered_bytes() -> None:
    decoder = FrameDecoder()
    decoder.receive_data(SHORT_STREAM[:15])  # Ping (13 bytes) and 2 bytes of the next frame
    assert decoder.buffered_bytes == 15
    assert decoder.next_message() == Ping(1)
    assert decoder.next_message() is None
    assert decoder.buffered_bytes == 2
    assert (decoder.frames_decoded, decoder.bytes_decoded) == (1, 13)
    decoder.receive_data(SHORT_STREAM[15:])
    msgs: list[Message] = []
    while (m := decoder.next_message()) is not None:
        msgs.append(m)
    assert [Ping(1), *msgs] == SHORT
    assert decoder.frames_decoded == len(SHORT)
    assert decoder.bytes_decoded == len(SHORT_STREAM)
    assert decoder.buffered_bytes == 0


def test_whole_frames_stay_readable_after_eof() -> None:
    decoder = FrameDecoder()
    decoder.receive_data(encode(Ping(1)) + encode(Pong(2)))
    decoder.receive_eof()
    assert decoder.next_message() == Ping(1)
    assert decoder.next_message() == Pong(2)
    assert decoder.next_message() is None
    with pytest.raises(LocalProtocolError, match="after receive_eof"):
        decoder.receive_data(b"x")


# -- bounded buffering ----------------------------------------------------------------------------


def test_feeding_without_draining_is_refused_once_a_frame_is_buffered() -> None:
    decoder = FrameDecoder(max_frame_size=64)
    ping = encode(Ping(1))  # 13 bytes
    decoder.receive_data(ping * 6)  # 78 bytes: one receive may be as large as it likes
    with pytest.raises(LocalProtocolError, match="call next_message"):
        decoder.receive_data(ping)
    for _ in range(6):
        assert decoder.next_message() == Ping(1)
    decoder.receive_data(ping)  # drained: accepted again
    assert decoder.next_message() == Ping(1)


def test_partially_drained_decoder_still_accepts_up_to_one_frame() -> None:
    decoder = FrameDecoder(max_frame_size=64)
    ping = encode(Ping(1))
    decoder.receive_data(ping * 5)
    for _ in range(3):
        decoder.next_message()
    decoder.receive_data(ping)  # 26 bytes held <= 4 + 64
    assert [decoder.next_message() for _ in range(4)] == [Ping(1)] * 3 + [None]


def test_max_frame_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_frame_size"):
        FrameDecoder(0)


# -- rejection ------------------------------------------------------------------------------------


def test_oversized_length_is_rejected_as_soon_as_the_header_is_in() -> None:
    decoder = FrameDecoder()
    decoder.receive_data(struct.pack(">I", MAX_FRAME_SIZE + 1)[:3])  # 3 of 4 bytes: undecided
    with pytest.raises(RemoteProtocolError, match=r"frame of 65537 bytes exceeds the limit of 65536 bytes"):
        decoder.receive_data(struct.pack(">I", MAX_FRAME_SIZE + 1)[3:])  # no body sent at all


def test_length_at_the_limit_is_accepted() -> None:
    decoder = FrameDecoder(max_frame_size=20)
    wire = encode(RetrieveDelivery(1, bytes(11)))  # length 1 + 8 + 11 = 20
    decoder.receive_data(wire)
    assert decoder.next_message() == RetrieveDelivery(1, bytes(11))
    decoder = FrameDecoder(max_frame_size=19)
    with pytest.raises(RemoteProtocolError, match="frame of 20 bytes exceeds the limit of 19 bytes"):
        decoder.receive_data(wire[:4])


def test_oversized_frame_after_valid_frames_is_caught_at_its_header() -> None:
    decoder = FrameDecoder()
    with pytest.raises(RemoteProtocolError, match="4294967295 bytes exceeds"):
        decoder.receive_data(encode(Ping(1)) + b"\xff\xff\xff\xff")


def test_zero_length_frame_is_rejected() -> None:
    with pytest.raises(RemoteProtocolError, match="length 0"):
        FrameDecoder().receive_data(b"\x00\x00\x00\x00")


def test_unknown_type_is_rejected_before_the_body() -> None:
    decoder = FrameDecoder()
    with pytest.raises(RemoteProtocolError, match="unknown message type 0x7f"):
        decoder.receive_data(struct.pack(">IB", 1000, 0x7F))


def test_decoder_stays_failed() -> None:
    decoder = FrameDecoder()
    with pytest.raises(RemoteProtocolError):
        decoder.receive_data(frame(0xEE, b""))
    with pytest.raises(RemoteProtocolError, match="failed earlier: unknown message type 0xee"):
        decoder.next_message()
    with pytest.raises(RemoteProtocolError, match="failed earlier"):
        decoder.receive_data(encode(Ping(1)))


@pytest.mark.parametrize(
    ("data", "pattern"),
    [
        (b"\x00\x00", r"got 2 of the 4 length-header bytes, 2 missing"),
        (b"\x00\x00\x00\x09", r"got 0 of 9 bytes after the length header, 9 missing"),
        (b"\x00\x00\x00\x09\x03", r"got 1 of 9 bytes after the length header, 8 missing"),
        (encode(Ping(1))[:-3], r"got 6 of 9 bytes after the length header, 3 missing"),
        (encode(Ping(1)) + encode(Pong(1))[:-1], r"got 8 of 9 bytes .* 1 missing"),
    ],
)
def test_truncated_frame_at_eof(data: bytes, pattern: str) -> None:
    decoder = FrameDecoder()
    decoder.receive_data(data)
    with pytest.raises(RemoteProtocolError, match=r"truncated frame at EOF: " + pattern):
        decoder.receive_eof()


def test_clean_eof() -> None:
    decoder = FrameDecoder()
    decoder.receive_eof()
    assert decoder.next_message() is None


def _u64(*values: int) -> bytes:
    return b"".join(struct.pack(">Q", v) for v in values)


STREAM_HDR = b"\x02\x01" + _u64(10, 11)

MALFORMED = [
    # (type, body, pattern, caused by MessageError)
    (
        0x03,
        b"\x00" * 7,
        r"malformed Ping body \(7 bytes\): field nonce needs 8 bytes at offset 0, only 7 left",
        False,
    ),
    (0x04, b"\x00" * 9, r"malformed Pong body \(9 bytes\): 1 unexpected trailing bytes at offset 8", False),
    (0x10, b"\x00", r"malformed CursorsRequest body .*1 unexpected trailing bytes", False),
    (
        0x11,
        _u64(1) + b"\x02" + _u64(1),
        r"malformed CursorsReply body .*field cursors \(2 x u64\) needs 16",
        False,
    ),
    (0x11, _u64(1) + b"\x21" + _u64(*range(33)), r"invalid CursorsReply from peer: .*at most 32", True),
    (0x11, _u64(1) + b"\x01" + _u64(1, 2), r"CursorsReply .*8 unexpected trailing bytes", False),
    (
        0x12,
        b"\x20\x00" + _u64(1, 1),
        r"invalid Subscribe from peer: Subscribe\.bin must be in 0\.\.31, got 32",
        True,
    ),
    (
        0x12,
        b"\x00\x02" + _u64(1, 1),
        r"malformed Subscribe body .*field live must be 0 or 1 \(a bool\), got 2",
        False,
    ),
    (0x12, b"\x00\x00" + _u64(5, 4), r"invalid Subscribe from peer: Subscribe\.end must be >= start", True),
    (0x12, b"\x00\x00" + _u64(0, 4), r"Subscribe\.start must be >= 1", True),
    (0x12, b"\x00\x01" + _u64(5, 9), r"Subscribe\.end must be 0", True),
    (
        0x12,
        b"\x00\x00" + _u64(1),
        r"malformed Subscribe body \(10 bytes\): field bin/live/start/end needs 18",
        False,
    ),
    (0x13, b"\x00", r"malformed Unsubscribe body .*field live needs 1", False),
    (0x13, b"\x00\xff", r"Unsubscribe .*live must be 0 or 1", False),
    (0x17, b"\x00", r"malformed Unsubscribed body \(1 bytes\): field live needs 1", False),
    (
        0x17,
        b"\x00\x02",
        r"malformed Unsubscribed body .*field live must be 0 or 1 \(a bool\), got 2",
        False,
    ),
    (0x17, b"\x00\x01\x00", r"malformed Unsubscribed body .*1 unexpected trailing bytes", False),
    (
        0x17,
        b"\x20\x01",
        r"invalid Unsubscribed from peer: Unsubscribed\.bin must be in 0\.\.31, got 32",
        True,
    ),
    (0x17, b"\xff\x00", r"Unsubscribed\.bin must be in 0\.\.31, got 255", True),
    (
        0x14,
        STREAM_HDR + bytes(33),
        r"malformed OfferedHashes body .*hashes take 33 bytes, not a multiple of 32",
        False,
    ),
    (0x14, b"\x02\x01" + _u64(1, 200) + bytes(32 * 129), r"OfferedHashes\.hashes holds at most 128", True),
    (0x14, b"\x02\x01" + _u64(11, 10), r"OfferedHashes\.end must be >= start", True),
    (
        0x14,
        b"\x02\x01" + _u64(10, 10) + bytes(64),
        r"OfferedHashes\.hashes holds 2 hashes, more than the range",
        True,
    ),
    (0x14, b"\x2a\x01" + _u64(10, 11), r"OfferedHashes\.bin", True),
    (0x15, STREAM_HDR + bytes(15), r"malformed WantedHashes body .*field want needs 16 bytes", False),
    (0x15, STREAM_HDR + bytes(17), r"WantedHashes .*1 unexpected trailing", False),
    (
        0x15,
        b"\x02\x07" + _u64(10, 11) + bytes(16),
        r"WantedHashes .*live must be 0 or 1 \(a bool\), got 7",
        False,
    ),
    (
        0x16,
        b"\x02\x01" + _u64(10) + b"\x80" + CHUNK,
        r"ChunkDelivery\.index must be in 0\.\.127, got 128",
        True,
    ),
    (
        0x16,
        b"\x02\x01" + _u64(10) + b"\x00" + bytes(7),
        r"ChunkDelivery\.data must be 8\.\.4201 bytes, got 7",
        True,
    ),
    (0x16, b"\x02\x01" + _u64(10) + b"\x00" + bytes(4202), r"ChunkDelivery\.data .*got 4202", True),
    (0x16, b"\x02\x01" + _u64(10), r"malformed ChunkDelivery .*bin/live/start/index needs 11", False),
    (0x20, _u64(1) + bytes(31), r"malformed RetrieveRequest .*field address needs 32", False),
    (0x20, _u64(1) + bytes(32), r"malformed RetrieveRequest .*field hop_limit needs 1", False),
    (0x21, _u64(1) + bytes(4), r"RetrieveDelivery\.data must be 8\.\.4201 bytes, got 4", True),
    (0x22, _u64(1) + b"\x00\x05abc", r"malformed RetrieveFailure .*field reason needs 5 bytes", False),
    (
        0x22,
        _u64(1) + b"\x00\x02\xc3\x28",
        r"malformed RetrieveFailure .*field reason is not valid UTF-8",
        False,
    ),
    (0x22, _u64(1) + b"\x04\x01" + bytes(1025), r"RetrieveFailure\.reason must be at most 1024 bytes", True),
    (0x02, b"\x00\x01", r"malformed Goodbye .*field reason length needs 2", False),
    (
        0x05,
        bytes(31),
        r"malformed Hello body \(31 bytes\): field nonce needs 32 bytes at offset 0, only 31 left",
        False,
    ),
    (
        0x05,
        bytes(33),
        r"malformed Hello body \(33 bytes\): 1 unexpected trailing bytes at offset 32",
        False,
    ),
    (0x05, b"", r"malformed Hello body \(0 bytes\): field nonce needs 32 bytes", False),
    (
        0x01,
        bytes(147),
        r"malformed Handshake body \(147 bytes\): field version\.\.signature needs 148",
        False,
    ),
    (
        0x01,
        bytes(148) + b"\x02h",
        r"malformed Handshake .*field host needs 2 bytes at offset 149, only 1 left",
        False,
    ),
    (0x01, bytes(148) + b"\x01\xff", r"malformed Handshake .*field host is not valid UTF-8", False),
    (
        0x30,
        b"\x00\x02" + _u64(1) + bytes(2 + 96) + b"\x00",
        r"malformed Peers .*field records\[1\] needs 106",
        False,
    ),
    (
        0x30,
        b"\x00\x81" + (_u64(1) + bytes(2 + 96) + b"\x00") * 129,
        r"Peers\.records holds at most 128",
        True,
    ),
    (0x30, b"\x00", r"malformed Peers .*field count needs 2", False),
    (0x18, b"\x04" + _u64(1), r"malformed StateRequest body .*bin/size/known needs 17", False),
    (0x18, b"\x04" + _u64(0, 0), r"invalid StateRequest from peer: StateRequest\.size must be >= 1", True),
    (0x19, bytes(121) + b"\x00", r"malformed StateReply .*proof take 1 bytes", False),
    (0x1A, b"\x02\x00" + _u64(1, 200) + bytes(16), r"range \[1, 200\] is not 1\.\.128 bin IDs", False),
    (
        0x1A,
        b"\x02\x00" + _u64(1, 1) + b"\x02" + bytes(15) + bytes(32) + b"\x00",
        r"ProvenOffer\.holes marks entries beyond the 1 offered",
        True,
    ),
    (
        0x1A,
        b"\x02\x01" + _u64(1, 1) + bytes(16) + bytes(32) + bytes(10),
        r"malformed ProvenOffer .*field epoch/root/signature needs 104",
        False,
    ),
    (
        0x1A,
        b"\x02\x00" + _u64(1, 1) + bytes(16) + bytes(32) + b"\x02" + bytes(32),
        r"malformed ProvenOffer .*field left \(2 x 32\) needs 64",
        False,
    ),
    (0x1B, b"\x04", r"malformed Receipt body \(1 bytes\): field bin..signature needs 121", False),
]


@pytest.mark.parametrize(
    ("type_code", "body", "pattern", "chained"),
    [pytest.param(*row, id=f"0x{row[0]:02x}-{i}") for i, row in enumerate(MALFORMED)],
)
def test_malformed_bodies_are_remote_protocol_errors(
    type_code: int, body: bytes, pattern: str, chained: bool
) -> None:
    decoder = FrameDecoder()
    decoder.receive_data(frame(type_code, body))
    with pytest.raises(RemoteProtocolError, match=pattern) as info:
        decoder.next_message()
    assert isinstance(info.value.__cause__, MessageError) == chained
    assert decoder.frames_decoded == 0


def test_decode_wants_exactly_one_frame() -> None:
    with pytest.raises(RemoteProtocolError, match="exactly one frame"):
        decode(encode(Ping(1)) * 2)
    with pytest.raises(RemoteProtocolError, match="exactly one frame"):
        decode(b"")
    with pytest.raises(RemoteProtocolError, match="truncated"):
        decode(encode(Ping(1))[:-1])


def test_example_frames_in_the_protocol_document_decode_and_reencode() -> None:
    doc = (Path(__file__).parent.parent / "docs" / "protocol.md").read_text()
    examples = doc.split("## 11. Example frames", 1)[1]
    frames = [bytes.fromhex(line) for line in examples.splitlines() if re.fullmatch(r"  [0-9a-f ]+", line)]
    assert len(frames) == 13
    for wire in frames:
        assert encode(decode(wire)) == wire
    assert decode(frames[0]) == Hello(bytes(range(32)))
    assert decode(frames[5]) == Unsubscribed(4, True)
    assert decode(frames[6]) == WantedHashes.from_indices(2, True, 10, 11, [0, 3, 9])
    assert decode(frames[8]) == ChunkDeliveries(
        2, True, 10, (DeliveredChunk(1, CHUNK), DeliveredChunk(5, CHUNK))
    )
    assert decode(frames[11]) == StateRequest(4, 300, 128)
    offer = decode(frames[12])
    assert isinstance(offer, ProvenOffer) and offer.hole_indices() == [1] and offer.right == (b"\xcc" * 32,)
