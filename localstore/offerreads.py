"""The store's reads for an upstream: what it can offer of a range, and the offered chunks.

A base of LocalStore (localstore/store.py). An upstream checks every chunk's slot before it
offers it, so that a damaged chunk is not offered and then found undeliverable: `check_slot`
for one address; `offerable` for a range of a bin, from the pull index, whose entries name each
chunk's slot (the same slot the address index names: an entry leaves both at once), so no
address-index lookup is needed, and a run of chunks in consecutive slots (what one `put_many`
stored into one bin) is read at once. `get_at` then reads an offered chunk from the slot its
offer found it in. Figures: docs/performance.md, "The reverse stream".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import plyvel

from chunks.chunk import Chunk
from localstore.addressindex import AddressIndex, IndexEntry
from localstore.chunkfile import ChunkFile
from localstore.errors import ChunkDamaged
from localstore.pullindex import HOLE_SLOT, PullIndex
from localstore.storefiles import MAX_BIN

__all__ = ["OfferReads", "Offerable"]


class Offerable(NamedTuple):
    """What `OfferReads.offerable` found of a range of a bin."""

    entries: list[tuple[bytes, bool]]  # (address, hole) of each bin ID
    damaged: list[ChunkDamaged]  # the chunks found damaged (and dropped): holes now
    slots: dict[bytes, tuple[int, int]]  # address -> (slot, length) of each chunk not a hole


class OfferReads:
    """check_slot, offerable and get_at over the store's open files (set up by LocalStore)."""

    _chunk_file: ChunkFile
    _pull_index: PullIndex
    _index: AddressIndex
    _cursors: list[int]

    def _live(self) -> plyvel.DB:
        raise NotImplementedError

    def _entry_of(self, address: bytes) -> IndexEntry:
        raise NotImplementedError

    def _forget(self, address: bytes, bin_id: int) -> None:
        raise NotImplementedError

    def get(self, address: bytes) -> Chunk:
        raise NotImplementedError

    def check_slot(self, address: bytes) -> None:
        """Raise ChunkNotFound or ChunkDamaged (dropping the chunk) unless get would succeed.

        It reads the whole slot (a 4 KiB pread and an XXH3 hash, about 1 us more than the
        address alone: docs/performance.md) but builds no Chunk.
        """
        entry = self._entry_of(address)
        try:
            self._chunk_file.read(entry.slot, entry.length, address)
        except ChunkDamaged:
            self._forget(address, entry.bin_id)
            raise

    def offerable(self, bin: int, start: int, end: int, passed: Iterable[tuple[int, int]] = ()) -> Offerable:
        """What an upstream can offer of bin IDs ``start..end`` (``end`` at most the cursor):
        ``(address, hole)`` of each, as the bin's pull index (and log) has it, ``hole`` also set
        for a chunk whose slot fails the checks of `check_slot`, which is dropped as it drops it
        (the errors are returned, to be logged), and where each offerable chunk is, for
        `get_at`. The address index's recent answers learn where each chunk is: a downstream
        that synced one offers it back soon, and this store then looks it up (`has`).

        ``passed``: ranges of bin IDs within ``start..end`` the caller will not offer (chunks
        the downstream gave us: syncer/given.py); they are holes, their slots not read."""
        if not 0 <= bin <= MAX_BIN:
            raise ValueError(f"bin {bin} is outside 0..{MAX_BIN}")
        self._live()
        if end > self._cursors[bin]:
            raise ValueError(f"bin {bin} has {self._cursors[bin]} bin IDs, not {end}")
        located = self._pull_index.located(bin, start, end)
        found = Offerable([(address, slot == HOLE_SLOT) for address, slot, _ in located], [], {})
        skip = bytearray(len(located))
        for first, last in passed:
            if not start <= first <= last <= end:
                raise ValueError(f"passed range {first}..{last} is not within {start}..{end}")
            for k in range(first - start, last - start + 1):
                skip[k] = 1
                found.entries[k] = (located[k][0], True)
        i, count = 0, len(located)
        while i < count:
            slot = located[i][1]
            if slot == HOLE_SLOT or skip[i]:
                i += 1
                continue
            j = i + 1  # the run of chunks in consecutive slots from slot on is i..j-1
            while j < count and located[j][1] == slot + j - i and not skip[j]:
                j += 1
            for k, problem in enumerate(self._check_run(located[i:j]), i):
                address, slot_k, length = located[k]
                if problem is not None:
                    self._forget(address, start + k)
                    found.damaged.append(problem)
                    found.entries[k] = (address, True)
                else:
                    found.slots[address] = (slot_k, length)
                    self._index.found(address, IndexEntry(slot_k, length, start + k))
            i = j
        return found

    def _check_run(self, run: list[tuple[bytes, int, int]]) -> list[ChunkDamaged | None]:
        """Each chunk ``(address, slot, length)`` of a run in consecutive slots: None if intact."""
        if len(run) > 1:
            return self._chunk_file.check_run(run[0][1], [(address, length) for address, _, length in run])
        address, slot, length = run[0]  # alone: the common case when bins interleave in the slots
        try:
            self._chunk_file.read(slot, length, address)
        except ChunkDamaged as exc:
            return [exc]
        return [None]

    def get_at(self, address: bytes, slot: int, length: int) -> Chunk:
        """`get`, for a chunk `offerable` found at ``slot``: read from there, with no address-index
        lookup, while the slot holds it intact (its address, and its checksum over the data: the
        data is the chunk's, even if it was removed since and the slot not written again);
        otherwise `get` decides (the slot was reused, or the chunk is damaged: then dropped)."""
        self._live()
        try:
            return Chunk(address, self._chunk_file.read(slot, length, address))
        except ChunkDamaged:
            return self.get(address)
