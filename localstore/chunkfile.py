"""ChunkFile: chunk data in fixed-size slots of one file, read and written with pread/pwrite.

Why not in LevelDB: LevelDB rewrites every value at each level it compacts into, and version
1.22 (as bundled with plyvel) reads its tables through ``mmap``, so the pages a compaction
touched count in the node's resident memory until the table is deleted. With 4 KiB payloads in
the tables a store of 200,000 chunks drove peak RSS to 2.5x that of 20,000 (docs/performance.md).
Here every chunk is written once, at its slot, and read with ``pread``: the kernel's page cache
holds the file, not the process. Where each chunk is, is recorded by the pull index
(localstore/pullindex.py) and the address index (localstore/addressindex.py).

Slot ``n`` starts at byte ``n * SLOT_SIZE`` and holds ``address (32) || span (8) || payload``,
zero-padded to the slot size. The address in the slot lets a read prove it found the right
chunk: a slot whose write never reached the disk (a power cut, not a killed process) or that was
overwritten reads back as another address, and raises ChunkDamaged instead of being served.

Chunks are never deleted, so slots are handed out in order and the next free slot is the
number of bin IDs the store has given out: no free list, nothing else to persist (a damaged
chunk that is dropped keeps its slot). Slots are written *before* the LevelDB
batch that commits them (it raises the bins' cursors), so a crash in between leaves only
uncommitted bytes past the last committed slot, which ``open`` cuts off.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from localstore.chunk import ADDRESS_SIZE, CHUNK_SIZE, SPAN_SIZE, Chunk
from localstore.errors import ChunkDamaged, StoreCorrupt

__all__ = ["CHUNK_FILE_NAME", "SLOT_SIZE", "ChunkFile"]

CHUNK_FILE_NAME = "CHUNKS"
SLOT_SIZE = ADDRESS_SIZE + SPAN_SIZE + CHUNK_SIZE


class ChunkFile:
    """The slot file of one store directory. Not thread-safe; the store serialises access."""

    def __init__(self, directory: str, indexed: int) -> None:
        """Open the slot file of a store that indexes ``indexed`` chunks (slots ``0..indexed-1``).

        The file is created if the store has no chunks yet. Bytes past the last indexed slot were
        written by a put that never committed; they are cut off. A missing file, or one shorter
        than the index needs, is corruption.
        """
        self.path = os.path.join(directory, CHUNK_FILE_NAME)
        self._directory = directory
        flags = os.O_RDWR | (os.O_CREAT if indexed == 0 else 0)
        try:
            self._fd = os.open(self.path, flags, 0o644)
        except FileNotFoundError:
            raise StoreCorrupt(directory, f"the chunk data file {CHUNK_FILE_NAME} is missing") from None
        try:
            size = os.fstat(self._fd).st_size
            needed = indexed * SLOT_SIZE
            if size < needed:
                raise StoreCorrupt(
                    directory,
                    f"{CHUNK_FILE_NAME} holds {size // SLOT_SIZE} whole slots "
                    f"but the index names {indexed} chunks",
                )
            if size > needed:
                os.ftruncate(self._fd, needed)
        except BaseException:
            os.close(self._fd)
            raise

    def close(self) -> None:
        """Close the file. Idempotent."""
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def write(self, first_slot: int, chunks: Sequence[Chunk]) -> None:
        """Write ``chunks`` into the consecutive slots starting at ``first_slot``, in one call."""
        if not chunks:
            return
        records = []
        for chunk in chunks:
            records.append(chunk.address)
            records.append(chunk.data)
            padding = SLOT_SIZE - ADDRESS_SIZE - len(chunk.data)
            if padding:
                records.append(bytes(padding))
        buffer = memoryview(b"".join(records))
        offset = first_slot * SLOT_SIZE
        while buffer:
            written = os.pwrite(self._fd, buffer, offset)
            buffer, offset = buffer[written:], offset + written

    def check(self, slot: int, address: bytes) -> None:
        """Raise ChunkDamaged unless ``slot`` starts with ``address``."""
        found = os.pread(self._fd, ADDRESS_SIZE, slot * SLOT_SIZE)
        if found != address:
            raise ChunkDamaged(self._directory, address, slot, found)

    def read(self, slot: int, length: int, address: bytes) -> bytes:
        """The data (span || payload, ``length`` bytes) of the chunk ``address`` kept at ``slot``."""
        record = os.pread(self._fd, ADDRESS_SIZE + length, slot * SLOT_SIZE)
        if record[:ADDRESS_SIZE] != address or len(record) != ADDRESS_SIZE + length:
            raise ChunkDamaged(self._directory, address, slot, record[:ADDRESS_SIZE])
        return record[ADDRESS_SIZE:]
