"""A body's layout, derived from its fields' kinds: the writer and the reader of one message.

A body is its packed fields (streamer/wire/fields.py), the *head*, in declaration order and
written with one struct; then its parts in declaration order, each written by its kind; a part
that reads to the end of the body comes last. Values come off the wire in that order and are
handed to the class's constructor by position (by name when the head moved a field ahead of a
part, as in a Handshake, whose ``host`` is last on the wire).

A head too short for its struct is reported naming it ``bin/live/start/end`` (``first..last``
when it has more than four fields, and ``label[i]`` for the i-th record of a list); a message
declared ``fieldwise`` names the first missing field instead, as if it read them one by one.
A bool that is neither 0 nor 1 is reported before any part is read.

Messages with irregular bodies (optional parts, a nested record) write their own: a ``_write``
method and a ``_read`` class method on their declaration (:func:`hand_written`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

from streamer.wire.body import BodyReader
from streamer.wire.fields import Field

Writer = Callable[[Any], bytes]
Reader = Callable[..., Any]  # (BodyReader, label of a record in a list = "") -> the value


class Layout:
    """How one message or record goes on the wire; ``payload`` names its chunk-data field."""

    __slots__ = ("payload", "read", "write")

    def __init__(self, write: Writer, read: Reader, payload: str | None = None) -> None:
        self.write, self.read, self.payload = write, read, payload


def hand_written(cls: Any) -> Layout:
    """The layout of a class that writes (``_write``) and reads (``_read``) its body itself."""
    return Layout(cls._write, cls._read)


def derive(
    cls: Callable[..., Any], fields: Sequence[tuple[str, Field]], *, fieldwise: bool = False
) -> Layout:
    """The layout of ``cls``'s body from its ``(name, kind)`` fields, in declaration order."""
    packed = [(n, k) for n, k in fields if k.fmt]
    parts = [(n, k) for n, k in fields if not k.fmt]
    early = [n for n, k in parts[:-1] if k.to_end]
    if early:
        raise TypeError(
            f"{getattr(cls, '__name__', cls)}.{early[0]} reads to the end of the body: put it last"
        )
    head = struct.Struct(">" + "".join(k.fmt for _, k in packed))
    wire = [n for n, _ in packed] + [n for n, _ in parts]
    make = cls if wire == [n for n, _ in fields] else _by_name(cls, wire)
    payload = next((n for n, k in fields if k.payload), None)
    return Layout(_writer(head, packed, parts), _reader(make, head, packed, parts, fieldwise), payload)


def _by_name(cls: Callable[..., Any], names: list[str]) -> Callable[..., Any]:
    return lambda *values: cls(**dict(zip(names, values, strict=True)))


def _label(names: list[str]) -> str:
    return "/".join(names) if len(names) <= 4 else f"{names[0]}..{names[-1]}"


def _writer(head: struct.Struct, packed: list[tuple[str, Field]], parts: list[tuple[str, Field]]) -> Writer:
    pack = head.pack
    if len(packed) > 1:
        values = attrgetter(*[n for n, _ in packed])
        if not parts:
            return lambda m: pack(*values(m))
        if len(parts) == 1 and parts[0][1].raw:
            rest = attrgetter(parts[0][0])
            return lambda m: pack(*values(m)) + rest(m)
        head_of: Writer = lambda m: pack(*values(m))  # noqa: E731
    elif packed:
        value = attrgetter(packed[0][0])
        head_of = lambda m: pack(value(m))  # noqa: E731
    else:
        head_of = lambda m: b""  # noqa: E731
    if not parts:
        return head_of
    writers = [(attrgetter(n), k.write) for n, k in parts]
    return lambda m: head_of(m) + b"".join([write(get(m)) for get, write in writers])


def _reader(
    make: Callable[..., Any],
    head: struct.Struct,
    packed: list[tuple[str, Field]],
    parts: list[tuple[str, Field]],
    fieldwise: bool,
) -> Reader:
    label = _label([n for n, _ in packed])
    sizes = tuple((n, struct.calcsize(">" + k.fmt)) for n, k in packed)
    bools = tuple((i, n) for i, (n, k) in enumerate(packed) if k.is_bool)
    readers = tuple((n, k.read) for n, k in parts)

    def read(r: BodyReader, item: str = "") -> Any:
        values: Any = r.fields(head, sizes) if fieldwise else r.fixed(head, item or label)
        if not (bools or readers):
            return make(*values)
        values = [*values]
        for i, name in bools:
            values[i] = r.boolean(values[i], name)
        for name, read_part in readers:
            values.append(read_part(r, f"{item}.{name}" if item else name))
        return make(*values)

    return read
