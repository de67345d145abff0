"""What a power cut leaves: torn tails of CHUNKS and PULL-nn, a lost CURRENT; the store recovers.

A power cut can keep the LevelDB batch that committed a put and lose the last writes of the chunk
file or of a pull-index file (the files and LevelDB's log reach the disk in no fixed order). Each
test makes a store, cuts bytes off the end of its files as such a cut would, and checks against a
model of where every chunk was (its slot, bin and bin ID) that the store opens, keeps every chunk
whose slot and pull-index entry survived, drops the others (they read as missing, to be synced
again), keeps its cursors, logs what it did, and is healthy from then on.
"""

from __future__ import annotations

import logging
import os
import random
from dataclasses import dataclass
from pathlib import Path

import plyvel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunks import Chunk
from localstore import ChunkNotFound
from localstore.addressindex import AddressIndex
from localstore.chunkfile import CHUNK_FILE_NAME, SLOT_SIZE
from localstore.pullindex import ENTRY_SIZE, pull_file_name
from localstore.store import LocalStore
from localstore.storefiles import BINS, KEY_BIN_COUNTER, META_SLOTS
from tests.test_localstore import OVERLAY, naive_bin, random_chunks


@dataclass(frozen=True)
class Placed:
    """Where the model says a chunk is: its slot in CHUNKS, its bin and bin ID."""

    chunk: Chunk
    slot: int
    bin: int
    bin_id: int


