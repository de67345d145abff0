"""Single-owner chunks: bee's test vectors, making and parsing, and every way a forgery is refused."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunks.bmt import bmt_address, keccak256
from chunks.chunk import Chunk, InvalidChunk
from chunks.ethkey import Secp256k1Key
from chunks.soc import (
    MAX_SOC_DATA_SIZE,
    MIN_SOC_DATA_SIZE,
    REPLICAS_OWNER,
    InvalidSoc,
    equivocation,
    make_soc,
    parse_soc,
    soc_address,
    soc_from_parts,
    validate_soc,
)

BEE_KEY = Secp256k1Key.from_hex("634fb5a872396d9693e5c9f9d7233cfa93f395c093371017ff44aa9ae6564cdd")
BEE_OWNER = bytes.fromhex("8d3766440f0d7b949a5e32995d09619a7f86e632")
# bee pkg/soc/soc_test.go and validator_test.go: id 0, wrapping "foo", owner 0x8d37...
BEE_SOC_ADDRESS = bytes.fromhex("9d453ebb73b2fedaaf44ceddcf7a0aa37f3e3d6453fea5841c31f0ea6d61dc85")
BEE_SOC_DATA = bytes(
    [0] * 32
    + [90, 205, 56, 79, 235, 193, 51, 183, 178, 69, 229, 221, 198, 45, 130, 210, 205, 237, 145, 130, 210]
    + [113, 97, 38, 205, 136, 68, 80, 154, 246, 90, 5, 61, 235, 65, 130, 8, 2, 127, 84, 142, 62, 136, 52]
    + [58, 246, 248, 74, 135, 114, 251, 60, 235, 192, 161, 131, 58, 14, 167, 236, 12, 19, 72, 49, 27]
    + [3, 0, 0, 0, 0, 0, 0, 0, 102, 111, 111]
)
KEY = Secp256k1Key.from_hex("11" * 32)
SECP256K1_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


def test_bee_vector_address_and_data() -> None:
    assert soc_address(bytes(32), BEE_OWNER) == BEE_SOC_ADDRESS
    soc = make_soc(BEE_KEY, bytes(32), b"foo")
    assert soc.address == BEE_SOC_ADDRESS
    assert soc.data == BEE_SOC_DATA  # signature included: both sign with RFC 6979 nonces
    assert soc.cac_address.hex() == "2387e8e7d8a48c2a9339c97c1dc3461a9a7aa07e994c5cb8b38fd7c1b3e6ea48"


def test_bee_vector_validates_and_parses() -> None:
    soc = validate_soc(BEE_SOC_ADDRESS, BEE_SOC_DATA)
    assert (soc.owner, soc.id, soc.span, soc.payload) == (BEE_OWNER, bytes(32), 3, b"foo")
    assert soc.wrapped == Chunk.from_payload(b"foo").data
    assert parse_soc(BEE_SOC_DATA) == soc
    Chunk(BEE_SOC_ADDRESS, BEE_SOC_DATA).verify()


FORGERIES = [
    # bee validator_test.go TestInvalid and more, each with the reason we give
    (
        "wrong soc address",
        bytes([255 - BEE_SOC_ADDRESS[0]]) + BEE_SOC_ADDRESS[1:],
        BEE_SOC_DATA,
        "give the address",
    ),
    ("invalid data", BEE_SOC_ADDRESS, BEE_SOC_DATA[:97] + b"\x01" + BEE_SOC_DATA[98:], "give the address"),
    ("invalid id", BEE_SOC_ADDRESS, b"\x01" + BEE_SOC_DATA[1:], "give the address"),
    ("invalid signature", BEE_SOC_ADDRESS, BEE_SOC_DATA[:32] + b"\x01" + BEE_SOC_DATA[33:], "bad signature"),
    ("other signature", BEE_SOC_ADDRESS, BEE_SOC_DATA[:33] + b"\x01" + BEE_SOC_DATA[34:], "give the address"),
    ("bad v", BEE_SOC_ADDRESS, BEE_SOC_DATA[:96] + b"\x00" + BEE_SOC_DATA[97:], "bad signature: .*v is 0"),
    ("r zero", BEE_SOC_ADDRESS, bytes(64) + BEE_SOC_DATA[64:], "bad signature"),
    ("too short", BEE_SOC_ADDRESS, BEE_SOC_DATA[:104], "104 bytes, shorter than the 105"),
    ("too long", BEE_SOC_ADDRESS, BEE_SOC_DATA[:105] + bytes(4097), "4202 bytes, over 4201"),
]


@pytest.mark.parametrize(("address", "data", "problem"), [pytest.param(*f[1:], id=f[0]) for f in FORGERIES])
def test_forgeries_are_refused_naming_the_problem(address: bytes, data: bytes, problem: str) -> None:
    with pytest.raises(InvalidSoc, match=problem) as info:
        validate_soc(address, data)
    assert isinstance(info.value, InvalidChunk)
    assert info.value.address == address and address.hex() in str(info.value)
    with pytest.raises(InvalidChunk):
        Chunk(address, data).verify()


def test_sizes_and_payload_limits() -> None:
    empty = make_soc(KEY, os.urandom(32), b"")
    assert len(empty.data) == MIN_SOC_DATA_SIZE == 105
    full = make_soc(KEY, os.urandom(32), os.urandom(4096))
    assert len(full.data) == MAX_SOC_DATA_SIZE == 4201
    for soc in (empty, full):
        assert validate_soc(soc.address, soc.data) == soc
    with pytest.raises(ValueError, match="4097 bytes"):
        make_soc(KEY, bytes(32), bytes(4097))
    with pytest.raises(ValueError, match="id is 32 bytes"):
        make_soc(KEY, bytes(31), b"x")


def test_wraps_a_tree_root_with_its_span() -> None:
    """A v2 feed update wraps a file's root chunk: payload = child addresses, span = file size."""
    payload = bytes(64)
    soc = make_soc(KEY, bytes(32), payload, span=5000)
    assert soc.span == 5000 and soc.cac_address == bmt_address(payload, 5000)
    assert validate_soc(soc.address, soc.data).cac_address == soc.cac_address


