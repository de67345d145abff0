"""LocalStore: chunks, pull index, epoch, state, locking, refusal of foreign data, crash safety."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import plyvel
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunks import Chunk, InvalidChunk, bmt_address
from localstore import (
    ChunkNotFound,
    OverlayMismatch,
    StoreClosed,
    StoreCorrupt,
    StoreError,
    StoreLocked,
    StoreStatistics,
    UnsupportedStoreVersion,
)
from localstore.chunkfile import CHUNK_FILE_NAME, SLOT_HEADER_SIZE, SLOT_SIZE, checksum
from localstore.directory import FORMAT_VERSION, MARKER_NAME
from localstore.pullindex import ENTRY_SIZE, HOLE_SLOT, pull_file_name
from localstore.store import LocalStore
from localstore.storefiles import BINS, KEY_BIN_COUNTER, META_VERSION

# -- helpers ---------------------------------------------------------------------------------------


def naive_po(a: bytes, b: bytes) -> int:
    """Leading common bits, bit by bit from the most significant bit of byte 0."""
    bits_a = "".join(f"{byte:08b}" for byte in a)
    bits_b = "".join(f"{byte:08b}" for byte in b)
    po = 0
    while po < len(bits_a) and bits_a[po] == bits_b[po]:
        po += 1
    return po


def naive_bin(overlay: bytes, address: bytes) -> int:
    return min(naive_po(overlay, address), 31)


def flip_bit(address: bytes, bit: int) -> bytes:
    """``address`` with bit ``bit`` (0 = most significant of byte 0) inverted: PO exactly ``bit``."""
    out = bytearray(address)
    out[bit // 8] ^= 0x80 >> (bit % 8)
    return bytes(out)


def random_chunks(count: int, seed: int, size: int = 64) -> list[Chunk]:
    rng = random.Random(seed)
    return [Chunk.from_payload(rng.randbytes(size)) for _ in range(count)]


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` with its bytes."""
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def run_python(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout
    )


OVERLAY = bytes.fromhex("a5" * 32)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def store(store_path: Path) -> Iterator[LocalStore]:
    with LocalStore(store_path, OVERLAY) as opened:
        yield opened


# -- chunks ----------------------------------------------------------------------------------------


def test_put_get_has_len(store: LocalStore) -> None:
    chunks = random_chunks(20, seed=1)
    assert len(store) == 0
    for count, chunk in enumerate(chunks, start=1):
        assert not store.has(chunk.address)
        assert store.put(chunk) is True
        assert store.has(chunk.address)
        assert chunk.address in store
        assert len(store) == count
    for chunk in chunks:
        got = store.get(chunk.address)
        assert got == chunk
        got.verify()


def test_get_missing_raises_chunk_not_found_with_hex(store: LocalStore) -> None:
    address = bytes(range(32))
    with pytest.raises(ChunkNotFound) as info:
        store.get(address)
    assert isinstance(info.value, KeyError)
    assert address.hex() in str(info.value)
    assert info.value.address == address


def test_duplicate_put_returns_false_and_counter_stays(store: LocalStore) -> None:
    chunk = Chunk.from_payload(b"once")
    assert store.put(chunk) is True
    cursors = store.cursors()
    assert store.put(chunk) is False
    assert store.put(Chunk(chunk.address, chunk.data)) is False
    assert store.cursors() == cursors
    assert len(store) == 1
    assert list(store.iter_bin(store.bin_of(chunk.address), 0)) == [(1, chunk.address)]


@pytest.mark.parametrize(
    "bad",
    [
        Chunk(Chunk.from_payload(b"real").address, (4).to_bytes(8, "little") + b"fake"),
        Chunk(bytes(32), b"short"),
        Chunk(bytes(32), (4097).to_bytes(8, "little") + bytes(4097)),
    ],
    ids=["mismatch", "short", "oversized"],
)
def test_put_invalid_chunk_raises_and_stores_nothing(store_path: Path, bad: Chunk) -> None:
    with LocalStore(store_path, OVERLAY) as store:
        with pytest.raises(InvalidChunk):
            store.put(bad)
        assert not store.has(bad.address)
        assert len(store) == 0
        assert store.cursors() == [0] * BINS
    with LocalStore(store_path, OVERLAY) as store:
        assert not store.has(bad.address)
        assert store.cursors() == [0] * BINS
        assert all(list(store.iter_bin(b, 0)) == [] for b in range(BINS))


