"""Secp256k1 keys: owner addresses and signatures equal to bee's test vectors, recovery, the key file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunks.bmt import keccak256
from chunks.ethkey import (
    BadSignature,
    KeyFileError,
    Secp256k1Key,
    checksum_address,
    ethereum_digest,
    load_key_file,
    recover_owner,
    save_key_file,
)

# bee pkg/crypto/signer_test.go: this key's Ethereum address.
BEE_KEY = "634fb5a872396d9693e5c9f9d7233cfa93f395c093371017ff44aa9ae6564cdd"
BEE_OWNER = "8d3766440f0d7b949a5e32995d09619a7f86e632"
# bee pkg/soc/soc_test.go: that key's signature of keccak256(zero id || BMT("foo")).
BEE_FOO_SIGNATURE = (
    "5acd384febc133b7b245e5ddc62d82d2cded9182d2716126cd8844509af65a05"
    "3deb418208027f548e3e88343af6f84a8772fb3cebc0a1833a0ea7ec0c1348311b"
)
FOO_CAC = bytes.fromhex("2387e8e7d8a48c2a9339c97c1dc3461a9a7aa07e994c5cb8b38fd7c1b3e6ea48")


def test_owner_address_of_bees_test_key() -> None:
    key = Secp256k1Key.from_hex(BEE_KEY)
    assert key.owner.hex() == BEE_OWNER
    assert keccak256(key.public_key)[12:] == key.owner
    assert len(key.public_key_compressed) == 33 and key.public_key_compressed[1:] == key.public_key[:32]


def test_signature_equals_bees_byte_for_byte() -> None:
    """Both use RFC 6979 nonces, so the same key and data give bee's exact signature."""
    key = Secp256k1Key.from_hex("0x" + BEE_KEY)
    signature = key.sign(bytes(32) + FOO_CAC)
    assert signature.hex() == BEE_FOO_SIGNATURE
    assert signature[64] in (27, 28)
    assert recover_owner(signature, bytes(32) + FOO_CAC).hex() == BEE_OWNER


def test_ethereum_digest_is_eip191_over_keccak() -> None:
    data = b"some data"
    assert ethereum_digest(data) == keccak256(b"\x19Ethereum Signed Message:\n32" + keccak256(data))


def test_eip55_checksum_addresses() -> None:
    # Vectors from EIP-55.
    for address in (
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
    ):
        assert checksum_address(bytes.fromhex(address[2:])) == address


@settings(max_examples=25, deadline=None)
@given(st.binary(min_size=32, max_size=32), st.binary(max_size=200))
def test_property_recover_names_the_signer_and_only_for_that_data(seed: bytes, data: bytes) -> None:
    try:
        key = Secp256k1Key(seed)
    except ValueError:
        return  # zero or over the curve order: astronomically rare
    signature = key.sign(data)
    assert recover_owner(signature, data) == key.owner
    assert recover_owner(signature, data + b"x") != key.owner


def test_bad_signatures_are_refused_with_a_reason() -> None:
    key = Secp256k1Key.generate()
    signature = key.sign(b"data")
    with pytest.raises(BadSignature, match="64 bytes, not 65"):
        recover_owner(signature[:64], b"data")
    with pytest.raises(BadSignature, match="v is 29, not 27 or 28"):
        recover_owner(signature[:64] + b"\x1d", b"data")
    with pytest.raises(BadSignature, match="no public key"):
        recover_owner(bytes(64) + signature[64:], b"data")  # r = 0


def test_invalid_private_keys() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        Secp256k1Key(bytes(31))
    with pytest.raises(ValueError, match="curve order"):
        Secp256k1Key(bytes(32))
    with pytest.raises(ValueError, match="64 hex"):
        Secp256k1Key.from_hex("abc")
    with pytest.raises(ValueError, match="not hexadecimal"):
        Secp256k1Key.from_hex("zz" * 32)


def test_equality_and_repr_hide_the_key() -> None:
    key = Secp256k1Key.from_hex(BEE_KEY)
    assert key == Secp256k1Key(key.private_bytes()) and hash(key) == hash(Secp256k1Key(key.private_bytes()))
    assert key != Secp256k1Key.generate()
    assert BEE_KEY not in repr(key) and BEE_OWNER in repr(key)


def test_key_file_round_trip_owner_only(tmp_path: Path) -> None:
    key = Secp256k1Key.generate()
    path = tmp_path / "feed.key"
    save_key_file(key, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == key.private_bytes().hex() + "\n"
    assert load_key_file(path) == key
    with pytest.raises(FileExistsError):
        save_key_file(Secp256k1Key.generate(), path)
    assert load_key_file(path) == key  # not overwritten


def test_key_file_refusals_name_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "missing.key"
    with pytest.raises(KeyFileError, match=r"cannot open key file .*missing\.key"):
        load_key_file(missing)
    loose = tmp_path / "loose.key"
    loose.write_text(BEE_KEY)
    os.chmod(loose, 0o644)
    with pytest.raises(KeyFileError, match="chmod 600"):
        load_key_file(loose)
    garbage = tmp_path / "garbage.key"
    garbage.write_text("not a key")
    os.chmod(garbage, 0o600)
    with pytest.raises(KeyFileError, match="64 hex characters"):
        load_key_file(garbage)
    with pytest.raises(KeyFileError, match="not a regular file"):
        load_key_file(tmp_path)
