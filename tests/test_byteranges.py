"""Range headers: the cases of RFC 9110 section 14, and every header against a naive model."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swarm.api.byteranges import ByteRange, RangeNotSatisfiable, parse_range


@pytest.mark.parametrize(
    ("header", "size", "expected"),
    [
        (None, 100, None),
        ("bytes=0-0", 100, (0, 1)),
        ("bytes=0-99", 100, (0, 100)),
        ("bytes=10-", 100, (10, 100)),
        ("bytes=-1", 100, (99, 100)),
        ("bytes=-500", 100, (0, 100)),  # a suffix longer than the content: all of it
        ("bytes=50-5000", 100, (50, 100)),  # a last byte past the end is clamped
        ("Bytes = 3 - 4 ", 100, (3, 5)),
        ("bytes=5-4", 100, None),  # invalid: ignored
        ("bytes=0-1,5-6", 100, None),  # several ranges: ignored, the whole content is sent
        ("items=0-1", 100, None),
        ("bytes=-", 100, None),
        ("bytes=a-b", 100, None),
        ("bytes", 100, None),
    ],
)
def test_range_headers(header: str | None, size: int, expected: tuple[int, int] | None) -> None:
    found = parse_range(header, size)
    assert (None if found is None else (found.start, found.end)) == expected


@pytest.mark.parametrize(("header", "size"), [("bytes=100-", 100), ("bytes=-0", 100), ("bytes=0-", 0)])
def test_unsatisfiable_ranges(header: str, size: int) -> None:
    with pytest.raises(RangeNotSatisfiable) as raised:
        parse_range(header, size)
    assert raised.value.content_range == f"bytes */{size}"


def test_content_range() -> None:
    assert ByteRange(10, 20, 100).content_range == "bytes 10-19/100"
    with pytest.raises(ValueError):
        ByteRange(5, 5, 100)


def naive(first: int | None, last: int | None, size: int) -> tuple[int, int] | str | None:
    """The bytes a single range asks for, by listing them: (start, end), 'unsatisfiable' or None."""
    if first is None:
        assert last is not None
        wanted = list(range(size))[-last:] if last else []
    elif last is not None and last < first:
        return None
    else:
        wanted = [i for i in range(size) if i >= first and (last is None or i <= last)]
    return (wanted[0], wanted[-1] + 1) if wanted else "unsatisfiable"


@given(
    first=st.none() | st.integers(0, 300),
    last=st.none() | st.integers(0, 300),
    size=st.integers(0, 200),
)
def test_a_single_range_asks_for_the_bytes_it_names(first: int | None, last: int | None, size: int) -> None:
    if first is None and last is None:
        return
    header = f"bytes={'' if first is None else first}-{'' if last is None else last}"
    expected = naive(first, last, size)
    try:
        found = parse_range(header, size)
    except RangeNotSatisfiable:
        assert expected == "unsatisfiable", header
        return
    assert (None if found is None else (found.start, found.end)) == expected, header