def test_soc_from_parts_checks_the_claimed_owner() -> None:
    soc = make_soc(KEY, b"\x07" * 32, b"hello")
    assert soc_from_parts(KEY.owner, soc.id, soc.signature, soc.wrapped) == soc
    with pytest.raises(InvalidSoc, match=f"signature is by owner {KEY.owner.hex()}, not {BEE_OWNER.hex()}"):
        soc_from_parts(BEE_OWNER, soc.id, soc.signature, soc.wrapped)
    with pytest.raises(InvalidSoc, match="signature is by owner"):
        soc_from_parts(KEY.owner, soc.id, soc.signature, soc.wrapped[:-1] + b"X")
    with pytest.raises(InvalidSoc, match="owner must be 20 bytes"):
        soc_from_parts(KEY.owner[:19], soc.id, soc.signature, soc.wrapped)
    with pytest.raises(InvalidSoc, match="4097 bytes, over the 4096-byte limit"):
        soc_from_parts(KEY.owner, soc.id, soc.signature, bytes(8 + 4097))


def test_parse_names_whoever_signed() -> None:
    """Without an address, any signature names *some* owner: parse says who, not whether to trust."""
    soc = make_soc(KEY, bytes(32), b"x")
    other = parse_soc(soc.data[:32] + bytes([soc.data[32] ^ 1]) + soc.data[33:])
    assert other.owner != KEY.owner and other.address != soc.address


def test_dispersed_replicas_are_bound_to_their_content() -> None:
    """bee's ReplicasOwner key is public (01 then 31 zero bytes, bee's validator_test.go): its SOCs
    need id[1:] == cac[1:]."""
    replicas_key = Secp256k1Key(b"\x01" + bytes(31))
    assert replicas_key.owner == REPLICAS_OWNER
    content = os.urandom(4096)
    cac = bmt_address(content)
    good = make_soc(replicas_key, b"\x01" + cac[1:], content)
    validate_soc(good.address, good.data)
    bad_id = b"\x01" + cac[1:2] + bytes([cac[2] ^ 1]) + cac[3:]
    bad = make_soc(replicas_key, bad_id, content)
    with pytest.raises(InvalidSoc, match="dispersed replica"):
        validate_soc(bad.address, bad.data)


def test_two_contents_at_one_address_are_both_valid_and_an_equivocation() -> None:
    """The owner may sign other content under the same id: same address, other wrapped chunk.
    Validity cannot tell; `equivocation` can, and returns the pair as the proof."""
    a = make_soc(KEY, bytes(32), b"first")
    b = make_soc(KEY, bytes(32), b"second")
    assert a.address == b.address and a.cac_address != b.cac_address
    assert validate_soc(a.address, a.data) == a and validate_soc(b.address, b.data) == b
    assert equivocation(a.address, a.data, b.data) == (a, b)
    assert equivocation(a.address, a.data, a.data) is None
    # the same content signed again (here the malleable twin: s -> n - s, v flipped, which bee's
    # recovery accepts too): other bytes, same content, not an equivocation
    r, s_value, v = a.signature[:32], int.from_bytes(a.signature[32:64], "big"), a.signature[64]
    twin = r + (SECP256K1_ORDER - s_value).to_bytes(32, "big") + bytes([55 - v])
    resigned = a.data[:32] + twin + a.data[97:]
    assert resigned != a.data and validate_soc(a.address, resigned).owner == KEY.owner
    assert equivocation(a.address, a.data, resigned) is None
    forged = make_soc(Secp256k1Key.generate(), bytes(32), b"second")
    assert equivocation(a.address, a.data, forged.data) is None  # not the owner's: just invalid


@settings(max_examples=40, deadline=None)
@given(payload=st.binary(max_size=4096), id=st.binary(min_size=32, max_size=32), data=st.data())
def test_property_valid_until_any_byte_changes(payload: bytes, id: bytes, data: st.DataObject) -> None:
    soc = make_soc(KEY, id, payload)
    assert soc.address == keccak256(id + KEY.owner)
    assert validate_soc(soc.address, soc.data) == soc
    index = data.draw(st.integers(min_value=0, max_value=len(soc.data) - 1))
    damaged = bytearray(soc.data)
    damaged[index] ^= data.draw(st.integers(min_value=1, max_value=255))
    with pytest.raises(InvalidSoc):
        validate_soc(soc.address, bytes(damaged))
