"""Field kinds: what a message field may hold, and how it goes on the wire.

A message declares each field with its type annotated with a kind, ``bin: Bin`` where
``Bin = Annotated[int, UInt(8, hi=MAX_BIN)]``; the message's validation is derived from the
kinds (streamer/wire/declare.py) and so is its body (streamer/wire/layout.py). A kind is either
*packed*, a fixed-size field with a struct format in ``fmt`` (the packed fields, in declaration
order, are the body's head, written and read with one struct), or a *part* that writes and reads
itself after the head (a string, a bit vector, data to the end of the body; the lists and the
nested record of streamer/wire/compound.py).

``check`` raises :class:`MessageError` naming the message and the field, or returns the value
to store: byte-like values become ``bytes``, iterables tuples, known codes their enum member.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Annotated, Any, TypeAlias

from streamer.errors import MessageError
from streamer.wire import body
from streamer.wire.body import BodyReader
from streamer.wire.limits import (
    ADDRESS_SIZE,
    HASH_SIZE,
    MAX_BIN,
    MAX_CHUNK_DATA_SIZE,
    MAX_HOST_SIZE,
    MAX_REASON_SIZE,
    MIN_CHUNK_DATA_SIZE,
    PUBLIC_KEY_SIZE,
    SIGNATURE_SIZE,
)


def uint(owner: str, field: str, value: Any, bits: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MessageError(f"{owner}.{field} must be an int, got {type(value).__name__}")
    if not 0 <= value < 1 << bits:
        raise MessageError(f"{owner}.{field} must be in 0..{(1 << bits) - 1} (u{bits}), got {value}")
    return value


def to_bytes(
    owner: str, field: str, value: Any, size: int | None = None, *, lo: int = 0, hi: int | None = None
) -> bytes:
    if isinstance(value, bytes):
        data = value
    elif isinstance(value, bytearray | memoryview):
        data = bytes(value)
    else:
        raise MessageError(f"{owner}.{field} must be bytes, got {type(value).__name__}")
    if size is not None and len(data) != size:
        raise MessageError(f"{owner}.{field} must be {size} bytes, got {len(data)}")
    if len(data) < lo or (hi is not None and len(data) > hi):
        raise MessageError(f"{owner}.{field} must be {lo}..{hi} bytes, got {len(data)}")
    return data


def to_tuple(owner: str, field: str, value: Any, max_len: int) -> tuple[Any, ...]:
    if isinstance(value, str | bytes | bytearray | memoryview) or not isinstance(value, Iterable):
        raise MessageError(f"{owner}.{field} must be a tuple, got {type(value).__name__}")
    items = value if isinstance(value, tuple) else tuple(value)
    if len(items) > max_len:
        raise MessageError(f"{owner}.{field} holds at most {max_len} items, got {len(items)}")
    return items


class Field:
    """A kind of field. Packed kinds set ``fmt``; parts implement ``write`` and ``read``."""

    fmt = ""
    is_bool = False
    raw = False  # a part written as the value itself (bytes)
    to_end = False  # a part that reads to the end of the body: the last one
    payload = False  # chunk data: what payload_size counts

    def check(self, owner: str, name: str, value: Any) -> Any:
        raise NotImplementedError

    def write(self, value: Any) -> bytes:
        raise TypeError(f"{type(self).__name__} fields have no wire form of their own")

    def writer(self) -> Callable[[Any], bytes]:
        """What writes a value of this kind (``write``, unless a builtin does it faster)."""
        return self.write

    def read(self, r: BodyReader, label: str) -> Any:
        raise TypeError(f"{type(self).__name__} fields have no wire form of their own")


class UInt(Field):
    """An unsigned integer of ``bits`` (8, 16, 64), at least ``lo`` and at most ``hi``."""

    def __init__(self, bits: int, *, lo: int = 0, hi: int | None = None, why: str = "") -> None:
        self.bits, self.lo, self.hi, self.why = bits, lo, hi, why
        self.fmt = {8: "B", 16: "H", 64: "Q"}[bits]
        self.top = (1 << bits) - 1 if hi is None else hi

    def check(self, owner: str, name: str, value: Any) -> Any:
        if type(value) is int and self.lo <= value <= self.top:
            return value
        uint(owner, name, value, self.bits)
        if self.hi is not None and value > self.hi:
            raise MessageError(f"{owner}.{name} must be in 0..{self.hi}, got {value}")
        if value < self.lo:
            why = f" ({self.why})" if self.why else ""
            raise MessageError(f"{owner}.{name} must be >= {self.lo}{why}, got {value}")
        return value


class Code(UInt):
    """A code of ``codes``: a known one becomes its member, an unknown one stays a plain int."""

    def __init__(self, codes: type[enum.IntEnum], bits: int) -> None:
        super().__init__(bits)
        self.codes = codes

    def check(self, owner: str, name: str, value: Any) -> Any:
        super().check(owner, name, value)
        try:
            return self.codes(value)
        except ValueError:
            return int(value)


class OneOf(UInt):
    """A member of ``kinds``, and nothing else."""

    def __init__(self, kinds: type[enum.IntEnum], bits: int) -> None:
        super().__init__(bits)
        self.kinds = kinds
        self.alternatives = " or ".join(f"{k.value} ({k.name.lower()})" for k in kinds)

    def check(self, owner: str, name: str, value: Any) -> Any:
        super().check(owner, name, value)
        try:
            return self.kinds(value)
        except ValueError:
            raise MessageError(f"{owner}.{name} must be {self.alternatives}, got {value}") from None


class Choice(Field):
    """A u8 that is one of ``meanings``' keys (compared by value: ``True`` is 1)."""

    fmt = "B"

    def __init__(self, meanings: dict[int, str]) -> None:
        self.values = tuple(meanings)
        self.alternatives = " or ".join(f"{v} ({m})" for v, m in meanings.items())

    def check(self, owner: str, name: str, value: Any) -> Any:
        if value not in self.values:
            raise MessageError(f"{owner}.{name} must be {self.alternatives}, got {value!r}")
        return value