def fill(path: Path, chunks: list[Chunk]) -> list[Placed]:
    """Store distinct ``chunks`` (some with put_many, some with put) and model their places."""
    with LocalStore(path, OVERLAY) as store:
        store.put_many(chunks[: len(chunks) // 2])
        for chunk in chunks[len(chunks) // 2 :]:
            store.put(chunk)
    counts = [0] * BINS
    placed = []
    for slot, chunk in enumerate(chunks):
        bin = naive_bin(OVERLAY, chunk.address)
        counts[bin] += 1
        placed.append(Placed(chunk, slot, bin, counts[bin]))
    return placed


def cut(file: Path, count: int) -> int:
    """Cut ``count`` bytes off the end of ``file`` (a power cut's lost append); its new size."""
    size = max(0, file.stat().st_size - count)
    os.truncate(file, size)
    return size


def check_recovered(
    path: Path, placed: list[Placed], survivors: list[Placed], *, dropped_here: bool = True
) -> None:
    """Open the damaged store and compare it with the model; then reopen and store the lost again.

    ``dropped_here``: this open finds the damage (not an earlier one that failed half-way).
    """
    cursors = [sum(1 for p in placed if p.bin == bin) for bin in range(BINS)]
    lost = [p for p in placed if p not in survivors]
    with LocalStore(path, OVERLAY) as store:
        assert store.cursors() == cursors, "a bin keeps its cursor: its bin IDs are never reused"
        assert len(store) == len(survivors)
        assert len(lost) > 0
        if dropped_here:
            assert store.statistics().dropped >= len(lost)
        for p in survivors:
            assert store.get(p.chunk.address) == p.chunk
        for p in lost:
            assert not store.has(p.chunk.address)
            with pytest.raises(ChunkNotFound):
                store.get(p.chunk.address)
        for bin in range(BINS):
            expected = [(p.bin_id, p.chunk.address) for p in survivors if p.bin == bin]
            assert list(store.iter_bin(bin, 1)) == expected
    with LocalStore(path, OVERLAY) as store:
        assert store.statistics().dropped == 0, "recovered once, then a healthy store"
        assert len(store) == len(survivors)
        assert store.put_many([p.chunk for p in placed]) == len(lost), "the lost chunks, synced again"
        assert [store.get(p.chunk.address) for p in placed] == [p.chunk for p in placed]
        for bin in range(BINS):
            again = [p for p in lost if p.bin == bin]
            ids = [i for i, address in store.iter_bin(bin, cursors[bin] + 1)]
            assert ids == list(range(cursors[bin] + 1, cursors[bin] + 1 + len(again)))
    # the lost chunks' slots were free again (no entry names them): storing them again reused them
    assert (path / CHUNK_FILE_NAME).stat().st_size == len(placed) * SLOT_SIZE


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


# -- the chunk file --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "count", [1, 3, SLOT_SIZE - 1, SLOT_SIZE, SLOT_SIZE + 1, 2 * SLOT_SIZE + 5], ids=lambda n: f"cut{n}"
)
def test_a_torn_chunk_file_drops_the_chunks_it_lost(
    tmp_path: Path, count: int, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "s"
    placed = fill(path, random_chunks(30, seed=1))
    whole = cut(path / CHUNK_FILE_NAME, count) // SLOT_SIZE
    survivors = [p for p in placed if p.slot < whole]
    with caplog.at_level(logging.WARNING, logger="localstore"):
        check_recovered(path, placed, survivors)
    messages = warnings_of(caplog)
    lost = len(placed) - whole
    assert any(str(path) in m and f"{CHUNK_FILE_NAME} lost its last {lost} slot(s)" in m for m in messages), (
        messages
    )
    assert any(f"dropped {lost} chunk(s)" in m for m in messages), messages


def test_a_chunk_file_cut_to_nothing_drops_every_chunk(tmp_path: Path) -> None:
    path = tmp_path / "s"
    placed = fill(path, random_chunks(12, seed=2))
    os.truncate(path / CHUNK_FILE_NAME, 0)
    check_recovered(path, placed, [])


# -- the pull-index files --------------------------------------------------------------------------


@pytest.mark.parametrize("count", [1, 3, ENTRY_SIZE - 1, ENTRY_SIZE, ENTRY_SIZE + 3], ids=lambda n: f"cut{n}")
def test_a_torn_pull_file_leaves_holes_and_drops_what_they_named(
    tmp_path: Path, count: int, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "s"
    placed = fill(path, random_chunks(40, seed=3))
    bin = max(range(BINS), key=lambda b: sum(p.bin == b for p in placed))
    kept = cut(path / pull_file_name(bin), count) // ENTRY_SIZE
    survivors = [p for p in placed if p.bin != bin or p.bin_id <= kept]
    with caplog.at_level(logging.WARNING, logger="localstore"):
        check_recovered(path, placed, survivors)
    lost = sum(p.bin == bin for p in placed) - kept
    messages = warnings_of(caplog)
    assert any(
        str(path) in m and f"{pull_file_name(bin)} lost its last {lost} entries (bin {bin}," in m
        for m in messages
    ), messages


def test_a_lost_pull_file_leaves_its_bin_all_holes(tmp_path: Path) -> None:
    """A power cut soon after a bin's first chunk can lose the file that was just created."""
    path = tmp_path / "s"
    placed = fill(path, random_chunks(20, seed=4))
    bin = placed[0].bin
    (path / pull_file_name(bin)).unlink()
    check_recovered(path, placed, [p for p in placed if p.bin != bin])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    count=st.integers(2, 40),
    seed=st.integers(0, 2**16),
    chunk_cut=st.integers(0, 4 * SLOT_SIZE),
    pull_cuts=st.lists(st.tuples(st.integers(0, BINS - 1), st.integers(1, 4 * ENTRY_SIZE)), max_size=4),
)
def test_property_torn_tails_keep_exactly_the_surviving_chunks(
    tmp_path_factory: pytest.TempPathFactory,
    count: int,
    seed: int,
    chunk_cut: int,
    pull_cuts: list[tuple[int, int]],
) -> None:
    """Any cut of CHUNKS together with cuts of any pull files: the survivors are the chunks whose
    slot is whole and whose pull-index entry is whole."""
    path = tmp_path_factory.mktemp("torn") / "s"
    placed = fill(path, random_chunks(count, seed=seed, size=24))
    whole_slots = cut(path / CHUNK_FILE_NAME, chunk_cut) // SLOT_SIZE
    whole_entries = {}
    for bin, n in pull_cuts:
        if (path / pull_file_name(bin)).exists():
            whole_entries[bin] = cut(path / pull_file_name(bin), n) // ENTRY_SIZE
    survivors = [p for p in placed if p.slot < whole_slots and p.bin_id <= whole_entries.get(p.bin, p.bin_id)]
    if len(survivors) == len(placed):
        with LocalStore(path, OVERLAY) as store:  # nothing cut, or only uncommitted bytes
            assert len(store) == len(placed) and store.statistics().dropped == 0
        return
    check_recovered(path, placed, survivors)


# -- LevelDB and the files together ----------------------------------------------------------------


def test_lost_current_and_torn_tails_together(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The whole of a bad power cut: CURRENT gone, CHUNKS and a pull file torn."""
    path = tmp_path / "s"
    placed = fill(path, random_chunks(30, seed=5))
    with LocalStore(path, OVERLAY) as store:
        store.put_state(b"kept", b"state")
        epoch = store.epoch
    (path / "CURRENT").unlink()
    whole = cut(path / CHUNK_FILE_NAME, 3) // SLOT_SIZE
    bin = placed[0].bin
    kept = cut(path / pull_file_name(bin), 3) // ENTRY_SIZE
    survivors = [p for p in placed if p.slot < whole and (p.bin != bin or p.bin_id <= kept)]
    with caplog.at_level(logging.WARNING, logger="localstore"):
        check_recovered(path, placed, survivors)
    with LocalStore(path, OVERLAY) as store:
        assert store.epoch == epoch and store.get_state(b"kept") == b"state"
    messages = warnings_of(caplog)
    assert any("CURRENT file is missing; repairing the LevelDB" in m for m in messages), messages
    assert any(CHUNK_FILE_NAME in m for m in messages) and any(pull_file_name(bin) in m for m in messages)


def test_only_uncommitted_bytes_past_the_cursors_are_cut_silently(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """What a SIGKILL between the file writes and the LevelDB batch leaves is no damage."""
    path = tmp_path / "s"
    placed = fill(path, random_chunks(10, seed=6))
    with open(path / CHUNK_FILE_NAME, "ab") as file:
        file.write(random.Random(1).randbytes(SLOT_SIZE + 7))
    with open(path / pull_file_name(placed[0].bin), "ab") as file:
        file.write(random.Random(2).randbytes(ENTRY_SIZE + 3))
    with caplog.at_level(logging.WARNING, logger="localstore"), LocalStore(path, OVERLAY) as store:
        assert len(store) == 10 and store.statistics().dropped == 0
        assert [store.get(p.chunk.address) for p in placed] == [p.chunk for p in placed]
    assert warnings_of(caplog) == []


def test_a_clean_close_flushes_every_file_to_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """So a power cut after a clean close finds nothing torn."""
    path = tmp_path / "s"
    store = LocalStore(path, OVERLAY)
    store.put_many(random_chunks(40, seed=7))
    synced: list[str] = []
    fdatasync = os.fdatasync

    def recording(fd: int) -> None:
        synced.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        fdatasync(fd)

    monkeypatch.setattr(os, "fdatasync", recording)
    bins = {pull_file_name(b) for b, cursor in enumerate(store.cursors()) if cursor}
    store.close()
    assert CHUNK_FILE_NAME in synced and bins <= set(synced), synced
    assert synced.index(CHUNK_FILE_NAME) < synced.index("ADDRESSES"), "data before the clean mark"


def test_entries_naming_slots_past_the_slot_count_are_dropped(tmp_path: Path) -> None:
    """A LevelDB that lost one bin's last increment and the slot count's (what a lossy repair
    can give) leaves entries naming slots past the count, which the next put takes: those
    entries are dropped at open, not left to name another chunk's slot."""
    path = tmp_path / "s"
    placed = fill(path, random_chunks(30, seed=8))
    last = placed[-1]
    regressed = max((p for p in placed if p.bin != last.bin), key=lambda p: p.slot)
    db = plyvel.DB(str(path))
    db.put(KEY_BIN_COUNTER + bytes((regressed.bin,)), (regressed.bin_id - 1).to_bytes(8, "big"))
    db.put(META_SLOTS, regressed.slot.to_bytes(8, "big"))
    db.close()
    with LocalStore(path, OVERLAY) as store:
        assert len(store) == len(placed) - 2
        assert not store.has(last.chunk.address) and not store.has(regressed.chunk.address)
        assert store.put(last.chunk) and store.put(regressed.chunk)
        assert [store.get(p.chunk.address) for p in placed] == [p.chunk for p in placed]


def test_an_entry_past_a_regressed_cursor_frees_its_slot(tmp_path: Path) -> None:
    """A bin cursor that lost its last increment while the slot count kept it: the entry past
    the cursor is cut off, its slot is free, and the next put takes it without harm."""
    path = tmp_path / "s"
    placed = fill(path, random_chunks(30, seed=8))
    regressed = max((p for p in placed if p.bin != placed[-1].bin), key=lambda p: p.slot)
    db = plyvel.DB(str(path))
    db.put(KEY_BIN_COUNTER + bytes((regressed.bin,)), (regressed.bin_id - 1).to_bytes(8, "big"))
    db.close()
    with LocalStore(path, OVERLAY) as store:
        assert len(store) == len(placed) - 1
        assert store.statistics().free_slots == 1
        assert store.put(regressed.chunk)
        assert store.statistics().free_slots == 0
        assert [store.get(p.chunk.address) for p in placed] == [p.chunk for p in placed]
    assert (path / CHUNK_FILE_NAME).stat().st_size == len(placed) * SLOT_SIZE


def test_an_open_that_fails_while_recovering_leaves_no_index_to_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second power cut, or an I/O error, after the files are repaired but before the index is
    rebuilt: the next open must not use the address index of before (closed cleanly, and of the
    right size), which still names the chunks whose pull entries were lost."""
    path = tmp_path / "s"
    placed = fill(path, random_chunks(30, seed=9))
    bin = placed[0].bin
    kept = cut(path / pull_file_name(bin), 3) // ENTRY_SIZE

    def failing(*args: object) -> AddressIndex:
        raise OSError(5, "Input/output error")

    with monkeypatch.context() as patched:
        patched.setattr(AddressIndex, "build", failing)
        with pytest.raises(OSError):
            LocalStore(path, OVERLAY)
    assert (path / pull_file_name(bin)).stat().st_size % ENTRY_SIZE == 0, "the pull file was repaired"
    check_recovered(path, placed, [p for p in placed if p.bin != bin or p.bin_id <= kept], dropped_here=False)
