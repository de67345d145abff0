"""Sequence-feed formats: topics as bee-js makes them, update ids and addresses, v1 and v2 updates."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunks.bmt import bmt_address, keccak256
from chunks.ethkey import Secp256k1Key
from chunks.feeds import (
    FeedUpdate,
    make_update_v1,
    make_update_v2,
    parse_update,
    topic_from_text,
    update_address,
    update_id,
)
from chunks.soc import InvalidSoc, soc_address

KEY = Secp256k1Key.from_hex("634fb5a872396d9693e5c9f9d7233cfa93f395c093371017ff44aa9ae6564cdd")
TOPIC = topic_from_text("chat:v1")


def test_topic_from_text_as_bee_js() -> None:
    # bee-js test/unit/topic-identifier.spec.ts
    assert TOPIC.hex() == "7e15a90abbff6ee821a98dfd278e2967c16a1f8d3fa62534bce0c231169befce"
    assert topic_from_text(TOPIC.hex()) == TOPIC  # 64 hex characters are taken as they are
    assert topic_from_text("zz" * 32) == keccak256(b"zz" * 32)  # 64 characters, not hex: hashed
    assert topic_from_text("ünïcode") == keccak256("ünïcode".encode())


def test_update_id_and_address_definition() -> None:
    assert update_id(TOPIC, 0) == keccak256(TOPIC + bytes(8))
    assert update_id(TOPIC, 258) == keccak256(TOPIC + b"\x00" * 6 + b"\x01\x02")
    assert update_address(KEY.owner, TOPIC, 7) == soc_address(update_id(TOPIC, 7), KEY.owner)
    assert update_id(TOPIC, 2**64 - 1) == keccak256(TOPIC + b"\xff" * 8)
    for bad in (-1, 2**64, True, 1.0):
        with pytest.raises(ValueError, match="feed index"):
            update_id(TOPIC, bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="topic is 32 bytes"):
        update_id(TOPIC[:31], 0)
    with pytest.raises(ValueError, match="owner address is 20 bytes"):
        update_address(KEY.owner + b"x", TOPIC, 0)


def test_v1_update_layout_and_fields() -> None:
    reference = os.urandom(32)
    soc = make_update_v1(KEY, TOPIC, 3, reference, 1_700_000_000)
    assert soc.id == update_id(TOPIC, 3)
    assert soc.address == update_address(KEY.owner, TOPIC, 3)
    assert soc.wrapped == (48 - 8).to_bytes(8, "little") + (1_700_000_000).to_bytes(8, "big") + reference
    update = parse_update(KEY.owner, TOPIC, 3, soc.data)
    assert update == FeedUpdate(KEY.owner, TOPIC, 3, soc)
    assert update.v1_fields == (1_700_000_000, reference)
    encrypted = make_update_v1(KEY, TOPIC, 4, os.urandom(64), 5)
    assert parse_update(KEY.owner, TOPIC, 4, encrypted.data).v1_fields == (5, encrypted.payload[8:])
    with pytest.raises(ValueError, match="32 or 64 bytes"):
        make_update_v1(KEY, TOPIC, 0, bytes(33), 0)


def test_v2_update_wraps_the_content_root() -> None:
    small = make_update_v2(KEY, TOPIC, 0, b"hello feed")
    assert small.payload == b"hello feed" and small.cac_address == bmt_address(b"hello feed")
    assert parse_update(KEY.owner, TOPIC, 0, small.data).v1_fields is None
    root = make_update_v2(KEY, TOPIC, 1, bytes(96), span=3 * 4096)
    assert root.span == 3 * 4096
    assert parse_update(KEY.owner, TOPIC, 1, root.data).v1_fields is None  # span says: a tree root
    ambiguous = make_update_v2(KEY, TOPIC, 2, bytes(40))  # 40 bytes: v1's length (bee #5027)
    assert parse_update(KEY.owner, TOPIC, 2, ambiguous.data).v1_fields == (0, bytes(32))


def test_parse_refuses_an_update_of_another_index_topic_or_owner() -> None:
    soc = make_update_v2(KEY, TOPIC, 5, b"x")
    parse_update(KEY.owner, TOPIC, 5, soc.data)
    for owner, topic, index in ((KEY.owner, TOPIC, 6), (KEY.owner, bytes(32), 5), (bytes(20), TOPIC, 5)):
        with pytest.raises(InvalidSoc, match="give the address"):
            parse_update(owner, topic, index, soc.data)


@settings(max_examples=30, deadline=None)
@given(index=st.integers(min_value=0, max_value=2**64 - 1), payload=st.binary(max_size=4096))
def test_property_update_round_trip(index: int, payload: bytes) -> None:
    soc = make_update_v2(KEY, TOPIC, index, payload)
    update = parse_update(KEY.owner, TOPIC, index, soc.data)
    assert update.soc.payload == payload and update.index == index