def test_put_many_counts_new_chunks_once(store: LocalStore) -> None:
    old, new = random_chunks(3, seed=2), random_chunks(5, seed=3)
    assert store.put_many(old) == 3
    assert store.put_many([*old, *new, new[0], new[1], old[2]]) == 5
    assert len(store) == 8
    assert sum(store.cursors()) == 8
    for chunk in old + new:
        assert store.get(chunk.address) == chunk
    assert store.put_many([]) == 0
    assert store.put_many(old) == 0
    assert len(store) == 8


def test_put_many_with_one_invalid_stores_nothing(store: LocalStore) -> None:
    good = random_chunks(5, seed=4)
    bad = Chunk(good[0].address, good[1].data)
    with pytest.raises(InvalidChunk):
        store.put_many([*good, bad])
    assert len(store) == 0
    assert not any(store.has(chunk.address) for chunk in good)
    assert store.cursors() == [0] * BINS


def test_put_many_accepts_a_generator(store: LocalStore) -> None:
    chunks = random_chunks(4, seed=5)
    assert store.put_many(chunk for chunk in chunks) == 4
    assert all(store.has(chunk.address) for chunk in chunks)


# -- pull index ------------------------------------------------------------------------------------


@pytest.mark.parametrize("po", [0, 1, 7, 8, 9, 30, 31, 32, 100, 255, 256])
def test_bin_of_crafted_overlay(tmp_path: Path, po: int) -> None:
    chunk = Chunk.from_payload(b"target")
    overlay = chunk.address if po == 256 else flip_bit(chunk.address, po)
    expected = min(po, 31)
    with LocalStore(tmp_path / "s", overlay) as store:
        assert store.bin_of(chunk.address) == expected
        assert store.put(chunk)
        assert store.cursor(expected) == 1
        assert [b for b in range(BINS) if store.cursor(b)] == [expected]
        assert list(store.iter_bin(expected, 1)) == [(1, chunk.address)]


def test_pull_index_order_bins_and_ranges(store: LocalStore) -> None:
    chunks = random_chunks(300, seed=6)
    model: dict[int, list[bytes]] = {b: [] for b in range(BINS)}
    for i, chunk in enumerate(chunks):
        if i % 3:
            store.put(chunk)
        else:
            store.put_many([chunk])
        model[naive_bin(OVERLAY, chunk.address)].append(chunk.address)
    assert store.cursors() == [len(model[b]) for b in range(BINS)]
    for b in range(BINS):
        entries = list(store.iter_bin(b, 1))
        assert entries == list(enumerate(model[b], start=1))
        assert list(store.iter_bin(b, 0)) == entries
        for address in model[b]:
            assert store.bin_of(address) == b
    busiest = max(range(BINS), key=lambda b: len(model[b]))
    addresses = model[busiest]
    assert len(addresses) > 10
    assert list(store.iter_bin(busiest, 3, 7)) == [(i, addresses[i - 1]) for i in range(3, 8)]
    assert list(store.iter_bin(busiest, 5, 5)) == [(5, addresses[4])]
    assert list(store.iter_bin(busiest, 6, 5)) == []
    assert list(store.iter_bin(busiest, len(addresses), 10**6)) == [(len(addresses), addresses[-1])]
    assert list(store.iter_bin(busiest, len(addresses) + 1)) == []
    assert list(store.iter_bin(busiest, 2**64)) == []
    # A neighbouring bin's entries never leak into a range.
    assert {a for _, a in store.iter_bin(busiest, 1)} == set(addresses)


def test_iter_bin_is_a_snapshot(store: LocalStore) -> None:
    first, later = chunk_in_bin(OVERLAY, 0, 1), chunk_in_bin(OVERLAY, 0, 2)
    store.put(first)
    entries = store.iter_bin(0, 1)
    store.put(later)
    assert list(entries) == [(1, first.address)]
    assert list(store.iter_bin(0, 1)) == [(1, first.address), (2, later.address)]


