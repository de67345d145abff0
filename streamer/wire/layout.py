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

The writer and the reader are generated from the field names once, when the message is declared
(as ``dataclasses`` does for ``__init__``), so that they run as fast as the hand-written ones did:
a body is written and read on the hot path of syncing. ``Layout.source`` shows them.

Messages with irregular bodies (optional parts, a nested record) write their own: a ``_write``
method and a ``_read`` class method on their declaration (:func:`hand_written`).
"""

from __future__ import annotations

import linecache
import struct
from collections.abc import Callable, Sequence
from typing import Any

from streamer.wire.fields import Field

Writer = Callable[[Any], bytes]
Reader = Callable[..., Any]  # (BodyReader, label of a record in a list = "") -> the value


class Layout:
    """How one message or record goes on the wire; ``payload`` names its chunk-data field."""

    __slots__ = ("payload", "read", "source", "write")

    def __init__(self, write: Writer, read: Reader, payload: str | None = None, source: str = "") -> None:
        self.write, self.read, self.payload, self.source = write, read, payload, source


def hand_written(cls: Any) -> Layout:
    """The layout of a class that writes (``_write``) and reads (``_read``) its body itself."""
    return Layout(cls._write, cls._read)


def derive(
    cls: Callable[..., Any], fields: Sequence[tuple[str, Field]], *, fieldwise: bool = False
) -> Layout:
    """The layout of ``cls``'s body from its ``(name, kind)`` fields, in declaration order."""
    name = getattr(cls, "__name__", "body")
    packed = [(n, k) for n, k in fields if k.fmt]
    parts = [(n, k) for n, k in fields if not k.fmt]
    early = [n for n, k in parts[:-1] if k.to_end]
    if early:
        raise TypeError(f"{name}.{early[0]} reads to the end of the body: put it last")
    head = struct.Struct(">" + "".join(k.fmt for _, k in packed))
    env: dict[str, Any] = {
        "_head": head,
        "_make": cls,
        "_label": _label([n for n, _ in packed]),
        "_sizes": tuple((n, struct.calcsize(">" + k.fmt)) for n, k in packed),
    }
    for i, (_, kind) in enumerate(parts):
        env[f"_w{i}"], env[f"_r{i}"] = kind.writer(), kind.read
    in_order = [n for n, _ in packed + parts] == [n for n, _ in fields]
    source = _write_source(packed, parts) + _read_source(packed, parts, fieldwise, in_order)
    filename = f"<layout of {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # for tracebacks
    exec(compile(source, filename, "exec"), env)
    payload = next((n for n, k in fields if k.payload), None)
    return Layout(env["write"], env["read"], payload, source)


def _label(names: list[str]) -> str:
    return "/".join(names) if len(names) <= 4 else f"{names[0]}..{names[-1]}"


def _write_source(packed: list[tuple[str, Field]], parts: list[tuple[str, Field]]) -> str:
    terms = [f"_head.pack({', '.join(f'm.{n}' for n, _ in packed)})"] if packed else []
    terms += [f"m.{n}" if k.raw else f"_w{i}(m.{n})" for i, (n, k) in enumerate(parts)]
    body = " + ".join(terms) or 'b""'
    return f"def write(m):\n    return {body}\n\n"


def _read_source(
    packed: list[tuple[str, Field]], parts: list[tuple[str, Field]], fieldwise: bool, in_order: bool
) -> str:
    values = [f"v{i}" for i in range(len(packed) + len(parts))]
    lines = ["def read(r, item=''):"]
    if packed:
        take = "r.fields(_head, _sizes)" if fieldwise else "r.fixed(_head, item or _label)"
        lines.append(f"    {', '.join(values[: len(packed)])}, = {take}")
    lines += [f"    v{i} = r.boolean(v{i}, {n!r})" for i, (n, k) in enumerate(packed) if k.is_bool]
    for i, (n, _) in enumerate(parts):
        lines.append(f"    v{len(packed) + i} = _r{i}(r, item + {'.' + n!r} if item else {n!r})")
    names = [n for n, _ in packed + parts]
    args = values if in_order else [f"{n}={v}" for n, v in zip(names, values, strict=True)]
    lines.append(f"    return _make({', '.join(args)})")
    return "\n".join(lines) + "\n"
