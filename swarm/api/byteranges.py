"""HTTP Range requests (RFC 9110, section 14) for one byte range: parsing and the headers.

Pure. A single range is served as 206 with Content-Range; a range that starts past the end (or
asks for the last 0 bytes, or any bytes of an empty file) is unsatisfiable, 416 with
`Content-Range: bytes */SIZE`. A header that is malformed, names another unit, or asks for
several ranges is ignored, as the RFC allows: the whole representation is sent with 200.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ByteRange", "RangeNotSatisfiable", "parse_range"]

_SPEC = re.compile(r"^\s*(\d*)\s*-\s*(\d*)\s*$")


class RangeNotSatisfiable(Exception):
    """The requested range holds no byte of the representation (a 416)."""

    def __init__(self, header: str, size: int) -> None:
        super().__init__(f"range {header.strip()!r} is outside the {size} bytes of the content")
        self.size = size

    @property
    def content_range(self) -> str:
        return f"bytes */{self.size}"


@dataclass(frozen=True)
class ByteRange:
    """The bytes [start, end) of a representation of `size` bytes; never empty."""

    start: int
    end: int
    size: int

    def __post_init__(self) -> None:
        if not 0 <= self.start < self.end <= self.size:
            raise ValueError(f"not a byte range of {self.size} bytes: [{self.start}, {self.end})")

    @property
    def length(self) -> int:
        return self.end - self.start

    @property
    def content_range(self) -> str:
        return f"bytes {self.start}-{self.end - 1}/{self.size}"


def parse_range(header: str | None, size: int) -> ByteRange | None:
    """The one byte range `header` asks of `size` bytes; None to send them all (no header, or
    one to ignore). Raises RangeNotSatisfiable for a range that holds none of them."""
    if header is None:
        return None
    unit, sep, specs = header.partition("=")
    if not sep or unit.strip().lower() != "bytes" or "," in specs:
        return None
    match = _SPEC.match(specs)
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = match.group(1), match.group(2)
    if first == "":  # suffix: the last N bytes
        suffix = int(last)
        if suffix == 0 or size == 0:
            raise RangeNotSatisfiable(header, size)
        return ByteRange(max(0, size - suffix), size, size)
    start = int(first)
    if last != "" and int(last) < start:
        return None  # invalid: ignored
    if start >= size:
        raise RangeNotSatisfiable(header, size)
    end = size if last == "" else min(int(last) + 1, size)
    return ByteRange(start, end, size)
