"""Chunk: layout, span and payload, explicit verification (content and single-owner chunks) and its errors."""

from __future__ import annotations

import dataclasses
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunks import CHUNK_SIZE, SPAN_SIZE, Chunk, InvalidChunk, bmt_address
from chunks.bmt_reference import reference_bmt_address
from chunks.chunk import MAX_CAC_DATA_SIZE, MAX_DATA_SIZE
from chunks.ethkey import Secp256k1Key
from chunks.soc import InvalidSoc, make_soc


def test_constants() -> None:
    assert (CHUNK_SIZE, SPAN_SIZE) == (4096, 8)


def test_from_payload_layout() -> None:
    chunk = Chunk.from_payload(b"foo")
    assert chunk.address.hex() == "2387e8e7d8a48c2a9339c97c1dc3461a9a7aa07e994c5cb8b38fd7c1b3e6ea48"
    assert chunk.data == (3).to_bytes(8, "little") + b"foo"
    assert chunk.span == 3
    assert chunk.payload == b"foo"
    chunk.verify()


def test_intermediate_chunk_with_larger_span_is_valid() -> None:
    children = [Chunk.from_payload(os.urandom(4096)).address for _ in range(3)]
    payload = b"".join(children)
    chunk = Chunk.from_payload(payload, span=3 * 4096)
    assert chunk.span == 3 * 4096
    assert chunk.payload == payload
    assert chunk.address == reference_bmt_address(payload, 3 * 4096)
    assert chunk.address != bmt_address(payload)
    chunk.verify()


def test_construction_does_not_hash() -> None:
    """Decoding untrusted bytes is cheap; only verify() notices the mismatch."""
    chunk = Chunk(bytes(32), b"\x03" + bytes(7) + b"bar")
    with pytest.raises(InvalidChunk):
        chunk.verify()


def test_verify_names_both_hashes_on_mismatch() -> None:
    good = Chunk.from_payload(b"some payload")
    tampered = Chunk(good.address, good.data[:-1] + b"X")
    with pytest.raises(InvalidChunk) as info:
        tampered.verify()
    actual = bmt_address(tampered.payload)
    message = str(info.value)
    assert good.address.hex() in message
    assert f"hashes to {actual.hex()}" in message
    assert info.value.address == good.address


def test_verify_catches_a_changed_span() -> None:
    good = Chunk.from_payload(b"payload")
    wrong_span = Chunk(good.address, (8).to_bytes(8, "little") + good.payload)
    with pytest.raises(InvalidChunk, match="hashes to"):
        wrong_span.verify()


def test_data_shorter_than_span() -> None:
    chunk = Chunk(bytes(32), b"\x01\x02\x03")
    with pytest.raises(InvalidChunk, match="3 bytes, shorter than the 8-byte span") as info:
        chunk.verify()
    assert bytes(32).hex() in str(info.value)
    with pytest.raises(InvalidChunk):
        _ = chunk.span
    with pytest.raises(InvalidChunk):
        _ = chunk.payload


def test_data_over_4104_bytes_can_only_be_a_single_owner_chunk() -> None:
    chunk = Chunk(bytes(32), (4097).to_bytes(8, "little") + bytes(4097))
    with pytest.raises(InvalidSoc, match="invalid single-owner chunk"):
        chunk.verify()
    with pytest.raises(InvalidSoc, match="4202 bytes, over 4201"):
        Chunk(bytes(32), bytes(4202)).verify()
    with pytest.raises(ValueError):
        Chunk.from_payload(bytes(4097))


def test_verify_accepts_single_owner_chunks_of_every_size() -> None:
    key = Secp256k1Key.generate()
    for payload in (b"", b"foo", os.urandom(3999), os.urandom(4096)):  # data 105, 108, 4104, 4201 bytes
        soc = make_soc(key, os.urandom(32), payload)
        chunk = Chunk.from_soc(soc)
        assert chunk.address == soc.address and chunk.data == soc.data
        chunk.verify()
        assert chunk.soc() == soc


def test_a_content_chunk_is_not_a_soc_and_a_failed_check_names_both_kinds() -> None:
    content = Chunk.from_payload(os.urandom(200))
    with pytest.raises(InvalidSoc):
        content.soc()
    soc = make_soc(Secp256k1Key.generate(), bytes(32), b"payload")
    with pytest.raises(InvalidChunk) as info:
        Chunk(soc.address, soc.data[:-1] + b"X").verify()
    assert "hashes to" in info.value.problem and "as a single-owner chunk:" in info.value.problem
    with pytest.raises(InvalidChunk, match="hashes to") as short:
        Chunk(bytes(32), bytes(104)).verify()  # too short for a SOC: only the content-chunk reason
    assert "single-owner" not in str(short.value)


def test_limits() -> None:
    assert (MAX_CAC_DATA_SIZE, MAX_DATA_SIZE) == (4104, 4201)


def test_full_and_empty_payloads() -> None:
    for payload in (b"", bytes(4096), os.urandom(4096)):
        chunk = Chunk.from_payload(payload)
        assert chunk.address == reference_bmt_address(payload)
        assert len(chunk.data) == SPAN_SIZE + len(payload)
        chunk.verify()


def test_address_must_be_32_bytes_and_fields_bytes() -> None:
    with pytest.raises(InvalidChunk, match="31 bytes"):
        Chunk(bytes(31), bytes(8))
    with pytest.raises(TypeError):
        Chunk(bytearray(32), bytes(8))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Chunk(bytes(32), "data")  # type: ignore[arg-type]


def test_frozen_and_value_equality() -> None:
    a = Chunk.from_payload(b"x")
    assert a == Chunk.from_payload(b"x")
    assert hash(a) == hash(Chunk.from_payload(b"x"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.data = b""  # type: ignore[misc]


def test_checked_marks_a_verified_chunk_and_refuses_a_bad_one() -> None:
    good = Chunk.from_payload(b"x")
    assert not good.verified
    checked = good.checked()
    assert checked.verified and checked == good and hash(checked) == hash(good)
    assert checked.checked() is checked
    with pytest.raises(dataclasses.FrozenInstanceError):
        checked.verified = False  # type: ignore[misc]
    bad = Chunk(good.address, good.data[:-1] + b"y")
    with pytest.raises(InvalidChunk):
        bad.checked()


def test_repr_is_short() -> None:
    chunk = Chunk.from_payload(bytes(4096))
    assert len(repr(chunk)) < 120
    assert chunk.address.hex() in repr(chunk)


@settings(max_examples=60, deadline=None)
@given(
    payload=st.binary(max_size=4096),
    span=st.one_of(st.none(), st.integers(min_value=0, max_value=2**64 - 1)),
    data=st.data(),
)
def test_property_valid_until_any_byte_changes(payload: bytes, span: int | None, data: st.DataObject) -> None:
    chunk = Chunk.from_payload(payload, span)
    chunk.verify()
    assert chunk.span == (len(payload) if span is None else span)
    index = data.draw(st.integers(min_value=0, max_value=len(chunk.data) - 1))
    flip = data.draw(st.integers(min_value=1, max_value=255))
    damaged = bytearray(chunk.data)
    damaged[index] ^= flip
    with pytest.raises(InvalidChunk):
        Chunk(chunk.address, bytes(damaged)).verify()
