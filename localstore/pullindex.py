"""PullIndex: each bin's pull index as an append-only file of fixed-size entries.

Bin IDs in a bin are 1, 2, 3, ... with no gaps, so the pull index of a bin needs no keys: the
entry of bin ID ``n`` of bin ``b`` is at byte ``(n - 1) * ENTRY_SIZE`` of the file ``PULL-bb``
(two decimal digits). An entry is ``address (32) || slot (6) || length (2)``, integers
big-endian: which chunk got that bin ID, and where its data is in the chunk file
(localstore/chunkfile.py). A chunk evicted by the reserve, or found damaged and dropped, leaves
a *hole*: its entry's slot field is all ones (``HOLE_SLOT``) and its address stays, so the bin
keeps a record of every bin ID it gave out (peers' intervals and the bin's Merkle log,
localstore/binlog.py, are over them); a hole is never offered again.

These files are the store's record of which chunks it holds; the address index
(localstore/addressindex.py) is derived from them. Entries are written before the LevelDB batch
that raises their bins' cursors, so a crash in between leaves entries past a cursor, which
``open`` cuts off, like the chunk file's uncommitted tail. A power cut can instead keep the batch
and lose a file's last writes (or a new file): ``open`` reports them, and the file is cut to its
last whole entry and the bin IDs up to the cursor filled with holes, so the bin keeps its cursor (peers keep
intervals over its bin IDs, which must never be given out twice) and ``lost`` reports them.
The chunks the lost entries named are no longer indexed; their slots stay taken. Why files and
not LevelDB keys:
appends of keys spread over 32 bins overlap every table LevelDB has, so each compaction rewrote
all of them through mmapped pages that count in the node's memory (docs/performance.md).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from chunks.chunk import ADDRESS_SIZE
from localstore.errors import StoreCorrupt

__all__ = ["ENTRY_SIZE", "HOLE_SLOT", "PullEntry", "PullIndex", "pull_file_name"]

SLOT_BYTES = 6
LENGTH_BYTES = 2
ENTRY_SIZE = ADDRESS_SIZE + SLOT_BYTES + LENGTH_BYTES
HOLE_SLOT = 2 ** (8 * SLOT_BYTES) - 1
_HOLE_FIELDS = HOLE_SLOT.to_bytes(SLOT_BYTES, "big") + bytes(LENGTH_BYTES)
_HOLE = bytes(ADDRESS_SIZE) + _HOLE_FIELDS
"""A lost entry (its address unknown): what ``repair_lost`` writes."""
_LOCATED = struct.Struct(">32sHIH")
"""An entry: the address, the slot's high 2 and low 4 bytes, the length."""
READ_BLOCK = 512
"""Entries read per pread when iterating a range (20 KiB)."""


def pull_file_name(bin: int) -> str:
    return f"PULL-{bin:02d}"


@dataclass(frozen=True, slots=True)
class PullEntry:
    """One stored chunk as its bin's pull index records it."""

    bin_id: int
    address: bytes
    slot: int
    length: int


def encode_entry(address: bytes, slot: int, length: int) -> bytes:
    if len(address) != ADDRESS_SIZE:
        raise ValueError(f"address is {len(address)} bytes, not {ADDRESS_SIZE}")
    if not 0 <= slot < HOLE_SLOT:
        raise ValueError(f"slot {slot} is outside 0..{HOLE_SLOT - 1}")
    return address + slot.to_bytes(SLOT_BYTES, "big") + length.to_bytes(LENGTH_BYTES, "big")


