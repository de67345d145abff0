"""LocalStore: the node's store directory: chunks, their per-bin pull index and state.

A store directory holds four kinds of files, each written by the module named:

    CHUNKS          chunk data in fixed-size slots (localstore/chunkfile.py)
    PULL-00..31     each bin's pull index: bin ID -> address, slot, length (localstore/pullindex.py)
    ADDRESSES       address -> slot, length, bin ID, a hash file derived from the pull index
                    (localstore/addressindex.py)
    LevelDB files   the metadata, the bins' cursors and other components' state (this module)

LevelDB key layout (every key starts with a one-byte namespace; integers big-endian)::

    b"m" b"version"              format version, 8 bytes (FORMAT_VERSION)
    b"m" b"overlay"              the owning node's 32-byte overlay address
    b"m" b"epoch"                creation time, ns since the Unix epoch, 8 bytes
    b"b" bin(1)                  bin counter: the highest bin ID given out in ``bin``, 8 bytes
    b"s" key                     state namespace of other components (interval sets, ...)

``bin = min(proximity(overlay, address), 31)``; bin IDs start at 1 and grow by 1 per chunk
stored in the bin, so a bin's counter is its *cursor*. Chunks are never deleted, so slots are
handed out in order and the sum of the cursors is the next free slot. A new chunk's slot and its
pull-index entry are written first; the LevelDB batch that raises its bin's cursor commits it (a
crash before leaves bytes past the cursors, which opening cuts off); the address index is updated
last, and rebuilt from the pull index whenever it was not closed cleanly. A chunk whose slot turns
out damaged (what a power cut can leave) is dropped when found: its pull-index entry becomes a
hole and its address leaves the index, so it reads as missing and can be synced again.

Only the cursors and small state live in LevelDB, because LevelDB 1.22 (bundled with plyvel)
reads its tables through mmap: per-chunk keys made its compactions' working set, and so the
node's resident memory, grow with the store (docs/performance.md).

Beside the other files the directory holds ``LOCALSTORE``, a small JSON marker
(``{"format": ..., "version": ..., "overlay": ...}``) written before the LevelDB is created. It
answers "is this directory ours, in a format we read, for this overlay?" *without opening the
LevelDB*, because LevelDB modifies a directory on every open attempt (it rotates its LOG, takes
its LOCK, rewrites its MANIFEST on success). A directory without the marker is never opened, so
foreign and non-LevelDB directories are left untouched; a failed open of one of our own
directories (corruption) is undone (LOG restored, new files removed). The marker also carries a
``flock`` for the store's lifetime: LevelDB 1.22 drops its own POSIX lock when the same process
tries to open a directory twice, so a second opener, in this process or another, is turned
away before LevelDB is asked. The LevelDB metadata stays the authority; the two must agree.
"""

from __future__ import annotations

import logging
import os
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import plyvel
import trio

from localstore.addressindex import AddressIndex, IndexEntry
from localstore.chunk import ADDRESS_SIZE, Chunk
from localstore.chunkfile import ChunkFile
from localstore.directory import FORMAT_VERSION, claim_directory, open_leveldb, plyvel_message
from localstore.errors import (
    ChunkDamaged,
    ChunkNotFound,
    StoreClosed,
    StoreCorrupt,
    UnsupportedStoreVersion,
)
from localstore.pullindex import PullIndex, encode_entry
from pot import proximity

__all__ = ["BINS", "FORMAT_VERSION", "MAX_BIN", "LocalStore", "StoreStatistics"]

MAX_BIN = 31
"""Bins are capped at PO 31: every chunk at least that close to the overlay shares bin 31."""
BINS = MAX_BIN + 1

KEY_META = b"m"
KEY_BIN_COUNTER = b"b"
KEY_STATE = b"s"
META_VERSION = KEY_META + b"version"
META_OVERLAY = KEY_META + b"overlay"
META_EPOCH = KEY_META + b"epoch"

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StoreStatistics:
    """A snapshot of the store's counters."""

    chunks: int
    cursors: tuple[int, ...]
    epoch: int


def _check_bin(bin: int) -> None:
    if not 0 <= bin <= MAX_BIN:
        raise ValueError(f"bin {bin} is outside 0..{MAX_BIN}")


def _check_address(address: bytes) -> None:
    if len(address) != ADDRESS_SIZE:
        raise ValueError(f"address is {len(address)} bytes, not {ADDRESS_SIZE}")


