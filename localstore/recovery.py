"""Recovery at open: what a crash or a power cut left in a store's files, made consistent again.

A crash (SIGKILL) can only leave writes that were never committed: slots and pull-index entries
past what the bins' cursors in LevelDB cover, which ChunkFile and PullIndex cut off. A power cut
can also do the opposite, because the files and LevelDB's log reach the disk in no fixed order:
keep the LevelDB batch that committed a put and lose the files' last writes (a torn tail, or a
pull file created just before). ChunkFile and PullIndex report what their files lost; this
module logs it at WARNING, naming each file and how many records, removes the address index
(until it is rebuilt it may name what was lost, even if this open fails half-way), has the files
repaired (lost slots read as zeros, lost pull-index entries become holes), and drops the chunks
whose data is gone while it rebuilds the address index from the pull index. A dropped chunk
reads as missing, so it is fetched from the network when asked for and synced again from peers
that offer it (what was dropped is recorded, localstore/lost.py, so that the node resets the
synced intervals that covered it); its bin keeps its cursor, because peers keep intervals over
the bin IDs this store gave out.

Damage that is not at a tail (a slot whose write was lost in the middle, bit rot) is found when
the chunk is read: its address or checksum does not match (localstore/chunkfile.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator, Sequence

from localstore.addressindex import INDEX_FILE_NAME, AddressIndex, IndexEntry
from localstore.chunkfile import CHUNK_FILE_NAME, ChunkFile
from localstore.pullindex import PullIndex, pull_file_name
from localstore.slots import SlotMap

__all__ = ["rebuild_index", "repair_torn_files", "scan_slots"]

log = logging.getLogger(__name__)


def repair_torn_files(path: str, chunk_file: ChunkFile, pull_index: PullIndex) -> bool:
    """Log what the files lost at their tails (one WARNING per file) and repair them; True if any
    lost anything (then the address index is gone and must be rebuilt)."""
    if chunk_file.lost:
        lost = chunk_file.lost
        torn = f", cutting {chunk_file.torn} bytes of a torn slot" if chunk_file.torn else ""
        log.warning(
            "store %s: %s lost its last %d slot(s) (%d-%d) to a power cut%s; "
            "their chunks are dropped, to be synced again",
            path,
            CHUNK_FILE_NAME,
            len(lost),
            lost.start,
            lost.stop - 1,
            torn,
        )
    for bin, ids in sorted(pull_index.lost.items()):
        torn_bytes = pull_index.torn.get(bin, 0)
        torn = f", cutting {torn_bytes} bytes of a torn entry" if torn_bytes else ""
        log.warning(
            "store %s: %s lost its last %d entries (bin %d, bin IDs %d-%d) to a power cut%s; "
            "they are holes now, their chunks dropped, to be synced again",
            path,
            pull_file_name(bin),
            len(ids),
            bin,
            ids.start,
            ids.stop - 1,
            torn,
        )
    if not (chunk_file.lost or pull_index.lost):
        return False
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(path, INDEX_FILE_NAME))
    _sync_directory(path)  # the index is gone (and a lost pull file is back) before files change
    chunk_file.repair_lost()
    pull_index.repair_lost()
    return True


def rebuild_index(
    path: str, pull_index: PullIndex, cursors: Sequence[int], first_lost_slot: int, slot_count: int
) -> tuple[AddressIndex, list[tuple[int, bytes]], SlotMap]:
    """Build the address index from the pull index; return it, the chunks dropped (bin and
    address), and the slot map (free slots, chunks per bin) derived on the way.

    Entries naming a slot at or past ``first_lost_slot`` (the chunk file lost their data, or
    the slot was never given out) become holes instead of index entries.
    """
    started = time.perf_counter()
    dropped: list[tuple[int, bytes]] = []
    taken: list[tuple[int, int]] = []
    index = AddressIndex.build(path, _kept_entries(pull_index, cursors, first_lost_slot, dropped, taken))
    if dropped:
        log.warning(
            "store %s: dropped %d chunk(s) whose data %s lost; they read as missing and are synced again",
            path,
            len(dropped),
            CHUNK_FILE_NAME,
        )
        pull_index.sync()
    if len(index) or dropped:  # a new store's empty index is simply created: nothing to say
        log.info(
            "store %s: rebuilt the address index of %d chunks in %.2f s (the store was not closed "
            "cleanly, or lost writes)",
            path,
            len(index),
            time.perf_counter() - started,
        )
    return index, dropped, SlotMap.derive(slot_count, len(cursors), taken)


def scan_slots(pull_index: PullIndex, cursors: Sequence[int], slot_count: int) -> SlotMap:
    """The slot map derived from the pull index alone (its summary was not kept)."""
    taken = (
        (bin, entry.slot) for bin, cursor in enumerate(cursors) for entry in pull_index.read(bin, 1, cursor)
    )
    return SlotMap.derive(slot_count, len(cursors), taken)


def _kept_entries(
    pull_index: PullIndex,
    cursors: Sequence[int],
    first_lost_slot: int,
    dropped: list[tuple[int, bytes]],
    taken: list[tuple[int, int]],
) -> Iterator[tuple[bytes, IndexEntry]]:
    for bin, cursor in enumerate(cursors):
        for entry in pull_index.read(bin, 1, cursor):
            if entry.slot >= first_lost_slot:
                # read() has already read this entry's block: punching it does not disturb it.
                pull_index.punch(bin, entry.bin_id)
                dropped.append((bin, entry.address))
                continue
            taken.append((bin, entry.slot))
            yield entry.address, IndexEntry(entry.slot, entry.length, entry.bin_id)


def _sync_directory(path: str) -> None:
    """Make the directory's changes (a file removed or created) survive the next power cut."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