def test_bin_arguments_are_checked(store: LocalStore) -> None:
    for bad in (-1, 32):
        with pytest.raises(ValueError):
            store.cursor(bad)
        with pytest.raises(ValueError):
            store.iter_bin(bad, 1)
    with pytest.raises(ValueError):
        store.bin_of(bytes(31))


def test_cursors_and_everything_persist_across_reopen(store_path: Path) -> None:
    chunks = random_chunks(50, seed=7)
    with LocalStore(store_path, OVERLAY) as store:
        store.put_many(chunks[:30])
        for chunk in chunks[30:]:
            store.put(chunk)
        store.put_state(b"intervals/peer", b"1-50")
        cursors, epoch = store.cursors(), store.epoch
        index = {b: list(store.iter_bin(b, 1)) for b in range(BINS)}
    with LocalStore(store_path, OVERLAY) as store:
        assert store.cursors() == cursors
        assert store.epoch == epoch
        assert len(store) == 50
        assert {b: list(store.iter_bin(b, 1)) for b in range(BINS)} == index
        assert all(store.get(chunk.address) == chunk for chunk in chunks)
        assert store.get_state(b"intervals/peer") == b"1-50"
        assert store.statistics() == StoreStatistics(chunks=50, cursors=tuple(cursors), epoch=epoch, slots=50)
        # New chunks continue the bin IDs where they were.
        extra = random_chunks(10, seed=8)
        store.put_many(extra)
        for b in range(BINS):
            ids = [i for i, _ in store.iter_bin(b, 1)]
            assert ids == list(range(1, store.cursor(b) + 1))


# -- epoch -----------------------------------------------------------------------------------------


def test_epoch_is_creation_time_persists_and_changes_after_wipe(store_path: Path) -> None:
    before = time.time_ns()
    with LocalStore(store_path, OVERLAY) as store:
        epoch = store.epoch
    assert before <= epoch <= time.time_ns()
    with LocalStore(store_path, OVERLAY) as store:
        assert store.epoch == epoch
    shutil.rmtree(store_path)
    with LocalStore(store_path, OVERLAY) as store:
        assert store.epoch != epoch
        assert store.epoch > epoch


def test_protocol_doc_gives_the_handshake_epoch_in_the_unit_the_store_keeps() -> None:
    """docs/protocol.md's Handshake row: nodes send nanoseconds since the Unix epoch, not seconds."""
    doc = (Path(__file__).parent.parent / "docs" / "protocol.md").read_text()
    handshake = doc.split("`Handshake`, the second frame", 1)[1].split("### 5.2", 1)[0]
    (row,) = [line for line in handshake.splitlines() if "`epoch`" in line]
    assert "ns since the Unix epoch" in row and "seconds" not in row


# -- opening, locking, refusing --------------------------------------------------------------------


