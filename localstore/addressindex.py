"""AddressIndex: where each stored chunk is (address -> slot, length, bin ID), in a hash file.

Every offered hash and every put looks its address up here, so this is the store's hottest
index. It used to be LevelDB keys; random addresses make every LevelDB table overlap every other,
so each compaction rewrote the whole index through mmapped pages that count in the node's
resident memory, which grew with the store (docs/performance.md). This file is read and written
with ``pread``/``pwrite`` one 4 KiB page at a time: its pages are the kernel's page cache, not
the process's memory, and a lookup costs one page read.

It is *extendible hashing*. A 64-bit keyed hash (BLAKE2b with a random per-file key, so no one
can pick addresses that pile into one bucket) chooses a bucket through a directory of
``2**depth`` page numbers indexed by the hash's low bits. A bucket with local depth ``d`` holds
the addresses whose hashes end in its ``d``-bit prefix; a full bucket splits in two by bit ``d``
of the hash, appending one page and doubling the directory when ``d`` reached its depth. So the
index grows a page at a time, with no rehash pauses. The directory is not stored: each bucket's
header carries its depth and prefix, and ``open`` rebuilds the directory from those.

Page 0 is the header: ``MAGIC (8) || key (16) || clean (1) || 0 (7) || count (8) || slots
(8)``; pages 1.. are buckets: ``count (2) || depth (1) || 0 (1) || prefix (4)`` then up to
``BUCKET_CAPACITY`` entries of ``address (32) || slot (6) || length (2) || bin ID (8)``; integers
big-endian.

The answers to the lookups, adds and removes of the last ``RECENT`` addresses are also kept in a
dict (an address found absent too): a chunk is looked up several times within moments (an
upstream checks a chunk when it offers it and reads it when it is wanted, then the downstream
offers it back; a downstream checks an offered address, stores the chunk, and offers it on), and
a dict hit skips the keyed hash and the page read. Every change to an entry goes
through ``add`` and ``remove``, which keep the dict true; it costs about 1.5 MiB at most.

The index is derived data: the pull-index files (localstore/pullindex.py) are the record it can
be built from. While it is open its header says *not clean*; ``close`` writes the entry count and
the store's slot count, marks it clean and fsyncs. ``open`` refuses (returns None) a file that
was not closed cleanly or belongs to another state of the store, and the store builds it anew.
"""

from __future__ import annotations

import hashlib
import os
import struct
from array import array
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from chunks.chunk import ADDRESS_SIZE
from localstore.errors import StoreCorrupt

__all__ = ["BUCKET_CAPACITY", "INDEX_FILE_NAME", "PAGE_SIZE", "AddressIndex", "IndexEntry"]

INDEX_FILE_NAME = "ADDRESSES"
PAGE_SIZE = 4096
MAGIC = b"SWIDX\x00\x00\x01"
KEY_SIZE = 16
BUCKET_HEADER = 8
ENTRY_SIZE = ADDRESS_SIZE + 6 + 2 + 8
BUCKET_CAPACITY = (PAGE_SIZE - BUCKET_HEADER) // ENTRY_SIZE
MAX_DEPTH = 26
"""Deepest split: 2**26 directory entries (256 MiB); reached only with billions of chunks."""
RECENT = 8192
"""Entries kept in memory, the most recently looked up or added (see the module's docstring)."""
_CLEAN_AT = len(MAGIC) + KEY_SIZE
_COUNT_AT = _CLEAN_AT + 8


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """Where a stored chunk's data is, and which bin ID it got."""

    slot: int
    length: int
    bin_id: int


def _encode(address: bytes, entry: IndexEntry) -> bytes:
    return (
        address
        + entry.slot.to_bytes(6, "big")
        + entry.length.to_bytes(2, "big")
        + entry.bin_id.to_bytes(8, "big")
    )


_FIELDS = struct.Struct(">HIHQ")  # the slot's high 16 and low 32 bits, length, bin ID


def _decode(raw: bytes | bytearray, at: int) -> IndexEntry:
    high, low, length, bin_id = _FIELDS.unpack_from(raw, at + ADDRESS_SIZE)
    return IndexEntry(high << 32 | low, length, bin_id)


def _find(page: bytes | bytearray, address: bytes) -> int:
    """Offset of ``address``'s entry in a bucket page, or -1."""
    end = BUCKET_HEADER + int.from_bytes(page[:2], "big") * ENTRY_SIZE
    at = page.find(address, BUCKET_HEADER, end)
    while at != -1 and (at - BUCKET_HEADER) % ENTRY_SIZE:
        at = page.find(address, at + 1, end)
    return at


