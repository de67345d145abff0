"""Timeframes: what a writer had processed of each member feed when it wrote (DXOS's Timeframe).

A timeframe is a vector indexed by member index (the order of admission in the space's member
list): entry ``i`` is the highest sequence number of member ``i``'s feed the writer had
processed, ``NONE`` (-1) for nothing. In memory it is a tuple, entries past its end being
``NONE``; the writer's own entry is its previous sequence number (``seq - 1``), so a message
depends on exactly the messages its timeframe covers.

**The order key** of a message is ``(lamport, owner, seq)`` with ``lamport = 1 + sum(entry + 1)``:
DXOS's ``totalMessages()`` plus one, the number of messages the writer had processed when it
wrote plus the message itself. If ``m1`` is in ``m2``'s past then ``m2``'s timeframe covers
``m1``'s and one more message (``m1`` itself), so ``lamport(m2) > lamport(m1)``: sorting by the
key is a linear extension of the causal order, and the key is the same on every reader. (Readers
check this for every message they process, see `swarm.spaces.ordering`.)

**The compact encoding** carries only the entries that changed since the writer's previous
message (for its first message: since the empty timeframe), never the writer's own entry, each
as its increase. Two forms; the encoder writes the shorter, the decoder takes both:

- sparse: header ``varint(n << 1)``, then ``n`` pairs ``varint(index step), varint(increase - 1)``,
  the index step being the index for the first pair and ``index - previous index - 1`` after;
- bitmap: header ``varint(b << 1 | 1)``, a ``b``-byte bitmap of the changed indices (bit ``i`` in
  byte ``i // 8`` under mask ``1 << (i % 8)``, as the project's want bitvectors), then one
  ``varint(increase - 1)`` per set bit, by index.

An unchanged timeframe costs one byte. It is bounded: at most ``MAX_MEMBERS - 1`` entries, each
at most 20 bytes, so a timeframe never exceeds ``MAX_TIMEFRAME_BYTES``. A full vector, as DXOS
sends it, is ``O(members)`` on every message whatever changed (`full_vector_size`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

__all__ = [
    "MAX_MEMBERS",
    "MAX_SEQ",
    "MAX_TIMEFRAME_BYTES",
    "NONE",
    "Delta",
    "InvalidTimeframe",
    "OrderKey",
    "Timeframe",
    "apply_delta",
    "covered",
    "decode_delta",
    "delta_between",
    "encode_delta",
    "entry",
    "full_vector_size",
    "lamport",
    "merge",
    "read_varint",
    "varint",
]

NONE = -1
MAX_MEMBERS = 256
"""Members a space may have: bounds a timeframe and the reader's buffers."""
MAX_SEQ = 2**64 - 1
_BITMAP_BYTES = MAX_MEMBERS // 8
MAX_TIMEFRAME_BYTES = 2 + _BITMAP_BYTES + (MAX_MEMBERS - 1) * 20

Timeframe = tuple[int, ...]
Delta = tuple[tuple[int, int], ...]
"""``(member index, increase)`` pairs, by increasing index; every increase at least 1."""


class InvalidTimeframe(ValueError):
    """Bytes that are not a timeframe, or a delta that cannot apply."""


class OrderKey(NamedTuple):
    """Where a message goes among concurrent ones: the same on every reader (compares as a tuple)."""

    lamport: int
    owner: bytes
    seq: int


def entry(timeframe: Timeframe, index: int) -> int:
    return timeframe[index] if index < len(timeframe) else NONE


def lamport(timeframe: Timeframe) -> int:
    """``1 + sum(entry + 1)``: messages covered by the timeframe (own entry included), plus one."""
    return 1 + sum(timeframe) + len(timeframe)


def merge(*timeframes: Timeframe) -> Timeframe:
    """The entry-wise maximum (DXOS ``Timeframe.merge``)."""
    size = max((len(t) for t in timeframes), default=0)
    return tuple(max(entry(t, i) for t in timeframes) for i in range(size))


def delta_between(previous: Timeframe, current: Timeframe, own: int) -> Delta:
    """The entries of ``current`` other than ``own`` that grew since ``previous``.

    ValueError if an entry shrank: a writer's processed timeframe only grows.
    """
    changed = []
    for index in range(len(current)):
        if index == own:
            continue
        old, new = entry(previous, index), current[index]
        if new < old:
            raise ValueError(f"entry {index} went back from {old} to {new}: timeframes only grow")
        if new > old:
            changed.append((index, new - old))
    return tuple(changed)


