"""LocalStore: the node's store directory: chunks, their per-bin pull index and state.

Its files, their LevelDB keys and how they are opened together are in localstore/storefiles.py.

``bin = min(proximity(overlay, address), 31)``; bin IDs start at 1 and grow by 1 per chunk
stored in the bin, so a bin's counter is its *cursor*. A new chunk takes the lowest free slot
(one an evicted chunk gave back) or a new one at the end of the chunk file (localstore/slots.py);
the write path and the order that makes a crash safe are in localstore/chunkwrites.py, an
upstream's reads in localstore/offerreads.py. The address index is rebuilt from the pull index
whenever it was not closed cleanly.

The reserve (localstore/reserve.py) *evicts* chunks: each leaves a hole in its bin's pull index
(keeping its address: bin IDs are never given out twice and a hole is never offered), leaves the
address index, and gives its slot back. A chunk whose slot turns out damaged (its address or
checksum does not match: a power cut's lost write, bit rot) is dropped the same way when a read
finds it, except that its slot stays taken until the next rebuild (after a power cut two entries
may name one slot, and the other chunk may be good). Opening drops the chunks a power cut took
the data or pull-index entries of in the same way (localstore/recovery.py).

Only the cursors and small state live in LevelDB, because LevelDB 1.22 (bundled with plyvel)
reads its tables through mmap: per-chunk keys made its compactions' working set, and so the
node's resident memory, grow with the store (docs/performance.md).
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterable, Iterator

import plyvel

from chunks.chunk import ADDRESS_SIZE, Chunk
from localstore.addressindex import IndexEntry
from localstore.binlog import BinLogs
from localstore.binwaiters import BinWaiters
from localstore.chunkwrites import ChunkWrites
from localstore.directory import FORMAT_VERSION
from localstore.errors import ChunkDamaged, ChunkNotFound, StoreClosed
from localstore.lost import LostChunk, clear_lost, read_lost
from localstore.offerreads import OfferReads
from localstore.statenamespace import StateNamespace
from localstore.storefiles import MAX_BIN, META_VERSION, StoreFiles, write_new_epoch
from localstore.storestats import StoreStatistics
from pot import proximity

__all__ = ["LocalStore"]


def _check_bin(bin: int) -> None:
    if not 0 <= bin <= MAX_BIN:
        raise ValueError(f"bin {bin} is outside 0..{MAX_BIN}")


def _check_address(address: bytes) -> None:
    if len(address) != ADDRESS_SIZE:
        raise ValueError(f"address is {len(address)} bytes, not {ADDRESS_SIZE}")


class LocalStore(StateNamespace, ChunkWrites, OfferReads):
    """Chunks, their per-bin pull index, the store epoch and a key-value state namespace.

    Not thread-safe: use it from one thread (the trio thread, or a script without trio).
    """

    def __init__(self, path: str | os.PathLike[str], overlay: bytes, *, logs: bool = True) -> None:
        """Open (or create) the store at ``path``; ``logs=False`` keeps no bin logs (they are
        brought up to date the next time the store is opened with them)."""
        if not isinstance(overlay, bytes) or len(overlay) != ADDRESS_SIZE:
            raise ValueError(f"overlay must be {ADDRESS_SIZE} bytes, got {overlay!r}")
        self._path = os.path.abspath(os.fspath(path))
        self._overlay = overlay
        self._waiters = BinWaiters()
        files = StoreFiles.open(self._path, overlay, logs=logs)
        self._logs = files.logs
        self._db: plyvel.DB | None = files.db
        self._chunk_file = files.chunk_file
        self._pull_index = files.pull_index
        self._index = files.index
        self._cursors = files.cursors
        self._epoch = files.epoch
        self._dropped = files.dropped
        self._slots = files.slots
        self._evicted = 0
        self.on_drop: Callable[[bytes], None] | None = None  # told each damaged chunk dropped
        self._finalizer = weakref.finalize(self, files.release)

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the store's files, release the directory. Idempotent; wakes wait_bin."""
        if self._db is None:
            return
        self._db = None
        self._finalizer()
        self._waiters.wake_all()

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
        """Creation time of the store (ns since the Unix epoch); changes when it is wiped, or
        renewed (`renew_epoch`)."""
        return self._epoch

    def lost_at_open(self) -> list[LostChunk]:
        """The chunks recovery dropped (at this open or one before), until `lost_handled`."""
        return read_lost(self._live())

    def lost_handled(self) -> None:
        """The node reset the synced intervals that covered `lost_at_open`: forget them."""
        clear_lost(self._live())

    def renew_epoch(self) -> int:
        """Take a new epoch: the store went back (restored from an older copy) and would reuse
        bin IDs its peers synced. Every interval they keep for it is then void."""
        self._epoch = write_new_epoch(self._live(), self._epoch)
        return self._epoch

    # -- chunks --------------------------------------------------------------------------------

    def bin_of(self, address: bytes) -> int:
        """The pull-index bin of ``address``: its proximity to the overlay, capped at 31."""
        _check_address(address)
        return min(proximity(self._overlay, address), MAX_BIN)

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

        Its slot stays taken until the next rebuild of the address index (see the module's
        docstring); storing the chunk again gives it a new bin ID and a new slot.
        """
        bin = self.bin_of(address)
        self._pull_index.punch(bin, bin_id)
        self._dropped += 1
        self._slots.counts[bin] -= 1
        if self.on_drop is not None:
            self.on_drop(address)
        try:
            self._index.remove(address)
        except BaseException:
            self._index.mark_stale()
            raise

    def evict(self, addresses: Iterable[bytes]) -> int:
        """Remove stored chunks (the reserve's eviction); return how many were stored.

        Each leaves a hole in its bin's pull index, keeping its address, leaves the address
        index, and gives its slot back for the next put. Addresses not stored are skipped.
        """
        self._live()
        index = self._index
        evicted = 0
        try:
            for address in addresses:
                entry = index.get(address)
                if entry is None:
                    continue
                bin = self.bin_of(address)
                self._pull_index.punch(bin, entry.bin_id)
                index.remove(address)
                self._slots.release(entry.slot)
                self._slots.counts[bin] -= 1
                evicted += 1
        except BaseException:
            self._index.mark_stale()
            raise
        finally:
            self._evicted += evicted
        return evicted

    def bin_id_of(self, address: bytes) -> int | None:
        """The bin ID a stored chunk got (None: not stored), for proofs about it (swarm prove)."""
        _check_address(address)
        self._live()
        entry = self._index.get(address)
        return entry.bin_id if entry is not None else None

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

    def bin_counts(self) -> list[int]:
        """How many chunks each of the 32 bins holds now (bin IDs given out, less the holes)."""
        return list(self._slots.counts)

    def cursor(self, bin: int) -> int:
        """The highest bin ID in ``bin`` (0 if the bin is empty)."""
        _check_bin(bin)
        return self._cursors[bin]

    def iter_bin(self, bin: int, start: int, end: int | None = None) -> Iterator[tuple[int, bytes]]:
        """Yield ``(bin_id, address)`` for bin IDs ``start..end`` (inclusive; no end: to the last).

        The range is fixed at the call: chunks stored meanwhile are not yielded. The holes of
        evicted and of dropped damaged chunks are skipped.
        """
        _check_bin(bin)
        self._live()
        last = self._cursors[bin] if end is None else min(end, self._cursors[bin])
        entries = self._pull_index.read(bin, max(start, 1), last)
        return ((entry.bin_id, entry.address) for entry in entries)

    @property
    def logs(self) -> BinLogs | None:
        """The bins' Merkle logs (localstore/binlog.py), or None if the store keeps none."""
        self._live()
        return self._logs

    def make_durable(self) -> list[int]:
        """Flush the pull index and the cursors to the disk; return the cursors that are now
        durable (those of the call: puts that run meanwhile may or may not be).

        Safe to call from a worker thread while the store is used (it only flushes file
        descriptors and writes one synced LevelDB key), but not while it is being closed. A node
        signs a state of a bin's log only up to durable cursors, so that a power cut can never
        make it sign another root for the same size (localstore/binlog.py).
        """
        db = self._live()
        cursors = list(self._cursors)
        self._pull_index.sync()
        db.put(META_VERSION, FORMAT_VERSION.to_bytes(8, "big"), sync=True)  # flushes LevelDB's log
        return cursors

    async def wait_bin(self, bin: int, after: int) -> int:
        """Return ``bin``'s cursor once it is above ``after`` (at once if it already is).

        Woken by put/put_many (localstore/binwaiters.py); raises StoreClosed if the store is
        closed while waiting.
        """
        _check_bin(bin)
        return await self._waiters.wait(self._cursors, bin, after, self._live)

    # -- introspection -------------------------------------------------------------------------

    def statistics(self) -> StoreStatistics:
        """Chunk count, per-bin cursors, epoch and chunks dropped, from memory (cheap enough for
        /metrics)."""
        return StoreStatistics(
            chunks=len(self),
            cursors=tuple(self._cursors),
            epoch=self._epoch,
            dropped=self._dropped,
            evicted=self._evicted,
            slots=self._slots.count,
            free_slots=len(self._slots.free),
        )

    def __repr__(self) -> str:
        state = "closed" if self._db is None else f"{len(self)} chunks"
        return f"<LocalStore {self._path} overlay={self._overlay.hex()[:8]}… {state}>"