def test_creates_missing_nested_directory_and_uses_empty_one(tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b" / "store"
    with LocalStore(nested, OVERLAY) as store:
        assert store.put(Chunk.from_payload(b"x"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with LocalStore(str(empty), OVERLAY) as store:
        assert len(store) == 0
        assert store.overlay == OVERLAY
        assert store.path == str(empty)


def test_overlay_must_be_32_bytes(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        LocalStore(tmp_path / "s", bytes(31))
    assert not (tmp_path / "s").exists()


def test_second_open_in_same_process_is_locked(store_path: Path) -> None:
    chunk = Chunk.from_payload(b"held")
    with LocalStore(store_path, OVERLAY) as first:
        files = snapshot(store_path)
        with pytest.raises(StoreLocked) as info:
            LocalStore(store_path, OVERLAY)
        assert str(store_path) in str(info.value)
        assert snapshot(store_path) == files
        assert first.put(chunk)
        # The refused opener did not take the lock away from the holder.
        result = run_python(
            f"""
            from localstore import StoreLocked
            from localstore.store import LocalStore
            try:
                LocalStore({str(store_path)!r}, bytes.fromhex({OVERLAY.hex()!r}))
                print("opened")
            except StoreLocked:
                print("locked")
            """
        )
        assert result.stdout.strip() == "locked", result.stderr
    with LocalStore(store_path, OVERLAY) as again:
        assert again.has(chunk.address)


def test_open_from_another_process_is_locked(store_path: Path) -> None:
    code = f"""
        import json
        from localstore import StoreError
        from localstore.store import LocalStore
        try:
            LocalStore({str(store_path)!r}, bytes.fromhex({OVERLAY.hex()!r}))
            print(json.dumps({{"error": None}}))
        except StoreError as exc:
            print(json.dumps({{"error": type(exc).__name__, "message": str(exc)}}))
        """
    with LocalStore(store_path, OVERLAY):
        result = run_python(code)
    outcome = json.loads(result.stdout)
    assert outcome["error"] == "StoreLocked", result.stderr
    assert str(store_path) in outcome["message"]
    # Released on close: the other process opens it now.
    assert json.loads(run_python(code).stdout) == {"error": None}


def test_held_by_another_process_then_released_when_it_exits(store_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\nfrom localstore.store import LocalStore\n"
            f"s = LocalStore({str(store_path)!r}, bytes.fromhex({OVERLAY.hex()!r}))\n"
            "print('open', flush=True)\nsys.stdin.readline()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        with pytest.raises(StoreLocked, match=str(store_path)):
            LocalStore(store_path, OVERLAY)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    with LocalStore(store_path, OVERLAY) as store:
        assert len(store) == 0


def test_leveldb_lock_held_by_a_foreign_program_is_locked_and_untouched(store_path: Path) -> None:
    LocalStore(store_path, OVERLAY).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import plyvel, sys\ndb = plyvel.DB({str(store_path)!r})\nprint('open', flush=True)\n"
            "sys.stdin.readline()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        files = snapshot(store_path)
        with pytest.raises(StoreLocked, match=str(store_path)):
            LocalStore(store_path, OVERLAY)
        assert snapshot(store_path) == files
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_foreign_leveldb_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "foreign"
    db = plyvel.DB(str(path), create_if_missing=True)
    db.put(b"someone", b"else's data")
    db.close()
    files = snapshot(path)
    with pytest.raises(StoreCorrupt) as info:
        LocalStore(path, OVERLAY)
    assert str(path) in str(info.value)
    assert "LevelDB without localstore metadata" in str(info.value)
    assert snapshot(path) == files


def test_non_leveldb_directory_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "photos"
    path.mkdir()
    (path / "holiday.jpg").write_bytes(b"\xff\xd8 not a database")
    (path / "sub").mkdir()
    (path / "sub" / "notes.txt").write_text("keep me")
    files = snapshot(path)
    with pytest.raises(StoreCorrupt, match="not a LevelDB") as info:
        LocalStore(path, OVERLAY)
    assert str(path) in str(info.value)
    assert snapshot(path) == files
    assert sorted(os.listdir(path)) == ["holiday.jpg", "sub"]


def test_regular_file_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_bytes(b"data")
    with pytest.raises(StoreCorrupt, match="not a directory"):
        LocalStore(path, OVERLAY)
    assert path.read_bytes() == b"data"


def _filled_store(path: Path) -> list[Chunk]:
    chunks = random_chunks(40, seed=9)
    with LocalStore(path, OVERLAY) as store:
        store.put_many(chunks)
    # Open and close once more so the directory also holds LOG.old, an .ldb table and a new log.
    LocalStore(path, OVERLAY).close()
    return chunks


@pytest.mark.parametrize(
    "damage", ["current-garbage", "manifest-garbage", "current-missing", "manifest-missing"]
)
def test_leveldb_with_a_lost_or_garbled_current_or_manifest_is_repaired(
    store_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    chunks = _filled_store(store_path)
    with LocalStore(store_path, OVERLAY) as store:
        store.put_state(b"intervals/peer", b"kept")
        cursors, epoch = store.cursors(), store.epoch
    manifest = (store_path / "CURRENT").read_text().strip()
    if damage == "current-garbage":
        (store_path / "CURRENT").write_bytes(b"\x00garbage")
    elif damage == "manifest-garbage":
        size = (store_path / manifest).stat().st_size
        (store_path / manifest).write_bytes(random.Random(1).randbytes(size))
    elif damage == "current-missing":
        (store_path / "CURRENT").unlink()
    else:
        (store_path / manifest).unlink()
    with caplog.at_level("WARNING", logger="localstore"), LocalStore(store_path, OVERLAY) as store:
        assert store.cursors() == cursors and store.epoch == epoch
        assert [store.get(chunk.address) for chunk in chunks] == chunks
        assert store.get_state(b"intervals/peer") == b"kept"
        assert store.put(Chunk.from_payload(b"after the repair"))
    repaired = [r.getMessage() for r in caplog.records if "repair" in r.getMessage()]
    assert repaired and all(str(store_path) in message for message in repaired), caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="localstore"), LocalStore(store_path, OVERLAY) as store:
        assert len(store) == len(chunks) + 1
    assert caplog.records == [], "repaired once, then a healthy store"


def test_lost_leveldb_tables_are_refused_untouched_with_what_to_do(store_path: Path) -> None:
    _filled_store(store_path)
    tables = [name for name in os.listdir(store_path) if name.endswith((".ldb", ".sst"))]
    assert tables
    for name in tables:
        (store_path / name).unlink()
    files = snapshot(store_path)
    with pytest.raises(StoreCorrupt) as info:
        LocalStore(store_path, OVERLAY)
    message = str(info.value)
    assert str(store_path) in message and "missing files" in message
    assert "move the directory away" in message and "\n" not in message
    assert snapshot(store_path) == files


def test_leveldb_emptied_under_the_chunk_files_is_refused_not_recreated(store_path: Path) -> None:
    """A LevelDB that lost everything (its metadata, the cursors) must not start a new store
    over the chunk files: that would cut them to nothing."""
    _filled_store(store_path)
    db = plyvel.DB(str(store_path))
    for key in list(db.iterator(include_value=False)):
        db.delete(key)
    db.close()
    chunk_file = (store_path / CHUNK_FILE_NAME).read_bytes()
    with pytest.raises(StoreCorrupt, match=r"lost the store's metadata and cursors.*move the directory away"):
        LocalStore(store_path, OVERLAY)
    assert (store_path / CHUNK_FILE_NAME).read_bytes() == chunk_file


def test_leveldb_with_marker_but_no_metadata_is_corrupt(store_path: Path) -> None:
    _filled_store(store_path)
    db = plyvel.DB(str(store_path))
    for key in list(db.iterator(prefix=b"m", include_value=False)):
        db.delete(key)
    db.close()
    with pytest.raises(StoreCorrupt, match="no localstore metadata"):
        LocalStore(store_path, OVERLAY)


def test_unknown_format_version_is_refused(store_path: Path) -> None:
    _filled_store(store_path)
    marker = store_path / MARKER_NAME
    fields = json.loads(marker.read_text())
    fields["version"] = 99
    marker.write_text(json.dumps(fields))
    files = snapshot(store_path)
    with pytest.raises(UnsupportedStoreVersion, match="version 99") as info:
        LocalStore(store_path, OVERLAY)
    assert str(store_path) in str(info.value)
    assert snapshot(store_path) == files


def test_unknown_version_in_leveldb_metadata_is_refused(store_path: Path) -> None:
    _filled_store(store_path)
    db = plyvel.DB(str(store_path))
    db.put(META_VERSION, (FORMAT_VERSION + 1).to_bytes(8, "big"))
    db.close()
    with pytest.raises(UnsupportedStoreVersion, match=f"version {FORMAT_VERSION + 1}"):
        LocalStore(store_path, OVERLAY)


def test_garbled_marker_is_corrupt(store_path: Path) -> None:
    _filled_store(store_path)
    (store_path / MARKER_NAME).write_bytes(b"{not json")
    files = snapshot(store_path)
    with pytest.raises(StoreCorrupt, match=MARKER_NAME):
        LocalStore(store_path, OVERLAY)
    assert snapshot(store_path) == files


def test_other_overlay_is_refused_and_nothing_changes(store_path: Path) -> None:
    chunks = _filled_store(store_path)
    files = snapshot(store_path)
    other = bytes(32)
    with pytest.raises(OverlayMismatch) as info:
        LocalStore(store_path, other)
    message = str(info.value)
    assert str(store_path) in message and OVERLAY.hex() in message and other.hex() in message
    assert isinstance(info.value, StoreError)
    assert snapshot(store_path) == files
    with LocalStore(store_path, OVERLAY) as store:
        assert len(store) == len(chunks)


def test_closed_store_refuses_work_and_close_is_idempotent(store_path: Path) -> None:
    store = LocalStore(store_path, OVERLAY)
    store.close()
    store.close()
    assert store.closed
    with pytest.raises(StoreClosed):
        store.put(Chunk.from_payload(b"late"))
    with pytest.raises(StoreClosed):
        store.get(bytes(32))
    with pytest.raises(StoreClosed):
        store.get_state(b"k")


def test_forgotten_store_releases_its_lock_when_collected(store_path: Path) -> None:
    import gc

    LocalStore(store_path, OVERLAY)
    gc.collect()
    with LocalStore(store_path, OVERLAY) as store:
        assert len(store) == 0


# -- state namespace -------------------------------------------------------------------------------


def test_state_round_trip_prefixes_and_batches(store_path: Path) -> None:
    chunk = Chunk.from_payload(b"not state")
    with LocalStore(store_path, OVERLAY) as store:
        store.put(chunk)
        assert store.get_state(b"missing") is None
        store.put_state(b"iv/peer1/0", b"a")
        store.put_state(b"iv/peer1/1", b"b")
        store.put_state(b"iv/peer2/0", b"c")
        store.put_state(b"other", b"d")
        store.put_state(b"iv/peer1/1", b"B")
        assert store.get_state(b"iv/peer1/1") == b"B"
        assert list(store.iter_state(b"iv/peer1/")) == [(b"iv/peer1/0", b"a"), (b"iv/peer1/1", b"B")]
        assert [k for k, _ in store.iter_state(b"iv/")] == [b"iv/peer1/0", b"iv/peer1/1", b"iv/peer2/0"]
        # Chunks and metadata live in other namespaces.
        assert [k for k, _ in store.iter_state(b"")] == [
            b"iv/peer1/0",
            b"iv/peer1/1",
            b"iv/peer2/0",
            b"other",
        ]
        store.delete_state(b"other")
        store.delete_state(b"never-there")
        assert store.get_state(b"other") is None
        store.write_state_batch({b"iv/peer2/0": b"C", b"iv/peer3/0": b"e"}, deletes=[b"iv/peer1/0"])
        with pytest.raises(ValueError):
            store.write_state_batch({b"x": b"1"}, deletes=[b"x"])
        assert store.get_state(b"x") is None
        expected = [(b"iv/peer1/1", b"B"), (b"iv/peer2/0", b"C"), (b"iv/peer3/0", b"e")]
        assert list(store.iter_state()) == expected
        assert len(store) == 1
    with LocalStore(store_path, OVERLAY) as store:
        assert list(store.iter_state(b"iv/")) == expected
        assert store.get(chunk.address) == chunk


# -- live: wait_bin --------------------------------------------------------------------------------


def chunk_in_bin(overlay: bytes, bin: int, seed: int = 0) -> Chunk:
    """Mine a chunk whose address falls in ``bin`` of ``overlay`` (cheap for low bins)."""
    rng = random.Random(seed)
    while True:
        chunk = Chunk.from_payload(rng.randbytes(16))
        if naive_bin(overlay, chunk.address) == bin:
            return chunk


async def test_wait_bin_wakes_on_put_from_another_task(store: LocalStore) -> None:
    chunk = chunk_in_bin(OVERLAY, 1)
    results: list[int] = []

    async def waiter() -> None:
        results.append(await store.wait_bin(1, 0))

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()
            assert results == []
            store.put(chunk)
    assert results == [1]


async def test_wait_bin_wakes_on_put_many_and_only_for_its_bin(store: LocalStore) -> None:
    in_bin0 = [chunk_in_bin(OVERLAY, 0, seed) for seed in (1, 2, 3)]
    in_bin2 = chunk_in_bin(OVERLAY, 2, 4)
    woken: dict[int, int] = {}

    async def waiter(bin: int) -> None:
        woken[bin] = await store.wait_bin(bin, 0)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter, 0)
            nursery.start_soon(waiter, 2)
            await trio.testing.wait_all_tasks_blocked()
            store.put_many(in_bin0)
            await trio.testing.wait_all_tasks_blocked()
            assert woken == {0: len({c.address for c in in_bin0})}
            store.put(in_bin2)
    assert woken[2] == 1


async def test_wait_bin_returns_at_once_when_already_above(store: LocalStore) -> None:
    store.put(chunk_in_bin(OVERLAY, 0, 1))
    store.put(chunk_in_bin(OVERLAY, 0, 2))
    with trio.fail_after(1):
        assert await store.wait_bin(0, 0) == 2
        assert await store.wait_bin(0, 1) == 2
    with trio.move_on_after(0.05) as scope:
        await store.wait_bin(0, 2)
    assert scope.cancelled_caught


async def test_wait_bin_raises_when_store_closes(store_path: Path) -> None:
    store = LocalStore(store_path, OVERLAY)
    outcome: list[BaseException] = []

    async def waiter() -> None:
        try:
            await store.wait_bin(3, 0)
        except StoreClosed as exc:
            outcome.append(exc)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()
            store.close()
    assert len(outcome) == 1


def test_put_outside_trio_after_an_abandoned_wait(store: LocalStore) -> None:
    chunk = chunk_in_bin(OVERLAY, 0, 5)

    async def abandoned_wait() -> None:
        with trio.move_on_after(0.01):
            await store.wait_bin(0, 0)

    trio.run(abandoned_wait)
    assert store.put(chunk)
    assert store.put_many(random_chunks(3, seed=10)) == 3


# -- model-based property test ---------------------------------------------------------------------

POOL = random_chunks(24, seed=11, size=40)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(0, len(POOL) - 1)),
        st.tuples(st.just("put_many"), st.lists(st.integers(0, len(POOL) - 1), max_size=8)),
        st.tuples(st.just("reopen"), st.none()),
    ),
    max_size=40,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(overlay=st.binary(min_size=32, max_size=32), ops=operations)
def test_property_store_matches_naive_model(overlay: bytes, ops: list[tuple[str, object]]) -> None:
    model_chunks: dict[bytes, bytes] = {}
    model_bins: dict[int, list[bytes]] = {b: [] for b in range(BINS)}

    def model_put(chunk: Chunk) -> bool:
        if chunk.address in model_chunks:
            return False
        model_chunks[chunk.address] = chunk.data
        model_bins[naive_bin(overlay, chunk.address)].append(chunk.address)
        return True

    def check(store: LocalStore) -> None:
        assert len(store) == len(model_chunks)
        assert store.cursors() == [len(model_bins[b]) for b in range(BINS)]
        for b in range(BINS):
            assert list(store.iter_bin(b, 1)) == list(enumerate(model_bins[b], start=1))
        for chunk in POOL:
            assert store.has(chunk.address) == (chunk.address in model_chunks)
            if chunk.address in model_chunks:
                assert store.get(chunk.address).data == model_chunks[chunk.address]

    with tempfile.TemporaryDirectory() as tmp:
        store = LocalStore(tmp, overlay)
        try:
            for op, arg in ops:
                if op == "put":
                    assert isinstance(arg, int)
                    assert store.put(POOL[arg]) == model_put(POOL[arg])
                elif op == "put_many":
                    assert isinstance(arg, list)
                    expected = sum(model_put(POOL[i]) for i in arg)
                    assert store.put_many([POOL[i] for i in arg]) == expected
                else:
                    store.close()
                    store = LocalStore(tmp, overlay)
                check(store)
            store.close()
            store = LocalStore(tmp, overlay)
            check(store)
        finally:
            store.close()


# -- crash atomicity -------------------------------------------------------------------------------

# A supervisor process makes the chunks once, then forks writer processes one after the other; each
# opens the store, writes chunks in a loop (put, sometimes put_many) and is SIGKILLed after a random
# few milliseconds. Forking from a warm process makes a round cost milliseconds, so many crashes land
# inside writes: a store that wrote chunk, pull-index entry and counter separately fails this test.
CRASHER = """
import json, os, random, signal, sys, time, traceback
from chunks import Chunk
from localstore.store import LocalStore

path, overlay, rounds = sys.argv[1], bytes.fromhex(sys.argv[2]), int(sys.argv[3])
rng = random.Random(int(sys.argv[4]))
pool = [Chunk.from_payload(rng.randbytes(rng.randrange(1, 64))) for _ in range(rounds * 300)]


def write_forever(seed):
    writer_rng = random.Random(seed)
    store = LocalStore(path, overlay)
    os.write(ready_w, b"r")
    i = len(store)  # the stored chunks are a prefix of the pool when writes are atomic
    while i < len(pool):
        if writer_rng.random() < 0.85:
            store.put(pool[i])
            i += 1
        else:
            count = writer_rng.randrange(2, 16)
            store.put_many(pool[i : i + count])
            i += count
    time.sleep(600)


for round in range(rounds):
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(ready_r)
            write_forever(round)
        except BaseException:
            traceback.print_exc()
        os._exit(1)
    os.close(ready_w)
    ready = os.read(ready_r, 1)
    os.close(ready_r)
    if ready == b"r":
        time.sleep(rng.uniform(0, 0.006))
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
        sys.exit(f"writer of round {round} was not killed mid-run: status {status}")
print(json.dumps({"rounds": rounds}))
"""


def test_sigkill_while_writing_leaves_a_consistent_store(store_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", CRASHER, str(store_path), OVERLAY.hex(), "120", "12"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"rounds": 120}

    db = plyvel.DB(str(store_path))
    try:
        counters = {
            key[1]: int.from_bytes(value, "big") for key, value in db.iterator(prefix=KEY_BIN_COUNTER)
        }
    finally:
        db.close()
    entries = []  # (bin, bin ID, address, slot, length) of every committed chunk
    for bin, cursor in counters.items():
        raw = (store_path / pull_file_name(bin)).read_bytes()
        assert len(raw) >= cursor * ENTRY_SIZE, "a bin's pull index has an entry for each bin ID"
        for bin_id in range(1, cursor + 1):
            entry = raw[(bin_id - 1) * ENTRY_SIZE : bin_id * ENTRY_SIZE]
            slot, length = int.from_bytes(entry[32:38], "big"), int.from_bytes(entry[38:], "big")
            assert slot != HOLE_SLOT, "no chunk was dropped"
            entries.append((bin, bin_id, entry[:32], slot, length))
    assert len(entries) > 1000, "the writer should have stored a good number of chunks"
    slots = sorted(slot for *_, slot, _ in entries)
    assert slots == list(range(len(entries))), "slots are handed out in order, each once"
    chunk_file = (store_path / CHUNK_FILE_NAME).read_bytes()
    chunks = {}
    for _, _, address, slot, length in entries:
        record = chunk_file[slot * SLOT_SIZE : slot * SLOT_SIZE + SLOT_HEADER_SIZE + length]
        assert record[:32] == address, f"slot {slot} holds its chunk's address"
        assert record[32:SLOT_HEADER_SIZE] == checksum(address, record[SLOT_HEADER_SIZE:])
        chunks[address] = record[SLOT_HEADER_SIZE:]
    assert len(chunks) == len(entries), "every chunk indexed exactly once"
    for address, data in chunks.items():
        assert bmt_address(data[8:], int.from_bytes(data[:8], "little")) == address
    for bin, _, address, _, _ in entries:
        assert bin == naive_bin(OVERLAY, address)
    with LocalStore(store_path, OVERLAY) as store:
        assert len(store) == len(chunks)
        assert store.cursors() == [counters.get(b, 0) for b in range(BINS)]
        for address, data in chunks.items():
            assert store.get(address).data == data, "the rebuilt address index finds each chunk"
        assert [a for b, _, a, _, _ in entries if b == 0] == [a for _, a in store.iter_bin(0, 1)]
