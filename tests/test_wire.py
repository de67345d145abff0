"""One declaration per wire message (streamer/wire/): what is derived from it, and the registry of
every message."""

from __future__ import annotations

import enum
from typing import Annotated, Any

import pytest

from streamer.errors import MessageError, RemoteProtocolError
from streamer.messages import MESSAGE_CLASSES, ChunkDelivery, Hello, MessageType, Ping
from streamer.wire import connection, gossip, live, provable, pullsync, pushsync, retrieval
from streamer.wire.body import BodyReader
from streamer.wire.compound import Records
from streamer.wire.declare import Message, declared_in, message, record
from streamer.wire.fields import U8, U64, Bin, Bool, Bytes, ChunkData, Code, Host
from streamer.wire.registry import PROTOCOLS, _type_codes

# -- a message declared here, never registered: everything about it derives from these lines ----


class Colour(enum.IntEnum):
    RED = 1


@record
class Item:
    size: U8
    name: Host


@message(0x7E)
class Sample(Message):
    bin: Bin
    live: Bool
    colour: Annotated[int, Code(Colour, 8)]
    name: Host
    tag: Annotated[bytes, Bytes(4)]
    number: U64
    items: Annotated[tuple[Item, ...], Records(Item, 3)]
    data: ChunkData


@message(0x7F, fieldwise=True)
class Pair(Message):
    first: U8
    second: U64


SAMPLE = Sample(3, True, 1, "hé", b"abcd", 7, (Item(1, "x"), Item(2, "")), bytes(8))


def read(cls: Any, body: bytes) -> Any:
    reader = BodyReader(cls.__name__, body)
    msg = cls._layout.read(reader)
    reader.done()
    return msg


def test_a_declaration_makes_a_frozen_validating_value() -> None:
    assert isinstance(SAMPLE, Message) and SAMPLE.TYPE == 0x7E
    assert SAMPLE.colour is Colour.RED  # a known code becomes its member, an unknown one stays an int
    assert type(Sample(3, True, 9, "", b"abcd", 7, (), bytes(8)).colour) is int
    with pytest.raises(MessageError, match=r"Sample\.bin must be in 0\.\.31, got 32"):
        Sample(32, True, 1, "", b"abcd", 7, (), bytes(8))
    with pytest.raises(MessageError, match=r"Sample\.items\[0\] must be an Item, got str"):
        Sample(3, True, 1, "", b"abcd", 7, ("x",), bytes(8))  # type: ignore[arg-type]
    with pytest.raises(MessageError, match=r"Item\.size must be in 0\.\.255 \(u8\), got 256"):
        Item(256, "")
    loose: Any = Sample(3, True, 1, "", bytearray(b"abcd"), 7, [], memoryview(bytes(8)))  # type: ignore[arg-type]
    assert (type(loose.tag), loose.items, type(loose.data)) == (bytes, (), bytes)


def test_the_body_is_the_packed_head_then_the_parts_in_declaration_order() -> None:
    wire = Sample._layout.write(SAMPLE)
    head = bytes([3, 1, 1]) + b"abcd" + (7).to_bytes(8, "big")
    parts = b"\x03h\xc3\xa9" + b"\x00\x02" + b"\x01\x01x" + b"\x02\x00" + bytes(8)
    assert wire == head + parts
    assert read(Sample, wire) == SAMPLE


def test_short_bodies_name_the_head_or_with_fieldwise_the_missing_field() -> None:
    with pytest.raises(
        RemoteProtocolError, match=r"field bin\.\.number needs 15 bytes at offset 0, only 3 left"
    ):
        read(Sample, bytes(3))
    with pytest.raises(RemoteProtocolError, match=r"field live must be 0 or 1 \(a bool\), got 2"):
        read(Sample, bytes([3, 2]) + bytes(13))
    with pytest.raises(
        RemoteProtocolError, match=r"field items\[0\]\.name length needs 1 bytes at offset 22, only 0 left"
    ):
        read(Sample, Sample._layout.write(SAMPLE)[:22])
    with pytest.raises(RemoteProtocolError, match=r"field second needs 8 bytes at offset 1, only 3 left"):
        read(Pair, bytes(4))
    assert read(Pair, bytes([5]) + bytes(8)) == Pair(5, 0)


def test_declarations_that_cannot_be_derived_are_refused() -> None:
    with pytest.raises(TypeError, match="not a Message"):
        message(0x70)(Item)  # type: ignore[type-var]
    with pytest.raises(TypeError, match="reads to the end of the body: put it last"):

        @message(0x71)
        class Early(Message):
            data: ChunkData
            name: Host

    with pytest.raises(TypeError, match="has no field kind"):

        @message(0x72)
        class Bare(Message):
            number: int


def test_the_registry_is_every_module_s_declarations_with_distinct_codes() -> None:
    assert (connection, pullsync, provable, retrieval, pushsync, gossip, live) == PROTOCOLS
    assert tuple(cls for module in PROTOCOLS for cls in declared_in(module)) == MESSAGE_CLASSES
    assert declared_in(connection)[:2] == (Hello, connection.Handshake)
    assert ChunkDelivery.TYPE == 0x16 == MessageType.CHUNK_DELIVERY  # type: ignore[attr-defined]
    assert [m.name for m in MessageType][:5] == ["HANDSHAKE", "GOODBYE", "PING", "PONG", "HELLO"]
    with pytest.raises(ValueError, match="share type code 0x03"):
        _type_codes((Ping, Sample, type("Other", (Ping,), {})))
