"""LocalStore: the node's store directory: chunks, their per-bin pull index and state.

Its files, their LevelDB keys and how they are opened together are in localstore/storefiles.py.

``bin = min(proximity(overlay, address), 31)``; bin IDs start at 1 and grow by 1 per chunk
stored in the bin, so a bin's counter is its *cursor*. Chunks are never deleted, so slots are
handed out in order and the sum of the cursors is the next free slot. A new chunk's slot and its
pull-index entry are written first; the LevelDB batch that raises its bin's cursor commits it (a
crash before leaves bytes past the cursors, which opening cuts off); the address index is updated
last, and rebuilt from the pull index whenever it was not closed cleanly. A chunk whose slot turns
out damaged (its address or checksum does not match: a power cut's lost write, bit rot) is dropped
when a read finds it: its pull-index entry becomes a hole and its address leaves the index, so it
reads as missing and can be synced again. Opening drops the chunks a power cut took the data or
pull-index entries of in the same way (localstore/recovery.py).

Only the cursors and small state live in LevelDB, because LevelDB 1.22 (bundled with plyvel)
reads its tables through mmap: per-chunk keys made its compactions' working set, and so the
node's resident memory, grow with the store (docs/performance.md).
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

import plyvel
import trio

from localstore.addressindex import IndexEntry
from localstore.chunk import ADDRESS_SIZE, Chunk
from localstore.directory import FORMAT_VERSION
from localstore.errors import ChunkDamaged, ChunkNotFound, StoreClosed
from localstore.pullindex import encode_entry
from localstore.storefiles import (
    BINS,
    KEY_BIN_COUNTER,
    KEY_STATE,
    MAX_BIN,
    META_VERSION,
    StoreFiles,
)
from pot import proximity

__all__ = [
    "BINS",
    "FORMAT_VERSION",
    "KEY_BIN_COUNTER",
    "MAX_BIN",
    "META_VERSION",
    "LocalStore",
    "StoreStatistics",
]


@dataclass(frozen=True, slots=True)
class StoreStatistics:
    """A snapshot of the store's counters."""

    chunks: int
    cursors: tuple[int, ...]
    epoch: int
    dropped: int = 0
    """Damaged chunks dropped since the store was opened (by opening's recovery and by reads)."""


def _check_bin(bin: int) -> None:
    if not 0 <= bin <= MAX_BIN:
        raise ValueError(f"bin {bin} is outside 0..{MAX_BIN}")


def _check_address(address: bytes) -> None:
    if len(address) != ADDRESS_SIZE:
        raise ValueError(f"address is {len(address)} bytes, not {ADDRESS_SIZE}")


class LocalStore:
    """Chunks, their per-bin pull index, the store epoch and a key-value state namespace.

    Not thread-safe: use it from one thread (the trio thread, or a script without trio).
    """

    def __init__(self, path: str | os.PathLike[str], overlay: bytes) -> None:
        if not isinstance(overlay, bytes) or len(overlay) != ADDRESS_SIZE:
            raise ValueError(f"overlay must be {ADDRESS_SIZE} bytes, got {overlay!r}")
        self._path = os.path.abspath(os.fspath(path))
        self._overlay = overlay
        self._waiters: dict[int, trio.Event] = {}
        files = StoreFiles.open(self._path, overlay)
        self._db: plyvel.DB | None = files.db
        self._chunk_file = files.chunk_file
        self._pull_index = files.pull_index
        self._index = files.index
        self._cursors = files.cursors
        self._epoch = files.epoch
        self._dropped = files.dropped
        self.on_drop: Callable[[bytes], None] | None = None  # told each damaged chunk dropped
        self._finalizer = weakref.finalize(self, files.release)

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the store's files, release the directory. Idempotent; wakes wait_bin."""
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
        return self.put_many((chunk,)) == 1

    def put_many(self, chunks: Iterable[Chunk], *, verified: bool = False) -> int:
        """Verify all ``chunks``, then store the new ones, committed at once; return how many.

        If any chunk is invalid, InvalidChunk is raised and nothing is stored. A chunk given
        twice in one call is stored (and counted) once. ``verified=True`` skips the check, for
        chunks whose every address the caller has just checked (in a verifier worker process).
        """
        chunks = list(chunks)
        if not verified:
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
        batch = db.write_batch()  # the commit: every touched bin's cursor, at once
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

        Raises ChunkDamaged, and drops the chunk (see _forget), if its slot holds another
        address or data that fails the slot's checksum: a damaged chunk is never returned.
        """
        entry = self._entry_of(address)
        try:
            return Chunk(address, self._chunk_file.read(entry.slot, entry.length, address))
        except ChunkDamaged:
            self._forget(address, entry.bin_id)
            raise

    def check_slot(self, address: bytes) -> None:
        """Raise ChunkNotFound or ChunkDamaged (dropping the chunk) unless get would succeed.

        The upstream calls it for every chunk it offers, so that a damaged chunk is not offered
        and then found undeliverable. It reads the whole slot (a 4 KiB pread and an XXH3 hash, about
        1 us more than the address alone: docs/performance.md) but builds no Chunk.
        """
        entry = self._entry_of(address)
        try:
            self._chunk_file.read(entry.slot, entry.length, address)
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
        self._pull_index.punch(self.bin_of(address), bin_id)
        self._dropped += 1
        if self.on_drop is not None:
            self.on_drop(address)
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
        """Chunk count, per-bin cursors, epoch and chunks dropped, from memory (cheap enough for
        /metrics)."""
        return StoreStatistics(
            chunks=len(self), cursors=tuple(self._cursors), epoch=self._epoch, dropped=self._dropped
        )

    def __repr__(self) -> str:
        state = "closed" if self._db is None else f"{len(self)} chunks"
        return f"<LocalStore {self._path} overlay={self._overlay.hex()[:8]}… {state}>"
