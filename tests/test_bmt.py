"""BMT hashing: the production hasher against the reference, the vectors and the fallback."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunks.bmt import (
    KECCAK_BACKEND,
    bmt_address,
    bmt_address_pycryptodome,
    keccak256,
    keccak256_pycryptodome,
)
from chunks.bmt_reference import reference_bmt_address, reference_keccak256

Hasher = Callable[..., bytes]
HASHERS: dict[str, Hasher] = {
    "production": bmt_address,
    "pycryptodome-fallback": bmt_address_pycryptodome,
    "reference": reference_bmt_address,
}
VECTORS = {
    b"foo": "2387e8e7d8a48c2a9339c97c1dc3461a9a7aa07e994c5cb8b38fd7c1b3e6ea48",
    b"greaterthanspan": "27913f1bdb6e8e52cbd5a5fd4ab577c857287edf6969b41efe926b51de0f4f23",
}
LENGTHS = [0, 1, 31, 32, 33, 63, 64, 65, 127, 128, 129, 2048, 2049, 4095, 4096]
# Keccak-256 of the empty string: the legacy (Ethereum) padding, not NIST SHA3-256 (a7ffc6f8...).
KECCAK_EMPTY = "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"


@pytest.mark.parametrize("name", HASHERS)
@pytest.mark.parametrize("payload", VECTORS)
def test_vectors(name: str, payload: bytes) -> None:
    assert HASHERS[name](payload).hex() == VECTORS[payload]


@pytest.mark.parametrize("keccak", [keccak256, keccak256_pycryptodome, reference_keccak256])
def test_keccak_is_legacy_keccak(keccak: Callable[[bytes], bytes]) -> None:
    assert keccak(b"").hex() == KECCAK_EMPTY


def test_prefers_pysha3_when_installed() -> None:
    try:
        import sha3  # noqa: F401
    except ImportError:
        assert KECCAK_BACKEND == "pycryptodome"
    else:
        assert KECCAK_BACKEND == "pysha3"


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("name", ["production", "pycryptodome-fallback"])
def test_matches_reference_for_every_length_class(name: str, length: int) -> None:
    rng = random.Random(length)
    for _ in range(3):
        payload = rng.randbytes(length)
        assert HASHERS[name](payload) == reference_bmt_address(payload)


@pytest.mark.parametrize("span", [0, 1, 4096, 4097, 10**9, 2**64 - 1])
@pytest.mark.parametrize("length", [0, 33, 4096])
def test_explicit_span_matches_reference(length: int, span: int) -> None:
    payload = random.Random(span ^ length).randbytes(length)
    expected = reference_bmt_address(payload, span)
    assert bmt_address(payload, span) == expected
    assert bmt_address_pycryptodome(payload, span) == expected


@settings(max_examples=150, deadline=None)
@given(
    payload=st.one_of(st.binary(max_size=4096), st.binary(min_size=4000, max_size=4096)),
    span=st.one_of(st.none(), st.integers(min_value=0, max_value=2**64 - 1)),
)
def test_property_matches_reference(payload: bytes, span: int | None) -> None:
    assert bmt_address(payload, span) == reference_bmt_address(payload, span)


def test_span_is_hashed_and_defaults_to_length() -> None:
    payload = b"abc"
    assert bmt_address(payload) == bmt_address(payload, 3)
    assert bmt_address(payload, 4) != bmt_address(payload, 3)
    # Zero padding is implied: trailing zeros change the address only through the span.
    assert bmt_address(payload + bytes(100), 3) == bmt_address(payload)


@pytest.mark.parametrize("name", HASHERS)
def test_rejects_oversized_payload_and_bad_spans(name: str) -> None:
    hasher = HASHERS[name]
    with pytest.raises(ValueError, match="4097"):
        hasher(bytes(4097))
    for span in (-1, 2**64):
        with pytest.raises(ValueError, match="span"):
            hasher(b"x", span)


def test_accepts_bytearray_and_memoryview() -> None:
    payload = bytes(range(200))
    assert bmt_address(bytearray(payload)) == bmt_address(memoryview(payload)) == bmt_address(payload)


def test_fallback_when_pysha3_is_missing() -> None:
    """With the sha3 module unimportable, the module picks pycryptodome and gives the same addresses."""
    code = (
        "import sys; sys.modules['sha3'] = None\n"
        "from chunks import bmt\n"
        "print(bmt.KECCAK_BACKEND)\n"
        "print(bmt.bmt_address(b'foo').hex())\n"
        "print(bmt.bmt_address(bytes(range(256)) * 16).hex())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    backend, foo, full = result.stdout.split()
    assert backend == "pycryptodome"
    assert foo == VECTORS[b"foo"]
    assert full == reference_bmt_address(bytes(range(256)) * 16).hex()
