"""Reading and writing bodies: integers, length-prefixed UTF-8 strings, and a reader.

Every body is written and read with these (the layouts derived in streamer/wire/layout.py and
the few hand-written ones), so that a short or malformed body always fails the same way:
:class:`BodyReader` raises RemoteProtocolError naming the message, the field and the offset,
never a bare struct.error.
"""

from __future__ import annotations

import struct
from typing import Any

from streamer.errors import RemoteProtocolError

U8 = struct.Struct(">B")
U16 = struct.Struct(">H")
U64 = struct.Struct(">Q")


def str8(s: str) -> bytes:
    """``s`` as UTF-8 after its u8 length."""
    raw = s.encode("utf-8")
    return U8.pack(len(raw)) + raw


def str16(s: str) -> bytes:
    """``s`` as UTF-8 after its u16 length."""
    raw = s.encode("utf-8")
    return U16.pack(len(raw)) + raw


class BodyReader:
    """Reads the fields of one body; every shortfall names the message and the field."""

    __slots__ = ("_body", "_name", "_pos")

    def __init__(self, name: str, body: bytes) -> None:
        self._name = name
        self._body = body
        self._pos = 0

    def error(self, what: str) -> RemoteProtocolError:
        return RemoteProtocolError(f"malformed {self._name} body ({len(self._body)} bytes): {what}")

    def _take(self, size: int, field: str) -> bytes:
        left = len(self._body) - self._pos
        if size > left:
            raise self.error(f"field {field} needs {size} bytes at offset {self._pos}, only {left} left")
        raw = self._body[self._pos : self._pos + size]
        self._pos += size
        return raw

    def fixed(self, st: struct.Struct, field: str) -> tuple[Any, ...]:
        return st.unpack(self._take(st.size, field))

    def fields(self, st: struct.Struct, sizes: tuple[tuple[str, int], ...]) -> tuple[Any, ...]:
        """Like :meth:`fixed`, but a shortfall names the first of the ``(field, size)`` that is
        missing, with its own offset, as reading the fields one by one would."""
        if st.size > len(self._body) - self._pos:
            for field, size in sizes:
                self._take(size, field)
        return st.unpack(self._take(st.size, "?"))

    def u8(self, field: str) -> int:
        return self._take(1, field)[0]

    def u16(self, field: str) -> int:
        return int(U16.unpack(self._take(2, field))[0])

    def u64(self, field: str) -> int:
        return int(U64.unpack(self._take(8, field))[0])

    def raw(self, size: int, field: str) -> bytes:
        return self._take(size, field)

    def boolean(self, value: int, field: str) -> bool:
        if value not in (0, 1):
            raise self.error(f"field {field} must be 0 or 1 (a bool), got {value}")
        return value == 1

    def text(self, size: int, field: str) -> str:
        raw = self._take(size, field)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(f"field {field} is not valid UTF-8: {exc.reason} at byte {exc.start}") from exc

    def str8(self, field: str) -> str:
        return self.text(self.u8(f"{field} length"), field)

    def str16(self, field: str) -> str:
        return self.text(self.u16(f"{field} length"), field)

    def rest(self) -> bytes:
        raw = self._body[self._pos :]
        self._pos = len(self._body)
        return raw

    def left(self) -> int:
        return len(self._body) - self._pos

    def done(self) -> None:
        if self._pos != len(self._body):
            raise self.error(f"{len(self._body) - self._pos} unexpected trailing bytes at offset {self._pos}")
