"""PullIndex, the per-bin append-only pull-index files, against a list per bin."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localstore.pullindex import (
    ENTRY_SIZE,
    HOLE_SLOT,
    READ_BLOCK,
    PullEntry,
    PullIndex,
    encode_entry,
    pull_file_name,
)

BINS = 4


def address(n: int) -> bytes:
    return hashlib.sha256(n.to_bytes(8, "big")).digest()


@settings(max_examples=40, deadline=None)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.integers(0, BINS - 1), st.integers(1, 40)),
            st.tuples(st.just("punch"), st.integers(0, BINS - 1), st.integers(1, 200)),
            st.tuples(st.just("reopen"), st.integers(0, BINS - 1), st.integers(0, 5)),
            st.tuples(st.just("tear"), st.integers(0, BINS - 1), st.integers(1, 3 * ENTRY_SIZE)),
        ),
        max_size=60,
    )
)
def test_property_pull_index_matches_lists(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int, int]]
) -> None:
    directory = str(tmp_path_factory.mktemp("pull"))
    model: list[list[PullEntry | None]] = [[] for _ in range(BINS)]
    index = PullIndex(directory, [0] * BINS)
    slot = 0
    try:
        for op, bin, n in ops:
            entries = model[bin]
            if op == "append":
                new = [
                    PullEntry(len(entries) + 1 + i, address(slot + i), slot + i, (slot + i) % 4105)
                    for i in range(n)
                ]
                index.append(bin, len(entries) + 1, [encode_entry(e.address, e.slot, e.length) for e in new])
                entries.extend(new)
                slot += n
            elif op == "punch" and n <= len(entries):
                index.punch(bin, n)
                entries[n - 1] = None
            elif op == "reopen":
                # an uncommitted tail: entries written past the cursor the store committed
                committed = [len(e) for e in model]
                index.append(
                    bin, len(entries) + 1, [encode_entry(address(10**6 + i), i, 1) for i in range(n)]
                )
                index.close()
                index = PullIndex(directory, committed)
                assert index.lost == {}
            elif op == "tear":
                # a power cut: the file loses its last n bytes, its committed cursor stays
                index.close()
                path = Path(directory) / pull_file_name(bin)
                size = path.stat().st_size if path.exists() else 0
                if size:
                    os.truncate(path, max(0, size - n))
                whole = max(0, size - n) // ENTRY_SIZE
                index = PullIndex(directory, [len(e) for e in model])
                cursor = len(entries)
                assert index.lost == ({bin: range(whole + 1, cursor + 1)} if whole < cursor else {})
                index.repair_lost()
                entries[whole:] = [None] * (cursor - whole)
        for bin in range(BINS):
            entries = model[bin]
            assert list(index.read(bin, 1, len(entries))) == [e for e in entries if e is not None]
            middle = list(index.read(bin, 2, len(entries) - 1))
            assert middle == [e for e in entries[1:-1] if e is not None]
            assert list(index.read(bin, len(entries) + 1, len(entries))) == []
    finally:
        index.close()


def test_long_ranges_are_read_in_blocks(tmp_path: Path) -> None:
    count = 3 * READ_BLOCK + 5
    index = PullIndex(str(tmp_path), [0])
    index.append(0, 1, [encode_entry(address(n), n, 4104) for n in range(count)])
    got = list(index.read(0, 2, count))
    assert [e.bin_id for e in got] == list(range(2, count + 1))
    assert [e.address for e in got] == [address(n) for n in range(1, count)]
    index.close()
    assert (tmp_path / pull_file_name(0)).stat().st_size == count * ENTRY_SIZE


def test_a_hole_is_written_in_place_keeping_its_address(tmp_path: Path) -> None:
    index = PullIndex(str(tmp_path), [0, 0, 0])
    index.append(2, 1, [encode_entry(address(n), n, 10) for n in range(3)])
    index.punch(2, 2)
    index.close()
    raw = (tmp_path / pull_file_name(2)).read_bytes()
    # the address stays: the bin's log keeps a leaf for every bin ID (localstore/binlog.py)
    assert raw[ENTRY_SIZE : 2 * ENTRY_SIZE] == address(1) + HOLE_SLOT.to_bytes(6, "big") + bytes(2)
    assert raw[2 * ENTRY_SIZE : 2 * ENTRY_SIZE + 32] == address(2)


@pytest.mark.parametrize("cut", [1, 3, ENTRY_SIZE - 1, ENTRY_SIZE, ENTRY_SIZE + 1, 3 * ENTRY_SIZE])
def test_a_torn_tail_becomes_holes_up_to_the_cursor(tmp_path: Path, cut: int) -> None:
    index = PullIndex(str(tmp_path), [0, 0])
    index.append(1, 1, [encode_entry(address(n), n, 10) for n in range(5)])
    index.close()
    path = tmp_path / pull_file_name(1)
    os.truncate(path, 5 * ENTRY_SIZE - cut)
    kept = (5 * ENTRY_SIZE - cut) // ENTRY_SIZE
    index = PullIndex(str(tmp_path), [0, 5])
    try:
        assert index.lost == {1: range(kept + 1, 6)}
        assert index.torn == {1: (5 * ENTRY_SIZE - cut) % ENTRY_SIZE}
        index.repair_lost()
        assert [e.address for e in index.read(1, 1, 5)] == [address(n) for n in range(kept)]
        assert path.stat().st_size == 5 * ENTRY_SIZE, "the bin keeps its cursor"
        index.append(1, 6, [encode_entry(address(99), 99, 10)])
        assert [e.bin_id for e in index.read(1, 1, 6)] == [*range(1, kept + 1), 6]
    finally:
        index.close()
    again = PullIndex(str(tmp_path), [0, 6])
    assert again.lost == {}, "repaired once"
    again.close()


def test_a_lost_file_becomes_holes(tmp_path: Path) -> None:
    index = PullIndex(str(tmp_path), [1, 4])
    try:
        assert index.lost == {0: range(1, 2), 1: range(1, 5)}
        index.repair_lost()
        assert list(index.read(1, 1, 4)) == []
        assert (tmp_path / pull_file_name(1)).read_bytes() == (
            bytes(32) + HOLE_SLOT.to_bytes(6, "big") + bytes(2)
        ) * 4
    finally:
        index.close()


def test_entries_are_checked_when_encoded() -> None:
    with pytest.raises(ValueError, match="address is 31 bytes"):
        encode_entry(bytes(31), 0, 0)
    with pytest.raises(ValueError, match=r"slot .* is outside"):
        encode_entry(bytes(32), HOLE_SLOT, 0)