class AddressIndex:
    """The ``ADDRESSES`` file of one store directory. Not thread-safe; the store serialises access."""

    def __init__(self, directory: str, fd: int, key: bytes, count: int) -> None:
        self._directory = directory
        self._fd = fd
        self._key = key
        self._hasher = hashlib.blake2b(digest_size=8, key=key)  # keyed, never fed: copied per address
        self._count = count
        self._pages = os.fstat(fd).st_size // PAGE_SIZE - 1
        self._depth = 0
        self._table = array("I", [1])
        self._stale = False
        # None: not in the index. An OrderedDict, not a dict: dropping a plain dict's first entry
        # (``next(iter(d))``) walks past every slot deleted before it until the dict resizes,
        # about 4 us a call at 8,192 entries against 0.2 us for ``popitem(last=False)``.
        self._recent: OrderedDict[bytes, IndexEntry | None] = OrderedDict()

    @classmethod
    def open(cls, directory: str, slots: int) -> AddressIndex | None:
        """Open the index of a store holding ``slots`` slots; None if it must be built anew.

        It must be built anew if it is missing, was not closed cleanly (a crash), or was closed
        when the store had another number of slots (the LevelDB lost writes the index kept).
        """
        path = os.path.join(directory, INDEX_FILE_NAME)
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return None
        try:
            header = os.pread(fd, PAGE_SIZE, 0)
            size = os.fstat(fd).st_size
            if (
                len(header) != PAGE_SIZE
                or not header.startswith(MAGIC)
                or header[_CLEAN_AT] != 1
                or int.from_bytes(header[_COUNT_AT + 8 : _COUNT_AT + 16], "big") != slots
                or size % PAGE_SIZE
                or size < 2 * PAGE_SIZE
            ):
                os.close(fd)
                return None
            count = int.from_bytes(header[_COUNT_AT : _COUNT_AT + 8], "big")
            index = cls(directory, fd, header[len(MAGIC) : _CLEAN_AT], count)
            if not index._load_directory():
                os.close(fd)
                return None
            index._write_header(clean=False, slots=0)
            os.fdatasync(fd)
        except BaseException:
            os.close(fd)
            raise
        return index

    @classmethod
    def build(cls, directory: str, entries: Iterable[tuple[bytes, IndexEntry]]) -> AddressIndex:
        """Write a new index of ``entries`` (distinct addresses) in place of any old one."""
        path = os.path.join(directory, INDEX_FILE_NAME)
        temporary = path + ".new"
        fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.pwrite(fd, bytes(PAGE_SIZE), PAGE_SIZE)
            index = cls(directory, fd, os.urandom(KEY_SIZE), 0)
            index._write_header(clean=False, slots=0)
            for address, entry in entries:
                index.add(address, entry)
            os.replace(temporary, path)
        except BaseException:
            os.close(fd)
            os.unlink(temporary)
            raise
        return index

    def _load_directory(self) -> bool:
        """Rebuild the directory from the bucket headers; False if they do not add up."""
        buckets = []
        total = 0
        for page in range(1, self._pages + 1):
            header = os.pread(self._fd, BUCKET_HEADER, page * PAGE_SIZE)
            count, depth = int.from_bytes(header[:2], "big"), header[2]
            prefix = int.from_bytes(header[4:8], "big")
            if count > BUCKET_CAPACITY or depth > MAX_DEPTH or prefix >> depth:
                return False
            buckets.append((page, depth, prefix))
            total += count
        self._depth = max(depth for _, depth, _ in buckets)
        table = array("I", bytes(4 << self._depth))
        for page, depth, prefix in buckets:
            for slot in range(prefix, len(table), 1 << depth):
                if table[slot]:
                    return False
                table[slot] = page
        self._table = table
        return total == self._count and all(table)

    def _write_header(self, *, clean: bool, slots: int) -> None:
        header = MAGIC + self._key + bytes((int(clean),)) + bytes(7)
        os.pwrite(self._fd, header + self._count.to_bytes(8, "big") + slots.to_bytes(8, "big"), 0)

    def close(self, slots: int) -> None:
        """Record the count and the store's ``slots``, mark the file clean, fsync and close it.

        An index marked stale (see mark_stale) is closed without the clean mark. Idempotent.
        """
        if self._fd < 0:
            return
        fd = self._fd
        try:
            if not self._stale:
                os.fsync(fd)
                self._write_header(clean=True, slots=slots)
                os.fdatasync(fd)
        finally:
            self._fd = -1
            os.close(fd)

    def mark_stale(self) -> None:
        """An update failed half-way: do not mark the file clean, so the next open rebuilds it."""
        self._stale = True

    def __len__(self) -> int:
        return self._count

    def _hash(self, address: bytes) -> int:
        # a copy of the keyed hasher: 0.7 us, against 1.0 to key a new one (the same hash)
        hasher = self._hasher.copy()
        hasher.update(address)
        return int.from_bytes(hasher.digest(), "little")

    def _page_of(self, address: bytes) -> int:
        return self._table[self._hash(address) & ((1 << self._depth) - 1)]

    def _read(self, page: int) -> bytes:
        raw = os.pread(self._fd, PAGE_SIZE, page * PAGE_SIZE)
        if len(raw) != PAGE_SIZE:
            raise StoreCorrupt(self._directory, f"{INDEX_FILE_NAME} ends inside page {page}")
        return raw

    def _remember(self, address: bytes, entry: IndexEntry | None) -> None:
        recent = self._recent
        if len(recent) >= RECENT:
            recent.popitem(last=False)  # the oldest
        recent[address] = entry

    def found(self, address: bytes, entry: IndexEntry) -> None:
        """Take ``entry`` into the recent answers: the store read it from the pull index (a
        live entry there and this index's agree: both change together), and the address is
        about to be looked up (a downstream offers a chunk back to the upstream that served it)."""
        if address not in self._recent:
            self._remember(address, entry)

    def get(self, address: bytes) -> IndexEntry | None:
        recent = self._recent
        if address in recent:
            return recent[address]
        page = self._read(self._page_of(address))
        at = _find(page, address)
        entry = None if at < 0 else _decode(page, at)
        self._remember(address, entry)
        return entry

    def __contains__(self, address: object) -> bool:
        return isinstance(address, bytes) and self.get(address) is not None

    def add(self, address: bytes, entry: IndexEntry) -> None:
        """Add ``address``, which must not be in the index yet."""
        while True:
            self._recent.pop(address, None)  # until the file says so
            number = self._page_of(address)
            page = bytearray(self._read(number))
            count = int.from_bytes(page[:2], "big")
            if count < BUCKET_CAPACITY:
                at = BUCKET_HEADER + count * ENTRY_SIZE
                page[at : at + ENTRY_SIZE] = _encode(address, entry)
                page[:2] = (count + 1).to_bytes(2, "big")
                os.pwrite(self._fd, page, number * PAGE_SIZE)
                self._count += 1
                self._remember(address, entry)
                return
            self._split(number, page)

    def add_many(self, entries: Iterable[tuple[bytes, IndexEntry]]) -> None:
        """Add addresses none of which is in the index yet: as `add` one by one, but with one page
        read and one write per bucket they fall in (a batch of 128 shares pages the more, the
        smaller the index), not per address."""
        recent = self._recent
        pending = list(entries)
        while pending:
            buckets: dict[int, list[tuple[bytes, IndexEntry]]] = {}
            for item in pending:
                recent.pop(item[0], None)  # until the file says so
                buckets.setdefault(self._page_of(item[0]), []).append(item)
            pending = []
            # a split moves only the addresses of the bucket split: the other groups stay true
            for number, items in buckets.items():
                page = bytearray(self._read(number))
                count = int.from_bytes(page[:2], "big")
                fit = items[: BUCKET_CAPACITY - count]
                if fit:
                    at = BUCKET_HEADER + count * ENTRY_SIZE
                    page[at : at + len(fit) * ENTRY_SIZE] = b"".join(_encode(a, e) for a, e in fit)
                    page[:2] = (count + len(fit)).to_bytes(2, "big")
                    os.pwrite(self._fd, page, number * PAGE_SIZE)
                    self._count += len(fit)
                    for address, entry in fit:
                        self._remember(address, entry)
                if len(fit) < len(items):  # the bucket is full: split it, place the rest again
                    self._split(number, page)
                    pending.extend(items[len(fit) :])

    def _split(self, number: int, page: bytearray) -> None:
        """Split the full bucket ``page`` by the next bit of its addresses' hashes."""
        depth, prefix = page[2], int.from_bytes(page[4:8], "big")
        if depth == MAX_DEPTH:
            raise StoreCorrupt(self._directory, f"{INDEX_FILE_NAME}: bucket {number} cannot split further")
        if depth == self._depth:
            self._table.extend(self._table)
            self._depth += 1
        stay: list[bytearray] = []
        move: list[bytearray] = []
        for at in range(BUCKET_HEADER, PAGE_SIZE - ENTRY_SIZE + 1, ENTRY_SIZE):
            raw = page[at : at + ENTRY_SIZE]
            (move if self._hash(bytes(raw[:ADDRESS_SIZE])) >> depth & 1 else stay).append(raw)
        new = self._pages + 1
        high = prefix | 1 << depth
        self._write_bucket(new, depth + 1, high, move)
        self._pages = new
        self._write_bucket(number, depth + 1, prefix, stay)
        for slot in range(high, len(self._table), 1 << (depth + 1)):
            self._table[slot] = new

    def _write_bucket(self, number: int, depth: int, prefix: int, entries: list[bytearray]) -> None:
        header = len(entries).to_bytes(2, "big") + bytes((depth, 0)) + prefix.to_bytes(4, "big")
        page = header + b"".join(entries)
        os.pwrite(self._fd, page + bytes(PAGE_SIZE - len(page)), number * PAGE_SIZE)

    def remove(self, address: bytes) -> bool:
        """Remove ``address``; False if it was not there."""
        self._recent.pop(address, None)  # until the file says so
        number = self._page_of(address)
        page = bytearray(self._read(number))
        at = _find(page, address)
        if at < 0:
            self._remember(address, None)
            return False
        count = int.from_bytes(page[:2], "big")
        last = BUCKET_HEADER + (count - 1) * ENTRY_SIZE
        page[at : at + ENTRY_SIZE] = page[last : last + ENTRY_SIZE]
        page[last : last + ENTRY_SIZE] = bytes(ENTRY_SIZE)
        page[:2] = (count - 1).to_bytes(2, "big")
        os.pwrite(self._fd, page, number * PAGE_SIZE)
        self._count -= 1
        self._remember(address, None)
        return True
