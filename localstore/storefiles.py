"""StoreFiles: a store directory's files, opened together, checked against each other, closed together.

A store directory holds four kinds of files, each written by the module named:

    CHUNKS          chunk data in fixed-size slots (localstore/chunkfile.py)
    PULL-00..31     each bin's pull index: bin ID -> address, slot, length (localstore/pullindex.py)
    ADDRESSES       address -> slot, length, bin ID, a hash file derived from the pull index
                    (localstore/addressindex.py)
    LevelDB files   the metadata, the bins' cursors and other components' state (this module)
    TREE-00..31     each bin's Merkle log over its pull index, derived (localstore/binlog.py)

LevelDB key layout (every key starts with a one-byte namespace; integers big-endian)::

    b"m" b"version"              format version, 8 bytes (FORMAT_VERSION)
    b"m" b"overlay"              the owning node's 32-byte overlay address
    b"m" b"epoch"                creation time, ns since the Unix epoch, 8 bytes
    b"m" b"slots"                the chunk file's length in slots, 8 bytes (raised with the cursors)
    b"m" b"lost"                 chunks recovery dropped, until the node reset their intervals
                                 (localstore/lost.py)
    b"m" b"slotmap"              free slots and chunks per bin at the last clean close
                                 (localstore/slots.py; derived data, trusted only after a clean close)
    b"b" bin(1)                  bin counter: the highest bin ID given out in ``bin``, 8 bytes
    b"s" key                     state namespace of other components (interval sets, ...)

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

What a crash or a power cut can leave, and how opening recovers from it, is in
localstore/recovery.py (the files) and localstore/directory.py (LevelDB). A clean close flushes
every file and LevelDB's log to the disk before it marks the address index clean, so a power cut
after a clean close loses nothing.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

import plyvel

from localstore.addressindex import AddressIndex
from localstore.binlog import BinLogs
from localstore.chunkfile import CHUNK_FILE_NAME, ChunkFile
from localstore.directory import FORMAT_VERSION, claim_directory, open_leveldb, plyvel_message
from localstore.errors import MOVE_AWAY, StoreCorrupt, UnsupportedStoreVersion
from localstore.lost import LostChunk, record_lost
from localstore.pullindex import PullIndex, pull_file_name
from localstore.recovery import rebuild_index, repair_torn_files, scan_slots
from localstore.slots import SlotMap, SlotSummaryError
from pot import MAX_PO

__all__ = ["BINS", "KEY_BIN_COUNTER", "KEY_STATE", "MAX_BIN", "META_SLOTS", "META_VERSION", "StoreFiles"]

MAX_BIN = MAX_PO
"""Bins are capped at ``pot.MAX_PO`` (31): every chunk at least that close to the overlay shares it."""
BINS = MAX_BIN + 1

KEY_META = b"m"
KEY_BIN_COUNTER = b"b"
KEY_STATE = b"s"
log = logging.getLogger(__name__)

META_VERSION = KEY_META + b"version"
META_OVERLAY = KEY_META + b"overlay"
META_EPOCH = KEY_META + b"epoch"
META_SLOTS = KEY_META + b"slots"
META_SLOT_MAP = KEY_META + b"slotmap"


@dataclass(slots=True)
class StoreFiles:
    """Everything an open store holds open; ``cursors`` is the store's live list of bin cursors,
    ``slots`` its live slot map (free slots, chunks per bin).

    ``dropped`` is how many chunks opening dropped because their data or pull-index entries
    were lost.
    """

    db: plyvel.DB
    chunk_file: ChunkFile
    pull_index: PullIndex
    index: AddressIndex
    lock_fd: int
    cursors: list[int]
    epoch: int
    dropped: int
    slots: SlotMap
    logs: BinLogs | None = None  # None: the store keeps no bin logs (--provable-sync off)

    @classmethod
    def open(cls, path: str, overlay: bytes, *, logs: bool = True) -> StoreFiles:
        """Claim and lock the directory, open its LevelDB (creating the store if it is new, or
        repairing it) and files, cut off uncommitted tails, repair torn ones, and rebuild the
        address index (and the bin logs) if it was not closed cleanly or chunks were lost. Raises
        a StoreError subclass naming the problem, leaving nothing open."""
        lock_fd = claim_directory(path, overlay)
        db: plyvel.DB | None = None
        chunk_file: ChunkFile | None = None
        pull_index: PullIndex | None = None
        try:
            db = open_leveldb(path)
            epoch = _load_metadata(db, path, overlay)
            cursors = _load_cursors(db, path)
            count = _load_int(db, path, META_SLOTS)
            generation = sum(cursors)  # bin IDs given out: every put raises it
            chunk_file = ChunkFile(path, count)
            pull_index = PullIndex(path, cursors)
            torn = repair_torn_files(path, chunk_file, pull_index)
            index = None if torn else AddressIndex.open(path, generation)
            unclean = index is None
            lost: list[LostChunk] = [(bin, None) for bin, ids in pull_index.lost.items() for _ in ids]
            if index is None:
                index, lost_data, slots = rebuild_index(
                    path, pull_index, cursors, chunk_file.lost.start, count
                )
                lost += lost_data
                record_lost(db, lost)
            else:
                slots = _load_slot_map(db, pull_index, cursors, count)
            # -- provable streams: the bin logs are rebuilt whenever the index is
            bin_logs = BinLogs(path, pull_index, cursors, rebuild=unclean) if logs else None
        except BaseException:
            for opened in (pull_index, chunk_file, db):
                if opened is not None:
                    opened.close()
            os.close(lock_fd)
            raise
        return cls(db, chunk_file, pull_index, index, lock_fd, cursors, epoch, len(lost), slots, bin_logs)

    def release(self) -> None:
        """Flush the files and LevelDB's log to the disk, close everything, marking the address
        index clean, then drop the directory lock last (so no other opener slips in between)."""
        try:
            try:
                self.chunk_file.sync()
                self.pull_index.sync()
                # LevelDB writes its log without fsync; a synced write flushes all before it.
                batch = self.db.write_batch(sync=True)
                batch.put(META_SLOT_MAP, self.slots.to_bytes(sum(self.cursors)))
                batch.put(META_VERSION, FORMAT_VERSION.to_bytes(8, "big"))
                batch.write()
            except BaseException:
                self.index.mark_stale()
                raise
            finally:
                self.index.close(sum(self.cursors))
        finally:
            self.db.close()
            self.chunk_file.close()
            self.pull_index.close()
            if self.logs is not None:
                self.logs.close()
            os.close(self.lock_fd)


def write_new_epoch(db: plyvel.DB, previous: int) -> int:
    """Record a new store epoch (now, and after ``previous``), durably; returns it."""
    epoch = max(time.time_ns(), previous + 1)
    db.put(META_EPOCH, epoch.to_bytes(8, "big"), sync=True)
    return epoch


def _load_metadata(db: plyvel.DB, path: str, overlay: bytes) -> int:
    """Return the epoch, writing the metadata first if the LevelDB is brand new."""
    try:
        version = db.get(META_VERSION)
        if version is None:
            if next(db.iterator(include_value=False), None) is not None:
                raise StoreCorrupt(path, f"the LevelDB holds data but no localstore metadata; {MOVE_AWAY}")
            if _holds_chunks(path):
                lost = "the LevelDB lost the store's metadata and cursors (the chunk files are there)"
                raise StoreCorrupt(path, f"{lost}; {MOVE_AWAY}")
            epoch = time.time_ns()
            batch = db.write_batch(sync=True)
            batch.put(META_VERSION, FORMAT_VERSION.to_bytes(8, "big"))
            batch.put(META_OVERLAY, overlay)
            batch.put(META_EPOCH, epoch.to_bytes(8, "big"))
            batch.write()
            return epoch
        stored = db.get(META_OVERLAY)
        epoch_bytes = db.get(META_EPOCH)
    except plyvel.Error as exc:
        raise StoreCorrupt(path, f"reading metadata failed: {plyvel_message(exc)}") from exc
    if int.from_bytes(version, "big") != FORMAT_VERSION:
        raise UnsupportedStoreVersion(path, int.from_bytes(version, "big"), FORMAT_VERSION)
    if stored != overlay:
        found = stored.hex() if stored is not None else "none"
        raise StoreCorrupt(path, f"the LevelDB metadata names overlay {found}, the marker another")
    if epoch_bytes is None or len(epoch_bytes) != 8:
        raise StoreCorrupt(path, "the LevelDB metadata has no valid epoch")
    return int.from_bytes(epoch_bytes, "big")


def _load_cursors(db: plyvel.DB, path: str) -> list[int]:
    """Read every bin's counter (its cursor)."""
    cursors = [0] * BINS
    try:
        for bin in range(BINS):
            raw = db.get(KEY_BIN_COUNTER + bytes((bin,)))
            if raw is not None:
                cursors[bin] = int.from_bytes(raw, "big")
    except plyvel.Error as exc:
        raise StoreCorrupt(path, f"reading the bin counters failed: {plyvel_message(exc)}") from exc
    return cursors