class Flag(Field):
    """A bool: one byte, 0 or 1."""

    fmt = "B"
    is_bool = True

    def check(self, owner: str, name: str, value: Any) -> Any:
        if value is True or value is False:
            return value
        raise MessageError(f"{owner}.{name} must be a bool, got {type(value).__name__}")


class Bytes(Field):
    """Exactly ``size`` bytes."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.fmt = f"{size}s"

    def check(self, owner: str, name: str, value: Any) -> Any:
        if type(value) is bytes and len(value) == self.size:
            return value
        return to_bytes(owner, name, value, self.size)


class BitVector(Bytes):
    """Exactly ``size`` bytes of bits, a part of its own after the head (bit ``i`` in byte
    ``i // 8`` under mask ``1 << (i % 8)``)."""

    raw = True

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.fmt = ""

    def write(self, value: bytes) -> bytes:
        return value

    def read(self, r: BodyReader, label: str) -> bytes:
        return r.raw(self.size, label)


class Blob(Field):
    """``lo``..``hi`` bytes: the rest of the body."""

    raw = to_end = True

    def __init__(self, lo: int, hi: int, *, payload: bool = False) -> None:
        self.lo, self.hi, self.payload = lo, hi, payload

    def check(self, owner: str, name: str, value: Any) -> Any:
        if type(value) is bytes and self.lo <= len(value) <= self.hi:
            return value
        return to_bytes(owner, name, value, lo=self.lo, hi=self.hi)

    def write(self, value: bytes) -> bytes:
        return value

    def read(self, r: BodyReader, label: str) -> bytes:
        return r.rest()


class Sized(Field):
    """``lo``..``hi`` bytes after their u16 length: a blob that need not come last (a chunk's data
    inside a record)."""

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi

    def check(self, owner: str, name: str, value: Any) -> Any:
        if type(value) is bytes and self.lo <= len(value) <= self.hi:
            return value
        return to_bytes(owner, name, value, lo=self.lo, hi=self.hi)

    def write(self, value: bytes) -> bytes:
        return body.U16.pack(len(value)) + value

    def read(self, r: BodyReader, label: str) -> bytes:
        size = r.u16(f"{label} length")
        if not self.lo <= size <= self.hi:
            raise r.error(f"{label} is {size} bytes, not {self.lo}..{self.hi}")
        return r.raw(size, label)


class Text(Field):
    """A str of at most ``max_size`` bytes of UTF-8, after its u8 or u16 length (``prefix``)."""

    def __init__(self, max_size: int, prefix: int) -> None:
        self.max_size, self.short = max_size, prefix == 8

    def check(self, owner: str, name: str, value: Any) -> Any:
        if not isinstance(value, str):
            raise MessageError(f"{owner}.{name} must be a str, got {type(value).__name__}")
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise MessageError(f"{owner}.{name} is not encodable as UTF-8: {exc.reason}") from exc
        if size > self.max_size:
            raise MessageError(f"{owner}.{name} must be at most {self.max_size} bytes of UTF-8, got {size}")
        return value

    def write(self, value: str) -> bytes:
        return body.str8(value) if self.short else body.str16(value)

    def read(self, r: BodyReader, label: str) -> str:
        return r.str8(label) if self.short else r.str16(label)


# -- the fields most messages are made of -------------------------------------------------------

U8: TypeAlias = Annotated[int, UInt(8)]
U16: TypeAlias = Annotated[int, UInt(16)]
U64: TypeAlias = Annotated[int, UInt(64)]
Bool: TypeAlias = Annotated[bool, Flag()]
Bin: TypeAlias = Annotated[int, UInt(8, hi=MAX_BIN)]
BinId: TypeAlias = Annotated[int, UInt(64, lo=1, why="bin IDs start at 1")]
Address: TypeAlias = Annotated[bytes, Bytes(ADDRESS_SIZE)]
PublicKey: TypeAlias = Annotated[bytes, Bytes(PUBLIC_KEY_SIZE)]
Signature: TypeAlias = Annotated[bytes, Bytes(SIGNATURE_SIZE)]
Hash: TypeAlias = Annotated[bytes, Bytes(HASH_SIZE)]
ChunkData: TypeAlias = Annotated[bytes, Blob(MIN_CHUNK_DATA_SIZE, MAX_CHUNK_DATA_SIZE, payload=True)]
Host: TypeAlias = Annotated[str, Text(MAX_HOST_SIZE, 8)]
Reason: TypeAlias = Annotated[str, Text(MAX_REASON_SIZE, 16)]