@dataclass(slots=True)
class _Files:
    """What an open store holds open, released together (by close or by the finalizer)."""

    db: plyvel.DB
    chunk_file: ChunkFile
    pull_index: PullIndex
    index: AddressIndex
    lock_fd: int
    cursors: list[int]

    def release(self) -> None:
        """Close everything, marking the address index clean, then drop the directory lock last
        (so no other opener slips in between)."""
        try:
            self.index.close(sum(self.cursors))
        finally:
            self.db.close()
            self.chunk_file.close()
            self.pull_index.close()
            os.close(self.lock_fd)


class LocalStore:
    """Chunks, their per-bin pull index, the store epoch and a key-value state namespace.

    Not thread-safe: use it from one thread (the trio thread, or a script without trio).
    """

    def __init__(self, path: str | os.PathLike[str], overlay: bytes) -> None:
        if not isinstance(overlay, bytes) or len(overlay) != ADDRESS_SIZE:
            raise ValueError(f"overlay must be {ADDRESS_SIZE} bytes, got {overlay!r}")
        self._path = os.path.abspath(os.fspath(path))
        self._overlay = overlay
        self._cursors = [0] * BINS
        self._waiters: dict[int, trio.Event] = {}
        self._db: plyvel.DB | None = None
        lock_fd = claim_directory(self._path, overlay)
        db: plyvel.DB | None = None
        chunk_file: ChunkFile | None = None
        pull_index: PullIndex | None = None
        try:
            db = open_leveldb(self._path)
            self._epoch = self._load_metadata(db)
            self._cursors = self._load_cursors(db)
            chunk_file = ChunkFile(self._path, sum(self._cursors))
            pull_index = PullIndex(self._path, self._cursors)
            index = AddressIndex.open(self._path, sum(self._cursors)) or self._build_index(pull_index)
        except BaseException:
            for opened in (pull_index, chunk_file, db):
                if opened is not None:
                    opened.close()
            os.close(lock_fd)
            raise
        self._db = db
        self._chunk_file = chunk_file
        self._pull_index = pull_index
        self._index = index
        files = _Files(db, chunk_file, pull_index, index, lock_fd, self._cursors)
        self._finalizer = weakref.finalize(self, files.release)

    # -- opening -------------------------------------------------------------------------------

    def _load_metadata(self, db: plyvel.DB) -> int:
        """Return the epoch, writing the metadata first if the LevelDB is brand new."""
        path = self._path
        try:
            version = db.get(META_VERSION)
            if version is None:
                if next(db.iterator(include_value=False), None) is not None:
                    raise StoreCorrupt(path, "the LevelDB holds data but no localstore metadata")
                epoch = time.time_ns()
                batch = db.write_batch(sync=True)
                batch.put(META_VERSION, FORMAT_VERSION.to_bytes(8, "big"))
                batch.put(META_OVERLAY, self._overlay)
                batch.put(META_EPOCH, epoch.to_bytes(8, "big"))
                batch.write()
                return epoch
            overlay = db.get(META_OVERLAY)
            epoch_bytes = db.get(META_EPOCH)
        except plyvel.Error as exc:
            raise StoreCorrupt(path, f"reading metadata failed: {plyvel_message(exc)}") from exc
        if int.from_bytes(version, "big") != FORMAT_VERSION:
            raise UnsupportedStoreVersion(path, int.from_bytes(version, "big"), FORMAT_VERSION)
        if overlay != self._overlay:
            found = overlay.hex() if overlay is not None else "none"
            raise StoreCorrupt(path, f"the LevelDB metadata names overlay {found}, the marker another")
        if epoch_bytes is None or len(epoch_bytes) != 8:
            raise StoreCorrupt(path, "the LevelDB metadata has no valid epoch")
        return int.from_bytes(epoch_bytes, "big")

    def _load_cursors(self, db: plyvel.DB) -> list[int]:
        """Read every bin's counter (its cursor)."""
        cursors = [0] * BINS
        try:
            for bin in range(BINS):
                raw = db.get(KEY_BIN_COUNTER + bytes((bin,)))
                if raw is not None:
                    cursors[bin] = int.from_bytes(raw, "big")
        except plyvel.Error as exc:
            raise StoreCorrupt(self._path, f"reading the bin counters failed: {plyvel_message(exc)}") from exc
        return cursors

    def _build_index(self, pull_index: PullIndex) -> AddressIndex:
        """Build the address index from the pull index (after a crash, or if it is missing)."""
        started = time.perf_counter()
        entries = (
            (entry.address, IndexEntry(entry.slot, entry.length, entry.bin_id))
            for bin, cursor in enumerate(self._cursors)
            for entry in pull_index.read(bin, 1, cursor)
        )
        index = AddressIndex.build(self._path, entries)
        log.info(
            "store %s: rebuilt the address index of %d chunks in %.2f s (it was not closed cleanly)",
            self._path,
            len(index),
            time.perf_counter() - started,
        )
        return index

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the LevelDB and chunk file, release the directory. Idempotent; wakes wait_bin."""
        if self._db is None:
            return
        self._db = None
        self._finalizer()
        waiters, self._waiters = self._waiters, {}
        for event in waiters.values():
            event.set()

    def __enter__(self) -> LocalStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._db is None

    def _live(self) -> plyvel.DB:
        db = self._db
        if db is None:
            raise StoreClosed(f"store {self._path} is closed")
        return db

    # -- identity ------------------------------------------------------------------------------

    @property
    def path(self) -> str:
        return self._path

    @property
    def overlay(self) -> bytes:
        """The overlay address of the node this store belongs to."""
        return self._overlay

    @property
    def epoch(self) -> int:
        """Creation time of the store (ns since the Unix epoch); changes only when it is wiped."""
        return self._epoch

    # -- chunks --------------------------------------------------------------------------------

    def bin_of(self, address: bytes) -> int:
        """The pull-index bin of ``address``: its proximity to the overlay, capped at 31."""
        _check_address(address)
        return min(proximity(self._overlay, address), MAX_BIN)

    def put(self, chunk: Chunk) -> bool:
        """Verify and store ``chunk``; True if it was new. Raises InvalidChunk, storing nothing."""
        chunk.verify()
        db = self._live()
        address = chunk.address
        if address in self._index:
            return False
        bin = min(proximity(self._overlay, address), MAX_BIN)
        bin_id = self._cursors[bin] + 1
        slot = sum(self._cursors)
        self._chunk_file.write(slot, [chunk])
        self._pull_index.append(bin, bin_id, [encode_entry(address, slot, len(chunk.data))])
        db.put(KEY_BIN_COUNTER + bytes((bin,)), bin_id.to_bytes(8, "big"))
        self._cursors[bin] = bin_id
        self._index_new([(address, IndexEntry(slot, len(chunk.data), bin_id))])
        self._notify(bin)
        return True

    def put_many(self, chunks: Iterable[Chunk]) -> int:
        """Verify all ``chunks``, then store the new ones, committed at once; return how many.

        If any chunk is invalid, InvalidChunk is raised and nothing is stored. A chunk given
        twice in one call is stored (and counted) once.
        """
        chunks = list(chunks)
        for chunk in chunks:
            chunk.verify()
        db = self._live()
        overlay = self._overlay
        index = self._index
        cursors = list(self._cursors)
        first_slot = sum(cursors)
        new: list[Chunk] = []
        indexed: list[tuple[bytes, IndexEntry]] = []
        appended: dict[int, list[bytes]] = {}
        seen: set[bytes] = set()
        for chunk in chunks:
            address = chunk.address
            if address in seen or address in index:
                continue
            seen.add(address)
            bin = min(proximity(overlay, address), MAX_BIN)
            cursors[bin] += 1
            slot = first_slot + len(new)
            new.append(chunk)
            appended.setdefault(bin, []).append(encode_entry(address, slot, len(chunk.data)))
            indexed.append((address, IndexEntry(slot, len(chunk.data), cursors[bin])))
        if not new:
            return 0
        self._chunk_file.write(first_slot, new)
        batch = db.write_batch()
        for bin, entries in appended.items():
            self._pull_index.append(bin, self._cursors[bin] + 1, entries)
            batch.put(KEY_BIN_COUNTER + bytes((bin,)), cursors[bin].to_bytes(8, "big"))
        batch.write()
        self._cursors[:] = cursors
        self._index_new(indexed)
        for bin in appended:
            self._notify(bin)
        return len(new)

    def _index_new(self, entries: list[tuple[bytes, IndexEntry]]) -> None:
        """Add committed chunks to the address index; if that fails, have it rebuilt at next open."""
        try:
            for address, entry in entries:
                self._index.add(address, entry)
        except BaseException:
            self._index.mark_stale()
            raise

    def get(self, address: bytes) -> Chunk:
        """The stored chunk at ``address``; raises ChunkNotFound.

        Raises ChunkDamaged if its slot holds something else, and drops the chunk (see _forget).
        """
        entry = self._entry_of(address)
        try:
            return Chunk(address, self._chunk_file.read(entry.slot, entry.length, address))
        except ChunkDamaged:
            self._forget(address, entry.bin_id)
            raise

    def check_slot(self, address: bytes) -> None:
        """Raise ChunkNotFound or ChunkDamaged (dropping the chunk) unless ``address`` is readable.

        Cheaper than get: reads only the address at the start of the chunk's slot.
        """
        entry = self._entry_of(address)
        try:
            self._chunk_file.check(entry.slot, address)
        except ChunkDamaged:
            self._forget(address, entry.bin_id)
            raise

    def _entry_of(self, address: bytes) -> IndexEntry:
        """Where a stored chunk is; raises ChunkNotFound."""
        _check_address(address)
        self._live()
        entry = self._index.get(address)
        if entry is None:
            raise ChunkNotFound(address)
        return entry

    def _forget(self, address: bytes, bin_id: int) -> None:
        """Drop a damaged chunk: a hole in its bin's pull index, no address index entry.

        Its slot stays allocated (slots follow the bin IDs given out); storing the chunk again
        gives it a new bin ID and a new slot.
        """
        self._pull_index.punch(min(proximity(self._overlay, address), MAX_BIN), bin_id)
        try:
            self._index.remove(address)
        except BaseException:
            self._index.mark_stale()
            raise

    def has(self, address: bytes) -> bool:
        _check_address(address)
        self._live()
        return address in self._index

    def __contains__(self, address: object) -> bool:
        return isinstance(address, bytes) and self.has(address)

    def __len__(self) -> int:
        """Number of chunks stored: bin IDs given out, less the damaged chunks dropped."""
        return len(self._index)

    # -- pull index ----------------------------------------------------------------------------

    def cursors(self) -> list[int]:
        """The highest bin ID of each of the 32 bins (0 for an empty bin)."""
        return list(self._cursors)

    def cursor(self, bin: int) -> int:
        """The highest bin ID in ``bin`` (0 if the bin is empty)."""
        _check_bin(bin)
        return self._cursors[bin]

    def iter_bin(self, bin: int, start: int, end: int | None = None) -> Iterator[tuple[int, bytes]]:
        """Yield ``(bin_id, address)`` for bin IDs ``start..end`` (inclusive; no end: to the last).

        The range is fixed at the call: chunks stored meanwhile are not yielded. The holes of
        dropped damaged chunks are skipped.
        """
        _check_bin(bin)
        self._live()
        last = self._cursors[bin] if end is None else min(end, self._cursors[bin])
        entries = self._pull_index.read(bin, max(start, 1), last)
        return ((entry.bin_id, entry.address) for entry in entries)

    async def wait_bin(self, bin: int, after: int) -> int:
        """Return ``bin``'s cursor once it is above ``after`` (at once if it already is).

        Woken by put/put_many through a per-bin trio.Event; raises StoreClosed if the store is
        closed while waiting.
        """
        _check_bin(bin)
        if self._cursors[bin] > after:
            await trio.lowlevel.checkpoint()
        while self._cursors[bin] <= after:
            self._live()
            event = self._waiters.get(bin)
            if event is None:
                event = self._waiters[bin] = trio.Event()
            await event.wait()
        return self._cursors[bin]

    def _notify(self, bin: int) -> None:
        # Nobody waits outside a trio run, so this never calls into trio there.
        event = self._waiters.pop(bin, None)
        if event is not None:
            event.set()

    # -- state namespace -----------------------------------------------------------------------

    def get_state(self, key: bytes) -> bytes | None:
        """The state value stored under ``key``, or None."""
        value: bytes | None = self._live().get(KEY_STATE + key)
        return value

    def put_state(self, key: bytes, value: bytes) -> None:
        self._live().put(KEY_STATE + key, value)

    def delete_state(self, key: bytes) -> None:
        self._live().delete(KEY_STATE + key)

    def iter_state(self, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        """Yield ``(key, value)`` for state keys starting with ``prefix``, in key order."""
        entries = self._live().iterator(prefix=KEY_STATE + prefix)
        return ((key[1:], value) for key, value in entries)

    def write_state_batch(self, puts: Mapping[bytes, bytes], deletes: Iterable[bytes] = ()) -> None:
        """Apply several state puts and deletes atomically. A key may not be in both."""
        deletes = list(deletes)
        both = set(deletes).intersection(puts)
        if both:
            raise ValueError(f"state keys both put and deleted: {sorted(k.hex() for k in both)}")
        batch = self._live().write_batch()
        for key in deletes:
            batch.delete(KEY_STATE + key)
        for key, value in puts.items():
            batch.put(KEY_STATE + key, value)
        batch.write()

    # -- introspection -------------------------------------------------------------------------

    def statistics(self) -> StoreStatistics:
        """Chunk count, per-bin cursors and epoch, from memory (cheap enough for /metrics)."""
        return StoreStatistics(chunks=len(self), cursors=tuple(self._cursors), epoch=self._epoch)

    def __repr__(self) -> str:
        state = "closed" if self._db is None else f"{len(self)} chunks"
        return f"<LocalStore {self._path} overlay={self._overlay.hex()[:8]}… {state}>"
