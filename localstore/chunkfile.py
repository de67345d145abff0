"""ChunkFile: chunk data in fixed-size slots of one file, read and written with pread/pwrite.

Why not in LevelDB: LevelDB rewrites every value at each level it compacts into, and version
1.22 (as bundled with plyvel) reads its tables through ``mmap``, so the pages a compaction
touched count in the node's resident memory until the table is deleted. With 4 KiB payloads in
the tables a store of 200,000 chunks drove peak RSS to 2.5x that of 20,000 (docs/performance.md).
Here every chunk is written once, at its slot, and read with ``pread``: the kernel's page cache
holds the file, not the process. Where each chunk is, is recorded by the pull index
(localstore/pullindex.py) and the address index (localstore/addressindex.py).

Slot ``n`` starts at byte ``n * SLOT_SIZE`` and holds ``address (32) || checksum (8) || data``,
zero-padded to the slot size; ``data`` is up to ``SLOT_DATA_SIZE`` bytes (a single-owner chunk's
``id || signature || span || payload``; a content chunk's ``span || payload`` is at most 4104).
Its length is kept by the indexes. ``checksum`` is the 64-bit XXH3 hash of ``address || data``,
big-endian. Every read checks both: the address proves the slot holds the right chunk (a write
that never reached the disk, or one overwritten), the checksum that its bytes are the ones
written (bit rot, a torn write). Either failing raises ChunkDamaged, and the store drops the
chunk instead of serving it.

Why XXH3 (the ``xxhash`` package) and not the BMT or a hash from the standard library: checking
a 4 KiB chunk's BMT address costs 127 Keccak calls, 110-340 us; over 128 distinct chunks (as a
batch of reads or writes touches them) XXH3-64 costs about 0.2 us a chunk, ``zlib.crc32`` about
1.3 us, BLAKE2b-8 about 8 us (``python -m benches.localstore`` prints them; docs/performance.md).
A get is 8-9 us, so the BMT would make it about 25 times dearer, CRC-32 about 15 % dearer, XXH3
a few per cent. The disk is not an adversary, so a fast non-cryptographic hash suffices: 64 bits miss
random damage with probability 2**-64. Chunks from peers are still BMT-verified before they are
stored.

The slot of a chunk the reserve evicts (or a damaged one the store drops) is free again, and
the next put takes the lowest free slot before the file grows (localstore/slots.py); the file's
length in slots is committed with the bins' cursors. Slots are written *before* the LevelDB batch
that commits them, so a crash in between leaves only uncommitted bytes: past the last committed
slot, which ``open`` cuts off, or in a free slot, which no pull-index entry names. A power cut can
do the opposite, keep the batch and lose the file's last writes: ``open`` then reports the slots
lost (``lost``), whose chunks the store drops, and the file is cut to its last whole slot and
extended back with zeros. A reused slot whose new write was lost still holds the old chunk's
address, which matches no entry naming the slot now: reading it finds the damage.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import xxhash

from chunks.chunk import ADDRESS_SIZE, MAX_DATA_SIZE, Chunk
from localstore.errors import MOVE_AWAY, ChunkDamaged, StoreCorrupt

__all__ = [
    "CHECKSUM_SIZE",
    "CHUNK_FILE_NAME",
    "SLOT_DATA_SIZE",
    "SLOT_HEADER_SIZE",
    "SLOT_SIZE",
    "ChunkFile",
    "checksum",
]

CHUNK_FILE_NAME = "CHUNKS"
SLOT_DATA_SIZE = MAX_DATA_SIZE
"""Most data a slot holds, 4201 bytes: a single-owner chunk, id (32) || signature (65) || span (8)
|| payload (4096)."""
CHECKSUM_SIZE = 8
SLOT_HEADER_SIZE = ADDRESS_SIZE + CHECKSUM_SIZE
"""Address and checksum, before the data."""
SLOT_SIZE = SLOT_HEADER_SIZE + SLOT_DATA_SIZE
_HEADER = SLOT_HEADER_SIZE


def checksum(address: bytes, data: bytes) -> bytes:
    """The checksum a slot keeps for ``address || data``: XXH3-64, big-endian.

    (Hashing the concatenation in one call is cheaper than feeding a hasher object twice.)
    """
    return xxhash.xxh3_64_digest(address + data)


class ChunkFile:
    """The slot file of one store directory. Not thread-safe; the store serialises access."""

    def __init__(self, directory: str, indexed: int) -> None:
        """Open the slot file of a store that indexes ``indexed`` chunks (slots ``0..indexed-1``).

        The file is created if the store has no chunks yet. Bytes past the last indexed slot were
        written by a put that never committed; they are cut off. A file shorter than the index
        needs lost its last writes (a power cut): ``lost`` names the slots whose data is gone
        (``torn`` is how many bytes of a partial slot are there), and ``repair_lost`` restores the
        file's size. A missing file cannot be recovered (every chunk would be lost).
        """
        self.path = os.path.join(directory, CHUNK_FILE_NAME)
        self._directory = directory
        self.lost = range(indexed, indexed)
        self.torn = 0
        flags = os.O_RDWR | (os.O_CREAT if indexed == 0 else 0)
        try:
            self._fd = os.open(self.path, flags, 0o644)
        except FileNotFoundError:
            raise StoreCorrupt(
                directory,
                f"the chunk data file {CHUNK_FILE_NAME} is missing though the index names "
                f"{indexed} chunks; {MOVE_AWAY}",
            ) from None
        try:
            self._fit(indexed)
        except BaseException:
            os.close(self._fd)
            raise

    def _fit(self, indexed: int) -> None:
        size = os.fstat(self._fd).st_size
        needed = indexed * SLOT_SIZE
        if size > needed:
            os.ftruncate(self._fd, needed)
        elif size < needed:
            whole = size // SLOT_SIZE
            self.lost = range(whole, indexed)
            self.torn = size - whole * SLOT_SIZE

    def repair_lost(self) -> None:
        """Give the lost slots back their place in the file, as zeros (which match no address).

        Called once the store no longer trusts an index that may name them (recovery.py).
        """
        if self.lost:
            os.ftruncate(self._fd, self.lost.start * SLOT_SIZE)  # zero what is left of a torn slot
            os.ftruncate(self._fd, self.lost.stop * SLOT_SIZE)
            os.fdatasync(self._fd)

    def close(self) -> None:
        """Close the file. Idempotent."""
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def sync(self) -> None:
        """Flush what was written to the disk (at a clean close, so a power cut after it loses nothing)."""
        os.fdatasync(self._fd)

    def write(self, slots: Sequence[int], chunks: Sequence[Chunk]) -> None:
        """Write ``chunks[i]`` into slot ``slots[i]``, one pwrite per run of consecutive slots.

        Raises ValueError, writing nothing, if a chunk's data does not fit a slot.
        """
        if len(slots) != len(chunks):
            raise ValueError(f"{len(slots)} slots for {len(chunks)} chunks")
        records = []
        for chunk in chunks:
            address, data = chunk.address, chunk.data
            if len(data) > SLOT_DATA_SIZE:
                raise ValueError(
                    f"chunk {address.hex()} has {len(data)} bytes of data; a slot holds {SLOT_DATA_SIZE}"
                )
            records.append(address + checksum(address, data) + data + bytes(SLOT_DATA_SIZE - len(data)))
        run_start = 0
        for i in range(1, len(slots) + 1):
            if i == len(slots) or slots[i] != slots[i - 1] + 1:
                self._write_run(slots[run_start], records[run_start:i])
                run_start = i

    def _write_run(self, first_slot: int, records: list[bytes]) -> None:
        buffer = memoryview(b"".join(records))
        offset = first_slot * SLOT_SIZE
        while buffer:
            written = os.pwrite(self._fd, buffer, offset)
            buffer, offset = buffer[written:], offset + written

    def check_run(self, first_slot: int, chunks: Sequence[tuple[bytes, int]]) -> list[ChunkDamaged | None]:
        """Check the chunks ``(address, length)`` kept in consecutive slots from ``first_slot`` on,
        as `read` checks each (the address, the checksum), with one ``pread`` of the run: ``None``
        for each intact one, the `ChunkDamaged` `read` would raise for a damaged one. About half
        the cost of a read each (docs/performance.md): chunks stored by one ``put_many`` into one
        bin are in consecutive slots, and an upstream offers them together."""
        raw = os.pread(self._fd, len(chunks) * SLOT_SIZE, first_slot * SLOT_SIZE)
        found: list[ChunkDamaged | None] = []
        for i, (address, length) in enumerate(chunks):
            at = i * SLOT_SIZE
            data = self._checked(raw[at : at + _HEADER + length], first_slot + i, length, address)
            found.append(data if isinstance(data, ChunkDamaged) else None)
        return found

    def read(self, slot: int, length: int, address: bytes) -> bytes:
        """The data (``length`` bytes) of the chunk ``address`` kept at ``slot``.

        Raises ChunkDamaged unless the slot starts with ``address`` and its checksum matches.
        """
        data = self._checked(os.pread(self._fd, _HEADER + length, slot * SLOT_SIZE), slot, length, address)
        if isinstance(data, ChunkDamaged):
            raise data
        return data

    def _checked(self, record: bytes, slot: int, length: int, address: bytes) -> bytes | ChunkDamaged:
        """The data of the slot ``record`` read for ``address``, or what is wrong with it: another
        address (or too few bytes), or data that does not match the slot's checksum."""
        found = record[:ADDRESS_SIZE]
        if found != address or len(record) != _HEADER + length:
            return ChunkDamaged(self._directory, address, slot, f"holds {found.hex() or 'nothing'}")
        data = record[_HEADER:]
        if checksum(address, data) != record[ADDRESS_SIZE:_HEADER]:
            problem = "its data does not match its checksum (bit rot or a torn write)"
            return ChunkDamaged(self._directory, address, slot, problem)
        return data
