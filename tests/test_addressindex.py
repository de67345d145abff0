"""AddressIndex, the extendible hash file address -> (slot, length, bin ID), against a dict."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localstore import addressindex
from localstore.addressindex import (
    BUCKET_CAPACITY,
    INDEX_FILE_NAME,
    PAGE_SIZE,
    AddressIndex,
    IndexEntry,
)


def address(n: int) -> bytes:
    return hashlib.sha256(n.to_bytes(8, "big")).digest()


def entry(n: int) -> IndexEntry:
    return IndexEntry(slot=n, length=8 + n % 4097, bin_id=n // 3 + 1)


def build(directory: Path, numbers: range | list[int]) -> AddressIndex:
    return AddressIndex.build(str(directory), ((address(n), entry(n)) for n in numbers))


def test_build_get_and_reopen_across_many_splits(tmp_path: Path) -> None:
    count = 40 * BUCKET_CAPACITY
    index = build(tmp_path, range(count))
    assert len(index) == count
    assert all(index.get(address(n)) == entry(n) for n in range(count))
    assert index.get(address(count)) is None
    pages = (tmp_path / INDEX_FILE_NAME).stat().st_size // PAGE_SIZE - 1
    assert 40 <= pages <= 120, "buckets are split as they fill, about 70 % full"
    index.close(slots=count)
    reopened = AddressIndex.open(str(tmp_path), slots=count)
    assert reopened is not None and len(reopened) == count
    assert all(reopened.get(address(n)) == entry(n) for n in range(0, count, 7))
    reopened.add(address(count), entry(count))
    assert reopened.get(address(count)) == entry(count)
    reopened.close(slots=count + 1)


@settings(max_examples=40, deadline=None)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("add"), st.integers(0, 600)),
            st.tuples(st.just("remove"), st.integers(0, 600)),
            st.tuples(st.just("reopen"), st.just(0)),
        ),
        max_size=400,
    )
)
def test_property_index_matches_a_dict(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int]]
) -> None:
    directory = tmp_path_factory.mktemp("index")
    index = AddressIndex.build(str(directory), [])
    model: dict[bytes, IndexEntry] = {}
    try:
        for op, n in ops:
            if op == "add" and address(n) not in model:
                index.add(address(n), entry(n))
                model[address(n)] = entry(n)
            elif op == "remove":
                assert index.remove(address(n)) == (address(n) in model)
                model.pop(address(n), None)
            elif op == "reopen":
                index.close(slots=len(model))
                reopened = AddressIndex.open(str(directory), slots=len(model))
                assert reopened is not None
                index = reopened
            assert len(index) == len(model)
        for n in range(601):
            assert index.get(address(n)) == model.get(address(n))
            assert (address(n) in index) == (address(n) in model)
    finally:
        index.close(slots=len(model))


def counted_reads(index: AddressIndex, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pages ``index`` reads from now on, in order."""
    reads: list[int] = []
    read = index._read

    def counted(page: int) -> bytes:
        reads.append(page)
        return read(page)

    monkeypatch.setattr(index, "_read", counted)
    return reads