def _load_int(db: plyvel.DB, path: str, key: bytes) -> int:
    """An 8-byte big-endian metadata value (0 if absent)."""
    try:
        raw = db.get(key)
    except plyvel.Error as exc:
        raise StoreCorrupt(path, f"reading {key[1:].decode()} failed: {plyvel_message(exc)}") from exc
    return 0 if raw is None else int.from_bytes(raw, "big")


def _load_slot_map(db: plyvel.DB, pull_index: PullIndex, cursors: list[int], count: int) -> SlotMap:
    """The slot map the last clean close kept, or one derived from the pull index."""
    try:
        raw = db.get(META_SLOT_MAP)
    except plyvel.Error:
        raw = None
    if raw is not None:
        try:
            return SlotMap.from_bytes(raw, sum(cursors), count, BINS)
        except SlotSummaryError as exc:
            log.info("slot map not used (%s): deriving it from the pull index", exc)
    return scan_slots(pull_index, cursors, count)


def _holds_chunks(path: str) -> bool:
    """Whether the chunk file or a pull file holds data (then the LevelDB is not new)."""
    for name in (CHUNK_FILE_NAME, *(pull_file_name(bin) for bin in range(BINS))):
        file = os.path.join(path, name)
        if os.path.exists(file) and os.path.getsize(file):
            return True
    return False