def apply_delta(previous: Timeframe, delta: Delta, own: int, seq: int) -> Timeframe:
    """The timeframe of message ``seq`` of member ``own`` from its predecessor's and its delta."""
    size = max(len(previous), own + 1, delta[-1][0] + 1 if delta else 0)
    values = [*previous, *(NONE,) * (size - len(previous))]
    for index, increase in delta:
        if index == own:
            raise InvalidTimeframe(f"member {own}'s own entry is implicit, yet its delta names it")
        values[index] += increase
        if values[index] > MAX_SEQ:
            raise InvalidTimeframe(f"entry {index} passes the largest sequence number")
    values[own] = seq - 1
    return tuple(values)


# -- bytes ---------------------------------------------------------------------------------------


def varint(value: int) -> bytes:
    """Unsigned LEB128."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(data: bytes, offset: int) -> tuple[int, int]:
    """``(value, next offset)``; InvalidTimeframe if truncated, over 64 bits or not minimal."""
    if offset < len(data) and data[offset] < 0x80:  # one byte: the common case
        return data[offset], offset + 1
    value = shift = 0
    for position in range(offset, min(offset + 10, len(data))):
        byte = data[position]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if byte == 0 and position > offset:
                raise InvalidTimeframe("a varint with a needless trailing zero byte")
            if value > MAX_SEQ:
                raise InvalidTimeframe("a varint over 64 bits")
            return value, position + 1
        shift += 7
    raise InvalidTimeframe("a truncated varint")


def encode_delta(delta: Delta) -> bytes:
    """The shorter of the sparse and the bitmap form of ``delta``."""
    sparse = bytearray(varint(len(delta) << 1))
    previous = -1
    for index, increase in delta:
        sparse += varint(index - previous - 1 if previous >= 0 else index)
        sparse += varint(increase - 1)
        previous = index
    if not delta:
        return bytes(sparse)
    size = delta[-1][0] // 8 + 1
    bitmap = bytearray(size)
    for index, _ in delta:
        bitmap[index // 8] |= 1 << (index % 8)
    dense = bytearray(varint(size << 1 | 1)) + bitmap
    for _, increase in delta:
        dense += varint(increase - 1)
    return bytes(sparse if len(sparse) <= len(dense) else dense)


def decode_delta(data: bytes, offset: int = 0) -> tuple[Delta, int]:
    """``(delta, next offset)`` from ``data[offset:]``; InvalidTimeframe if it is not one."""
    header, offset = read_varint(data, offset)
    if header & 1:
        return _decode_bitmap(data, offset, header >> 1)
    return _decode_sparse(data, offset, header >> 1)


def _decode_sparse(data: bytes, offset: int, count: int) -> tuple[Delta, int]:
    if count >= MAX_MEMBERS:
        raise InvalidTimeframe(f"{count} entries: a space has at most {MAX_MEMBERS} members")
    delta = []
    index = -1
    for _ in range(count):
        step, offset = read_varint(data, offset)
        increase, offset = read_varint(data, offset)
        index = step if index < 0 else index + 1 + step
        if index >= MAX_MEMBERS:
            raise InvalidTimeframe(f"member index {index} is past the limit of {MAX_MEMBERS} members")
        delta.append((index, increase + 1))
    return tuple(delta), offset


def _decode_bitmap(data: bytes, offset: int, size: int) -> tuple[Delta, int]:
    if not 0 < size <= _BITMAP_BYTES:
        raise InvalidTimeframe(f"a bitmap of {size} bytes: 1..{_BITMAP_BYTES} expected")
    if offset + size > len(data):
        raise InvalidTimeframe("a truncated bitmap")
    bitmap = data[offset : offset + size]
    if bitmap[-1] == 0:
        raise InvalidTimeframe("a bitmap ending in a zero byte")
    offset += size
    delta = []
    for index in range(size * 8):
        if bitmap[index // 8] >> (index % 8) & 1:
            increase, offset = read_varint(data, offset)
            delta.append((index, increase + 1))
    return tuple(delta), offset


# -- what DXOS sends, for comparison ----------------------------------------------------------------


def full_vector_size(timeframe: Sequence[int], own: int, *, key_size: int) -> int:
    """Bytes of the full vector DXOS puts on every message: per known other feed, its key
    (``key_size`` bytes: 32 for DXOS's public keys, 0 to count an index instead) and sequence
    number, each a protobuf field (one tag byte, a length byte for the key, a varint)."""
    size = 0
    for index, value in enumerate(timeframe):
        if index == own or value == NONE:
            continue
        key_field = 2 + key_size if key_size else 1 + len(varint(index))
        size += 2 + key_field + 1 + len(varint(value))  # entry tag + length, key, seq tag + varint
    return size


def covered(timeframe: Timeframe) -> Iterable[tuple[int, int]]:
    """``(member, seq)`` of every message a timeframe covers (for tests and models)."""
    for index, value in enumerate(timeframe):
        for seq in range(value + 1):
            yield index, seq
