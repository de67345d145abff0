"""The store's write path: verify chunks, give them slots and bin IDs, commit them at once.

A base of LocalStore (localstore/store.py), apart from its reads and eviction because the
commit order is the store's crash-safety argument: each new chunk's slot and pull-index entry
are written first, then one LevelDB batch raises the touched bins' cursors (and the chunk
file's slot count), which commits them (a crash before leaves bytes past the cursors, which
opening cuts off, or in a free slot); only then are the bin logs and the address index
updated (each marked stale, to be rebuilt at the next open, if that fails) and the bins'
waiters woken (localstore/binwaiters.py).
"""

from __future__ import annotations

from collections.abc import Iterable

import plyvel

from chunks.chunk import Chunk
from localstore.addressindex import AddressIndex, IndexEntry
from localstore.binlog import BinLogs
from localstore.binwaiters import BinWaiters
from localstore.chunkfile import ChunkFile
from localstore.pullindex import PullIndex, encode_entry
from localstore.slots import SlotMap
from localstore.storefiles import KEY_BIN_COUNTER, MAX_BIN, META_SLOTS
from pot import proximity


class ChunkWrites:
    """put and put_many over the store's open files (set up by LocalStore.__init__)."""

    _overlay: bytes
    _waiters: BinWaiters
    _logs: BinLogs | None
    _chunk_file: ChunkFile
    _pull_index: PullIndex
    _index: AddressIndex
    _cursors: list[int]
    _slots: SlotMap

    def _live(self) -> plyvel.DB:
        raise NotImplementedError

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
        new: list[Chunk] = []
        bins: list[int] = []
        seen: set[bytes] = set()
        for chunk in chunks:
            address = chunk.address
            if address in seen or address in index:
                continue
            seen.add(address)
            new.append(chunk)
            bins.append(min(proximity(overlay, address), MAX_BIN))
        if not new:
            return 0
        slots = self._slots.allocate(len(new))
        try:
            self._chunk_file.write(slots, new)
            indexed: list[tuple[bytes, IndexEntry]] = []
            appended: dict[int, list[bytes]] = {}
            leaves: dict[int, list[bytes]] = {}  # the new addresses per bin, for the bin logs
            for chunk, bin, slot in zip(new, bins, slots, strict=True):
                cursors[bin] += 1
                appended.setdefault(bin, []).append(encode_entry(chunk.address, slot, len(chunk.data)))
                leaves.setdefault(bin, []).append(chunk.address)
                indexed.append((chunk.address, IndexEntry(slot, len(chunk.data), cursors[bin])))
            grown = self._slots.grown(slots)
            batch = db.write_batch()  # the commit: every touched bin's cursor, the slot count
            for bin, entries in appended.items():
                self._pull_index.append(bin, self._cursors[bin] + 1, entries)
                batch.put(KEY_BIN_COUNTER + bytes((bin,)), cursors[bin].to_bytes(8, "big"))
            if grown != self._slots.count:
                batch.put(META_SLOTS, grown.to_bytes(8, "big"))
            batch.write()
        except BaseException:
            self._slots.give_back(slots)
            raise
        self._slots.count = grown
        for bin, entries in appended.items():
            self._slots.counts[bin] += len(entries)
        first_ids = {bin: self._cursors[bin] + 1 for bin in leaves}
        self._cursors[:] = cursors
        self._append_logs(leaves, first_ids)
        self._index_new(indexed)
        for bin in appended:
            self._waiters.notify(bin)
        return len(new)

    def _append_logs(self, leaves: dict[int, list[bytes]], first_ids: dict[int, int]) -> None:
        """Add committed chunks to their bins' logs; if that fails, have them rebuilt at next open
        (with the address index: the logs are rebuilt whenever it is)."""
        if self._logs is None:
            return
        try:
            for bin, addresses in leaves.items():
                self._logs.append(bin, first_ids[bin], addresses)
        except BaseException:
            self._index.mark_stale()
            raise

    def _index_new(self, entries: list[tuple[bytes, IndexEntry]]) -> None:
        """Add committed chunks to the address index; if that fails, have it rebuilt at next open."""
        try:
            self._index.add_many(entries)
        except BaseException:
            self._index.mark_stale()
            raise
