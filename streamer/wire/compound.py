"""Field kinds made of other values: lists of hashes, of u64 and of records, and a nested record
(the kinds of single values are in streamer/wire/fields.py)."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from streamer.errors import MessageError
from streamer.wire import body
from streamer.wire.body import BodyReader
from streamer.wire.fields import Field, to_bytes, to_tuple, uint
from streamer.wire.limits import HASH_SIZE


def _a(cls: type) -> str:
    return f"{'an' if cls.__name__[0] in 'AEIOU' else 'a'} {cls.__name__}"


def split(raw: bytes, size: int) -> tuple[bytes, ...]:
    """``raw`` cut into ``size``-byte pieces."""
    return tuple(raw[i : i + size] for i in range(0, len(raw), size))


class HashList(Field):
    """A tuple of at most ``max_items`` byte strings of ``size``: the rest of the body."""

    to_end = True

    def __init__(self, max_items: int, size: int = HASH_SIZE) -> None:
        self.max_items, self.size = max_items, size

    def check(self, owner: str, name: str, value: Any) -> Any:
        items = to_tuple(owner, name, value, self.max_items)
        if set(map(type, items)) <= {bytes} and set(map(len, items)) <= {self.size}:  # the loops run in C
            return items
        return tuple(to_bytes(owner, f"{name}[{i}]", h, self.size) for i, h in enumerate(items))

    def write(self, value: tuple[bytes, ...]) -> bytes:
        return b"".join(value)

    def writer(self) -> Callable[[Any], bytes]:
        return b"".join

    def read(self, r: BodyReader, label: str) -> tuple[bytes, ...]:
        if r.left() % self.size:
            raise r.error(f"{label} take {r.left()} bytes, not a multiple of {self.size}")
        return split(r.rest(), self.size)


class UIntList(Field):
    """A tuple of at most ``max_items`` u64, after their u8 count."""

    def __init__(self, max_items: int) -> None:
        self.max_items = max_items

    def check(self, owner: str, name: str, value: Any) -> Any:
        items = to_tuple(owner, name, value, self.max_items)
        for i, item in enumerate(items):
            uint(owner, f"{name}[{i}]", item, 64)
        return items

    def write(self, value: tuple[int, ...]) -> bytes:
        return body.U8.pack(len(value)) + struct.pack(f">{len(value)}Q", *value)

    def read(self, r: BodyReader, label: str) -> tuple[int, ...]:
        count = r.u8("count")
        return struct.unpack(f">{count}Q", r.raw(8 * count, f"{label} ({count} x u64)"))


class Records(Field):
    """A tuple of at most ``max_items`` records of class ``of`` (declared with ``@record``), after
    their u16 count; an item's fields are named ``label[i]`` on the wire."""

    def __init__(self, of: type, max_items: int) -> None:
        declared: Any = of  # its layout is set by @record
        self.of, self.max_items, self.layout = of, max_items, declared._layout

    def check(self, owner: str, name: str, value: Any) -> Any:
        items = to_tuple(owner, name, value, self.max_items)
        for i, item in enumerate(items):
            if not isinstance(item, self.of):
                raise MessageError(f"{owner}.{name}[{i}] must be {_a(self.of)}, got {type(item).__name__}")
        return items

    def write(self, value: tuple[Any, ...]) -> bytes:
        return body.U16.pack(len(value)) + b"".join(map(self.layout.write, value))

    def read(self, r: BodyReader, label: str) -> tuple[Any, ...]:
        return tuple(self.layout.read(r, f"{label}[{i}]") for i in range(r.u16("count")))


class Nested(Field):
    """A record of class ``of``; it has no wire form of its own (its message's body is written
    by hand)."""

    def __init__(self, of: type) -> None:
        self.of = of

    def check(self, owner: str, name: str, value: Any) -> Any:
        if not isinstance(value, self.of):
            raise MessageError(f"{owner}.{name} must be {_a(self.of)}, got {type(value).__name__}")
        return value
