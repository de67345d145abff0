"""Tests of pot.proximity: table cases and a bit-by-bit model."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pot import proximity


def bits(address: bytes) -> str:
    return "".join(f"{byte:08b}" for byte in address)


def naive_proximity(a: bytes, b: bytes) -> int:
    """Count equal leading bits, most significant bit of byte 0 first."""
    common = 0
    for x, y in zip(bits(a), bits(b), strict=True):
        if x != y:
            break
        common += 1
    return common


CASES = [
    # (a, b, proximity)
    (b"\x00", b"\x00", 8),
    (b"\xff", b"\xff", 8),
    (b"\x00", b"\x80", 0),
    (b"\x7f", b"\xff", 0),
    (b"\x00", b"\x40", 1),
    (b"\x80", b"\xc0", 1),
    (b"\x80", b"\x81", 7),
    (b"\x80", b"\x90", 3),
    (b"\x00", b"\x01", 7),
    (b"\x00\x00", b"\x00\x01", 15),
    (b"\x00\x00", b"\x00\x80", 8),
    (b"\x12\x34", b"\x12\x34", 16),
    (b"\xab" * 32, b"\xab" * 32, 256),
    (b"\x00" * 31 + b"\x01", b"\x00" * 32, 255),
    (b"\x00" * 32, b"\x80" + b"\x00" * 31, 0),
    (b"", b"", 0),
]


@pytest.mark.parametrize(("a", "b", "expected"), CASES)
def test_proximity_table(a: bytes, b: bytes, expected: int) -> None:
    assert proximity(a, b) == expected
    assert proximity(b, a) == expected


@pytest.mark.parametrize(("a", "b"), [(b"\x00", b"\x00\x00"), (b"\x00" * 32, b"\x00" * 31), (b"", b"\x00")])
def test_proximity_of_different_lengths_is_an_error(a: bytes, b: bytes) -> None:
    with pytest.raises(ValueError, match=rf"{len(a)} and {len(b)} bytes"):
        proximity(a, b)


@st.composite
def address_pairs(draw: st.DrawFn) -> tuple[bytes, bytes]:
    a = draw(st.binary(min_size=1, max_size=33))
    # mostly b = a with its tail changed, so that long common prefixes are common
    keep = draw(st.integers(0, len(a)))
    tail = draw(st.binary(min_size=len(a) - keep, max_size=len(a) - keep))
    return a, a[:keep] + tail


@given(address_pairs())
def test_proximity_matches_bitwise_model(pair: tuple[bytes, bytes]) -> None:
    a, b = pair
    assert proximity(a, b) == naive_proximity(a, b)
