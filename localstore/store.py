"""LocalStore: the node's store directory: chunks, their per-bin pull index and state.

Key layout (one LevelDB; every key starts with a one-byte namespace; integers big-endian unless
noted, so LevelDB's byte order is numeric order)::

    b"m" b"version"              format version, 8 bytes (FORMAT_VERSION)
    b"m" b"overlay"              the owning node's 32-byte overlay address
    b"m" b"epoch"                creation time, ns since the Unix epoch, 8 bytes
    b"m" b"forgotten"            how many damaged chunks were dropped (absent: 0), 8 bytes
    b"c" address(32)             where the chunk's data is: its slot in the chunk file (8 bytes)
                                 || the data's length (2 bytes) || its bin ID (8 bytes)
    b"p" bin(1) bin_id(8)        pull index: the address of the chunk given ``bin_id`` in ``bin``
                                 (empty: the chunk was damaged and dropped, a hole)
    b"b" bin(1)                  bin counter: the highest bin ID given out in ``bin``, 8 bytes
    b"s" key                     state namespace of other components (interval sets, ...)

The chunk data itself (span, 8 bytes little-endian, || payload) is kept outside LevelDB, in
fixed-size slots of the file ``CHUNKS`` beside it (localstore/chunkfile.py says why). A new
chunk's slot is written first; then its index entry, pull-index entry and its bin's counter go
into one LevelDB write batch, so no crash can leave one without the others, nor an indexed chunk
without its data. ``bin = min(proximity(overlay, address), 31)``;
bin IDs start at 1 and grow by 1 per chunk stored in the bin, so a bin's counter is its
*cursor*. Chunks are never deleted, so the sum of the cursors is the next free slot, and the
chunk count is that sum less the *forgotten* ones: a chunk whose slot turns out damaged (what a
power cut can leave) is dropped from the index when found, so that it reads as missing, leaves a
hole in the pull index, and can be synced again from peers.

Beside the LevelDB files the directory holds ``LOCALSTORE``, a small JSON marker
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

import os
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import plyvel
import trio

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
from pot import proximity

__all__ = ["BINS", "FORMAT_VERSION", "MAX_BIN", "LocalStore", "StoreStatistics"]

MAX_BIN = 31
"""Bins are capped at PO 31: every chunk at least that close to the overlay shares bin 31."""
BINS = MAX_BIN + 1
MAX_BIN_ID = 2**64 - 1

KEY_META = b"m"
KEY_CHUNK = b"c"
KEY_PULL = b"p"
KEY_BIN_COUNTER = b"b"
KEY_STATE = b"s"
META_VERSION = KEY_META + b"version"
META_OVERLAY = KEY_META + b"overlay"
META_EPOCH = KEY_META + b"epoch"
META_FORGOTTEN = KEY_META + b"forgotten"


@dataclass(frozen=True, slots=True)
class StoreStatistics:
    """A snapshot of the store's counters."""

    chunks: int
    cursors: tuple[int, ...]
    epoch: int


def _pull_key(bin: int, bin_id: int) -> bytes:
    return KEY_PULL + bytes((bin,)) + bin_id.to_bytes(8, "big")


def _check_bin(bin: int) -> None:
    if not 0 <= bin <= MAX_BIN:
        raise ValueError(f"bin {bin} is outside 0..{MAX_BIN}")


def _check_address(address: bytes) -> None:
    if len(address) != ADDRESS_SIZE:
        raise ValueError(f"address is {len(address)} bytes, not {ADDRESS_SIZE}")


def _slot_ref(slot: int, length: int, bin_id: int) -> bytes:
    return slot.to_bytes(8, "big") + length.to_bytes(2, "big") + bin_id.to_bytes(8, "big")


def _parse_ref(ref: bytes) -> tuple[int, int, int]:
    """(slot, length, bin ID) of a chunk index value."""
    return int.from_bytes(ref[:8], "big"), int.from_bytes(ref[8:10], "big"), int.from_bytes(ref[10:], "big")