def decode_entries(raw: bytes, first_bin_id: int) -> Iterator[PullEntry]:
    """The entries in ``raw`` (whole entries, the first with ``first_bin_id``), holes skipped."""
    for index in range(len(raw) // ENTRY_SIZE):
        at = index * ENTRY_SIZE
        slot = int.from_bytes(raw[at + ADDRESS_SIZE : at + ADDRESS_SIZE + SLOT_BYTES], "big")
        if slot == HOLE_SLOT:
            continue
        length = int.from_bytes(raw[at + ADDRESS_SIZE + SLOT_BYTES : at + ENTRY_SIZE], "big")
        yield PullEntry(first_bin_id + index, raw[at : at + ADDRESS_SIZE], slot, length)


class PullIndex:
    """The ``PULL-bb`` files of one store directory. Not thread-safe; the store serialises access."""

    def __init__(self, directory: str, cursors: Sequence[int]) -> None:
        """Open the pull files of a store whose bins have the given cursors (highest bin IDs).

        Entries past a cursor were written by a put that never committed and are cut off. A bin
        whose file is missing or shorter than its cursor needs lost its last entries: ``lost``
        maps the bin to their bin IDs (``torn`` to the bytes of a partial entry there), and
        ``repair_lost`` makes them holes.
        """
        self._directory = directory
        self._fds: dict[int, int] = {}
        self.lost: dict[int, range] = {}
        self.torn: dict[int, int] = {}
        try:
            for bin, cursor in enumerate(cursors):
                self._open_bin(bin, cursor)
        except BaseException:
            self.close()
            raise

    def _open_bin(self, bin: int, cursor: int) -> None:
        path = os.path.join(self._directory, pull_file_name(bin))
        if cursor == 0:
            if os.path.exists(path):
                os.truncate(path, 0)
            return
        fd = self._fds[bin] = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        size = os.fstat(fd).st_size
        needed = cursor * ENTRY_SIZE
        if size > needed:
            os.ftruncate(fd, needed)
        elif size < needed:
            whole = size // ENTRY_SIZE
            self.lost[bin] = range(whole + 1, cursor + 1)
            self.torn[bin] = size - whole * ENTRY_SIZE

    def repair_lost(self) -> None:
        """Cut each torn file to its last whole entry and fill the lost bin IDs with holes.

        Called once the store no longer trusts an index that may name their chunks (recovery.py).
        """
        for bin, ids in self.lost.items():
            fd = self._fds[bin]
            os.ftruncate(fd, (ids.start - 1) * ENTRY_SIZE)
            _write_all(fd, _HOLE * len(ids), (ids.start - 1) * ENTRY_SIZE)
            os.fdatasync(fd)

    def _fd(self, bin: int) -> int:
        fd = self._fds.get(bin)
        if fd is None:
            path = os.path.join(self._directory, pull_file_name(bin))
            fd = self._fds[bin] = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        return fd

    def close(self) -> None:
        """Close every file. Idempotent."""
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            os.close(fd)

    def sync(self) -> None:
        """Flush every file to the disk (at a clean close, so a power cut after it loses nothing;
        and before a state of a bin's log is signed: callable from another thread, it only flushes)."""
        for fd in list(self._fds.values()):
            os.fdatasync(fd)

    def append(self, bin: int, first_bin_id: int, entries: Sequence[bytes]) -> None:
        """Write encoded ``entries`` (see encode_entry) for bin IDs from ``first_bin_id`` on."""
        if entries:
            _write_all(self._fd(bin), b"".join(entries), (first_bin_id - 1) * ENTRY_SIZE)

    def punch(self, bin: int, bin_id: int) -> None:
        """Turn the entry of ``bin_id`` into a hole, keeping its address."""
        os.pwrite(self._fd(bin), _HOLE_FIELDS, (bin_id - 1) * ENTRY_SIZE + ADDRESS_SIZE)

    def _range(self, bin: int, start: int, end: int) -> bytes:
        """The raw entries of bin IDs ``start..end`` (``end`` at most the cursor), in one read."""
        count = end + 1 - start
        raw = os.pread(self._fd(bin), count * ENTRY_SIZE, (start - 1) * ENTRY_SIZE)
        if len(raw) != count * ENTRY_SIZE:
            raise StoreCorrupt(self._directory, f"{pull_file_name(bin)} ends before bin ID {end}")
        return raw

    def addresses(self, bin: int, start: int, end: int) -> list[tuple[bytes, bool]]:
        """``(address, hole)`` of every bin ID ``start..end`` (``end`` at most the cursor), holes
        included: what the bin's log is made of (localstore/binlog.py)."""
        if end < start:
            return []
        raw = self._range(bin, start, end)
        hole = _HOLE_FIELDS[:SLOT_BYTES]
        return [
            (raw[at : at + ADDRESS_SIZE], raw[at + ADDRESS_SIZE : at + ADDRESS_SIZE + SLOT_BYTES] == hole)
            for at in range(0, len(raw), ENTRY_SIZE)
        ]

    def located(self, bin: int, start: int, end: int) -> list[tuple[bytes, int, int]]:
        """``(address, slot, length)`` of every bin ID ``start..end`` (``end`` at most the
        cursor), holes included (their slot is ``HOLE_SLOT``), decoded by one ``struct``."""
        if end < start:
            return []
        return [
            (address, high << 32 | low, length)
            for address, high, low, length in _LOCATED.iter_unpack(self._range(bin, start, end))
        ]

    def read(self, bin: int, start: int, end: int) -> Iterator[PullEntry]:
        """Yield the entries of bin IDs ``start..end`` (inclusive, ``1 <= start``, ``end`` at most
        the bin's cursor), holes skipped, reading ``READ_BLOCK`` entries at a time."""
        if end < start:
            return
        fd = self._fd(bin)
        for block_start in range(start, end + 1, READ_BLOCK):
            count = min(READ_BLOCK, end + 1 - block_start)
            raw = os.pread(fd, count * ENTRY_SIZE, (block_start - 1) * ENTRY_SIZE)
            if len(raw) != count * ENTRY_SIZE:
                raise StoreCorrupt(
                    self._directory, f"{pull_file_name(bin)} ends before bin ID {block_start + count - 1}"
                )
            yield from decode_entries(raw, block_start)


def _write_all(fd: int, data: bytes, offset: int) -> None:
    buffer = memoryview(data)
    while buffer:
        written = os.pwrite(fd, buffer, offset)
        buffer, offset = buffer[written:], offset + written