def test_recent_entries_skip_the_page_read_and_stay_true(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(addressindex, "RECENT", 50)
    index = build(tmp_path, range(3 * BUCKET_CAPACITY))
    reads = counted_reads(index, monkeypatch)
    assert index.get(address(7)) == entry(7)
    assert index.get(address(7)) == entry(7) and address(7) in index
    assert len(reads) == 1, "a recent entry is answered from memory"
    absent = address(10**6)
    assert index.get(absent) is None and absent not in index and len(reads) == 2, "an absence too"
    index.add(absent, entry(5))
    assert index.get(absent) == entry(5)
    assert index.remove(address(7)) and index.get(address(7)) is None and address(7) not in index
    for n in range(200):  # more than RECENT lookups: the oldest are forgotten, still found on file
        assert index.get(address(n)) == (None if n == 7 else entry(n))
    assert index.get(absent) == entry(5)
    assert len(index._recent) <= 50
    index.add(address(7), entry(9))
    reads.clear()
    assert index.get(address(7)) == entry(9) and not reads
    index.close(slots=3 * BUCKET_CAPACITY)
    reopened = AddressIndex.open(str(tmp_path), slots=3 * BUCKET_CAPACITY)
    assert reopened is not None and reopened.get(address(7)) == entry(9)
    reopened.close(slots=3 * BUCKET_CAPACITY)


@settings(max_examples=30, deadline=None)
@given(batches=st.lists(st.lists(st.integers(0, 3000), max_size=300, unique=True), max_size=12))
def test_add_many_matches_adding_one_by_one(
    tmp_path_factory: pytest.TempPathFactory, batches: list[list[int]]
) -> None:
    """Batches through many splits (and directory doublings) hold what single adds would."""
    directory = tmp_path_factory.mktemp("index")
    index = AddressIndex.build(str(directory), [])
    model: dict[bytes, IndexEntry] = {}
    try:
        for batch in batches:
            new = [n for n in batch if address(n) not in model]
            index.add_many((address(n), entry(n)) for n in new)
            model.update((address(n), entry(n)) for n in new)
            assert len(index) == len(model)
        index.close(slots=len(model))
        reopened = AddressIndex.open(str(directory), slots=len(model))
        assert reopened is not None, "the buckets' headers add up to the count"
        index = reopened
        for n in range(3001):
            assert index.get(address(n)) == model.get(address(n))
    finally:
        index.close(slots=len(model))


def test_add_many_reads_and_writes_each_bucket_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = build(tmp_path, range(30))  # one bucket, with room for 40 more
    reads = counted_reads(index, monkeypatch)
    batch = range(10**6, 10**6 + 40)
    index.add_many((address(n), entry(n)) for n in batch)
    assert len(reads) == 1, "one read of the bucket, not one per address"
    assert all(index.get(address(n)) == entry(n) for n in batch) and len(reads) == 1
    assert len(index) == 70
    index.close(slots=70)


def test_open_refuses_what_must_be_rebuilt(tmp_path: Path) -> None:
    assert AddressIndex.open(str(tmp_path), slots=0) is None, "no file"
    index = build(tmp_path, range(300))
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    shutil.copy(tmp_path / INDEX_FILE_NAME, crashed / INDEX_FILE_NAME)
    assert AddressIndex.open(str(crashed), slots=300) is None, "copied while open: not closed cleanly"
    index.close(slots=300)
    assert AddressIndex.open(str(tmp_path), slots=299) is None, "closed at another slot count"
    reopened = AddressIndex.open(str(tmp_path), slots=300)
    assert reopened is not None
    shutil.copy(tmp_path / INDEX_FILE_NAME, crashed / INDEX_FILE_NAME)
    assert AddressIndex.open(str(crashed), slots=300) is None, "an open index is marked not clean on disk"
    reopened.close(slots=300)


@pytest.mark.parametrize("damage", ["magic", "bucket-count", "bucket-depth", "truncated", "lost-bucket"])
def test_a_damaged_file_is_rebuilt_not_trusted(tmp_path: Path, damage: str) -> None:
    build(tmp_path, range(500)).close(slots=500)
    path = tmp_path / INDEX_FILE_NAME
    raw = bytearray(path.read_bytes())
    if damage == "magic":
        raw[0] ^= 0xFF
    elif damage == "bucket-count":
        raw[PAGE_SIZE + 1] ^= 1
    elif damage == "bucket-depth":
        raw[PAGE_SIZE + 2] = 40
    elif damage == "truncated":
        del raw[-100:]
    else:
        del raw[-PAGE_SIZE:]
    path.write_bytes(bytes(raw))
    assert AddressIndex.open(str(tmp_path), slots=500) is None


def test_every_build_draws_its_own_hash_key(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    build(tmp_path / "a", range(20)).close(slots=20)
    build(tmp_path / "b", range(20)).close(slots=20)
    key_a = (tmp_path / "a" / INDEX_FILE_NAME).read_bytes()[8:24]
    key_b = (tmp_path / "b" / INDEX_FILE_NAME).read_bytes()[8:24]
    assert key_a != key_b and len(set(key_a)) > 1


def test_a_failed_build_leaves_no_file(tmp_path: Path) -> None:
    def entries() -> object:
        yield address(1), entry(1)
        raise OSError("the pull index could not be read")

    with pytest.raises(OSError, match="could not be read"):
        AddressIndex.build(str(tmp_path), entries())  # type: ignore[arg-type]
    assert os.listdir(tmp_path) == []


# -- the store's use of it --------------------------------------------------------------------------

UNCLEAN_STOP = """
import os, sys
from localstore.store import LocalStore
from tests.test_localstore import OVERLAY, random_chunks
store = LocalStore(sys.argv[1], OVERLAY)
chunks = random_chunks(200, seed=3)
store.put_many(chunks[:100])
for chunk in chunks[100:]:
    store.put(chunk)
os._exit(0)  # no close: the address index is left marked not clean
"""


def test_the_store_rebuilds_its_index_after_an_unclean_stop_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import subprocess
    import sys

    from localstore.store import LocalStore
    from tests.test_localstore import OVERLAY, random_chunks

    path = tmp_path / "s"
    subprocess.run([sys.executable, "-c", UNCLEAN_STOP, str(path)], check=True, timeout=60)
    chunks = random_chunks(200, seed=3)
    with caplog.at_level("INFO", logger="localstore"), LocalStore(path, OVERLAY) as store:
        assert len(store) == 200
        assert all(store.get(chunk.address) == chunk for chunk in chunks)
    assert "rebuilt the address index of 200 chunks" in caplog.text
    caplog.clear()
    with caplog.at_level("INFO", logger="localstore"), LocalStore(path, OVERLAY) as store:
        assert len(store) == 200 and store.has(chunks[0].address)
    assert "rebuilt" not in caplog.text, "a cleanly closed index is used as it is"


def test_a_failed_index_update_is_repaired_at_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from localstore.store import LocalStore
    from tests.test_localstore import OVERLAY, random_chunks

    first, second = random_chunks(2, seed=4)
    path = tmp_path / "s"
    with LocalStore(path, OVERLAY) as store:
        assert store.put(first)

        def broken_add(self: AddressIndex, *args: object) -> None:
            raise OSError("no space left on device")

        with monkeypatch.context() as patch:
            patch.setattr(AddressIndex, "add", broken_add)
            patch.setattr(AddressIndex, "add_many", broken_add)
            with pytest.raises(OSError, match="no space left"):
                store.put(second)
        assert len(store) == 1, "committed to the pull index and cursors, but not indexed yet"
    with caplog.at_level("INFO", logger="localstore"), LocalStore(path, OVERLAY) as store:
        assert len(store) == 2
        assert store.get(second.address) == second and store.get(first.address) == first
    assert "rebuilt the address index of 2 chunks" in caplog.text, "a stale index is not trusted"