def _release(db: plyvel.DB, chunk_file: ChunkFile, lock_fd: int) -> None:
    """Close the LevelDB and chunk file, then drop the directory lock (so no one slips between)."""
    db.close()
    chunk_file.close()
    os.close(lock_fd)


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
        try:
            db = open_leveldb(self._path)
            self._epoch = self._load_metadata(db)
            self._cursors = self._load_cursors(db)
            self._forgotten = self._load_forgotten(db)
            self._chunk_file = ChunkFile(self._path, sum(self._cursors))
        except BaseException:
            if db is not None:
                db.close()
            os.close(lock_fd)
            raise
        self._db = db
        self._finalizer = weakref.finalize(self, _release, db, self._chunk_file, lock_fd)

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
        """Read every bin counter and check it against the bin's last pull-index entry."""
        cursors = [0] * BINS
        try:
            for bin in range(BINS):
                raw = db.get(KEY_BIN_COUNTER + bytes((bin,)))
                counter = 0 if raw is None else int.from_bytes(raw, "big")
                last = next(
                    db.iterator(
                        start=KEY_PULL + bytes((bin,)),
                        stop=KEY_PULL + bytes((bin + 1,)),
                        reverse=True,
                        include_value=False,
                    ),
                    None,
                )
                highest = 0 if last is None else int.from_bytes(last[-8:], "big")
                if counter != highest:
                    problem = f"bin {bin} counter is {counter} but its last pull-index entry is {highest}"
                    raise StoreCorrupt(self._path, problem)
                cursors[bin] = counter
        except plyvel.Error as exc:
            raise StoreCorrupt(self._path, f"reading the pull index failed: {plyvel_message(exc)}") from exc
        return cursors

    def _load_forgotten(self, db: plyvel.DB) -> int:
        try:
            raw = db.get(META_FORGOTTEN)
        except plyvel.Error as exc:
            raise StoreCorrupt(self._path, f"reading metadata failed: {plyvel_message(exc)}") from exc
        forgotten = 0 if raw is None else int.from_bytes(raw, "big")
        if forgotten > sum(self._cursors):
            raise StoreCorrupt(self._path, f"{forgotten} chunks forgotten of {sum(self._cursors)} stored")
        return forgotten

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
        key = KEY_CHUNK + address
        if db.get(key) is not None:
            return False
        bin = min(proximity(self._overlay, address), MAX_BIN)
        bin_id = self._cursors[bin] + 1
        id_bytes = bin_id.to_bytes(8, "big")
        bin_byte = bytes((bin,))
        slot = sum(self._cursors)
        self._chunk_file.write(slot, [chunk])
        batch = db.write_batch()
        batch.put(key, _slot_ref(slot, len(chunk.data), bin_id))
        batch.put(KEY_PULL + bin_byte + id_bytes, address)
        batch.put(KEY_BIN_COUNTER + bin_byte, id_bytes)
        batch.write()
        self._cursors[bin] = bin_id
        self._notify(bin)
        return True

    def put_many(self, chunks: Iterable[Chunk]) -> int:
        """Verify all ``chunks``, then store the new ones in one write batch; return how many.

        If any chunk is invalid, InvalidChunk is raised and nothing is stored. A chunk given
        twice in one call is stored (and counted) once.
        """
        chunks = list(chunks)
        for chunk in chunks:
            chunk.verify()
        db = self._live()
        overlay = self._overlay
        cursors = list(self._cursors)
        first_slot = sum(cursors)
        new: list[Chunk] = []
        touched: set[int] = set()
        seen: set[bytes] = set()
        batch = db.write_batch()
        for chunk in chunks:
            address = chunk.address
            if address in seen:
                continue
            seen.add(address)
            key = KEY_CHUNK + address
            if db.get(key) is not None:
                continue
            bin = min(proximity(overlay, address), MAX_BIN)
            bin_id = cursors[bin] + 1
            cursors[bin] = bin_id
            touched.add(bin)
            batch.put(key, _slot_ref(first_slot + len(new), len(chunk.data), bin_id))
            new.append(chunk)
            batch.put(KEY_PULL + bytes((bin,)) + bin_id.to_bytes(8, "big"), address)
        if not new:
            return 0
        self._chunk_file.write(first_slot, new)
        for bin in touched:
            batch.put(KEY_BIN_COUNTER + bytes((bin,)), cursors[bin].to_bytes(8, "big"))
        batch.write()
        self._cursors = cursors
        for bin in touched:
            self._notify(bin)
        return len(new)

    def get(self, address: bytes) -> Chunk:
        """The stored chunk at ``address``; raises ChunkNotFound.

        Raises ChunkDamaged if its slot holds something else, and drops the chunk (see _forget).
        """
        slot, length, bin_id = self._slot_of(address)
        try:
            return Chunk(address, self._chunk_file.read(slot, length, address))
        except ChunkDamaged:
            self._forget(address, bin_id)
            raise

    def check_slot(self, address: bytes) -> None:
        """Raise ChunkNotFound or ChunkDamaged (dropping the chunk) unless ``address`` is readable.

        Cheaper than get: reads only the address at the start of the chunk's slot.
        """
        slot, _, bin_id = self._slot_of(address)
        try:
            self._chunk_file.check(slot, address)
        except ChunkDamaged:
            self._forget(address, bin_id)
            raise

    def _slot_of(self, address: bytes) -> tuple[int, int, int]:
        """(slot, length, bin ID) of a stored chunk; raises ChunkNotFound."""
        ref = self._live().get(KEY_CHUNK + address)
        if ref is None:
            raise ChunkNotFound(address)
        return _parse_ref(ref)

    def _forget(self, address: bytes, bin_id: int) -> None:
        """Drop a damaged chunk: no index entry, a hole in its bin, one more forgotten.

        Its slot stays allocated (slots follow the bin IDs given out); storing the chunk again
        gives it a new bin ID and a new slot.
        """
        bin = min(proximity(self._overlay, address), MAX_BIN)
        batch = self._live().write_batch()
        batch.delete(KEY_CHUNK + address)
        batch.put(_pull_key(bin, bin_id), b"")
        batch.put(META_FORGOTTEN, (self._forgotten + 1).to_bytes(8, "big"))
        batch.write()
        self._forgotten += 1

    def has(self, address: bytes) -> bool:
        return self._live().get(KEY_CHUNK + address) is not None

    def __contains__(self, address: object) -> bool:
        return isinstance(address, bytes) and self.has(address)

    def __len__(self) -> int:
        """Number of chunks stored: bin IDs given out, less the damaged chunks dropped."""
        return sum(self._cursors) - self._forgotten

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

        Reads a LevelDB snapshot taken at the call: chunks stored meanwhile are not yielded. The
        holes of dropped damaged chunks are skipped.
        """
        _check_bin(bin)
        db = self._live()
        start = max(start, 0)
        if start > MAX_BIN_ID or (end is not None and end < start):
            return iter(())
        if end is None:
            entries = db.iterator(start=_pull_key(bin, start), stop=KEY_PULL + bytes((bin + 1,)))
        else:
            stop = _pull_key(bin, min(end, MAX_BIN_ID))
            entries = db.iterator(start=_pull_key(bin, start), stop=stop, include_stop=True)
        return ((int.from_bytes(key[-8:], "big"), address) for key, address in entries if address)

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
