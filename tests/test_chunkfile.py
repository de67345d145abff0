"""The chunk slot file: layout and checksum, cut-off of uncommitted writes, damage found on read."""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path

import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunks import Chunk
from chunks.ethkey import Secp256k1Key
from chunks.soc import make_soc
from localstore import ChunkDamaged, ChunkNotFound, StoreCorrupt, UnsupportedStoreVersion
from localstore.addressindex import INDEX_FILE_NAME
from localstore.chunkfile import CHUNK_FILE_NAME, SLOT_DATA_SIZE, SLOT_HEADER_SIZE, SLOT_SIZE, ChunkFile
from localstore.directory import MARKER_NAME
from localstore.store import LocalStore
from tests.test_addressindex import counted_reads
from tests.test_localstore import OVERLAY, random_chunks, snapshot


def full_chunks(count: int, seed: int) -> list[Chunk]:
    rng = random.Random(seed)
    return [Chunk.from_payload(rng.randbytes(4096)) for _ in range(count)]


def filled(path: Path, chunks: list[Chunk]) -> None:
    with LocalStore(path, OVERLAY) as store:
        store.put_many(chunks[: len(chunks) // 2])
        for chunk in chunks[len(chunks) // 2 :]:
            store.put(chunk)


def test_slots_hold_address_checksum_and_data_in_store_order(tmp_path: Path) -> None:
    chunks = random_chunks(10, seed=1, size=100) + full_chunks(5, seed=2)
    filled(tmp_path / "s", chunks)
    raw = (tmp_path / "s" / CHUNK_FILE_NAME).read_bytes()
    assert SLOT_SIZE == 32 + 8 + 4201 and SLOT_HEADER_SIZE == 40
    assert len(raw) == len(chunks) * SLOT_SIZE
    for slot, chunk in enumerate(chunks):
        record = raw[slot * SLOT_SIZE : (slot + 1) * SLOT_SIZE]
        assert record[:32] == chunk.address
        assert record[32:40] == xxhash.xxh3_64_digest(chunk.address + chunk.data)
        assert record[40 : 40 + len(chunk.data)] == chunk.data
        assert record[40 + len(chunk.data) :] == bytes(SLOT_SIZE - 40 - len(chunk.data))


@pytest.mark.parametrize("size", [0, 1, 4104, 4105, SLOT_DATA_SIZE])
def test_data_of_any_length_up_to_a_single_owner_chunk_is_kept(tmp_path: Path, size: int) -> None:
    """The store keeps whatever data the chunk type accepts, up to 4,201 bytes (a single-owner
    chunk); ``verified=True`` stands in for a chunk type that accepts it."""
    path = tmp_path / "s"
    data = random.Random(size).randbytes(size)
    chunk = Chunk(hashlib.sha256(data).digest(), data)
    neighbours = random_chunks(3, seed=size)
    with LocalStore(path, OVERLAY) as store:
        assert store.put_many([neighbours[0], chunk, neighbours[1]], verified=True) == 3
        assert store.get(chunk.address) == chunk
        store.check_slot(chunk.address)
        assert store.put(neighbours[2])
    (path / INDEX_FILE_NAME).unlink()  # rebuilt from the pull index, lengths and all
    with LocalStore(path, OVERLAY) as store:
        assert [store.get(c.address) for c in (chunk, *neighbours)] == [chunk, *neighbours]


def test_full_single_owner_chunks_are_stored_checked_and_served(tmp_path: Path) -> None:
    """Real SOCs of 4,201 bytes, verified by put, between content chunks: no slot overflows into
    the next, and a flipped byte of a SOC's payload is found like any other."""
    key = Secp256k1Key.from_hex("55" * 32)
    rng = random.Random(15)
    socs = [Chunk.from_soc(make_soc(key, rng.randbytes(32), rng.randbytes(4096))) for _ in range(3)]
    assert {len(soc.data) for soc in socs} == {SLOT_DATA_SIZE}
    chunks = [socs[0], *full_chunks(2, seed=16), socs[1], socs[2]]
    path = tmp_path / "s"
    filled(path, chunks)
    with LocalStore(path, OVERLAY) as store:
        assert [store.get(c.address) for c in chunks] == chunks
        flip(path, 3, SLOT_HEADER_SIZE + SLOT_DATA_SIZE - 1)
        with pytest.raises(ChunkDamaged):
            store.get(socs[1].address)
        assert store.get(socs[2].address) == socs[2]


def test_data_longer_than_a_slot_is_refused_and_nothing_stored(tmp_path: Path) -> None:
    chunk = Chunk(bytes(range(32)), bytes(SLOT_DATA_SIZE + 1))
    with LocalStore(tmp_path / "s", OVERLAY) as store:
        with pytest.raises(ValueError, match=f"a slot holds {SLOT_DATA_SIZE}"):
            store.put_many([random_chunks(1, seed=1)[0], chunk], verified=True)
        assert len(store) == 0 and sum(store.cursors()) == 0


def test_a_repeated_chunk_takes_no_slot(tmp_path: Path) -> None:
    chunks = random_chunks(6, seed=3)
    with LocalStore(tmp_path / "s", OVERLAY) as store:
        assert store.put_many(chunks[:4] + chunks[:2]) == 4
        assert not store.put(chunks[1])
        assert store.put_many(chunks) == 2
    assert (tmp_path / "s" / CHUNK_FILE_NAME).stat().st_size == 6 * SLOT_SIZE


def test_uncommitted_slots_are_cut_off_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "s"
    chunks = random_chunks(8, seed=4)
    filled(path, chunks[:5])
    # What a put killed between its slot write and its LevelDB batch leaves behind.
    with open(path / CHUNK_FILE_NAME, "ab") as file:
        file.write(os.urandom(SLOT_SIZE + 123))
    with LocalStore(path, OVERLAY) as store:
        assert (path / CHUNK_FILE_NAME).stat().st_size == 5 * SLOT_SIZE
        assert store.put_many(chunks[5:]) == 3
        assert [store.get(chunk.address) for chunk in chunks] == chunks
    with LocalStore(path, OVERLAY) as store:
        assert [store.get(chunk.address) for chunk in chunks] == chunks


def test_uncommitted_slots_of_an_empty_store_are_cut_off(tmp_path: Path) -> None:
    path = tmp_path / "s"
    LocalStore(path, OVERLAY).close()
    (path / CHUNK_FILE_NAME).write_bytes(os.urandom(3 * SLOT_SIZE))
    chunk = random_chunks(1, seed=5)[0]
    with LocalStore(path, OVERLAY) as store:
        assert len(store) == 0
        assert store.put(chunk)
        assert store.get(chunk.address) == chunk
    assert (path / CHUNK_FILE_NAME).stat().st_size == SLOT_SIZE


def test_a_missing_chunk_file_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "s"
    filled(path, random_chunks(3, seed=7))
    (path / CHUNK_FILE_NAME).unlink()
    with pytest.raises(StoreCorrupt, match=f"{CHUNK_FILE_NAME} is missing.*move the directory away"):
        LocalStore(path, OVERLAY)
    assert not (path / CHUNK_FILE_NAME).exists()


def test_a_slot_holding_another_chunk_is_reported_not_served(tmp_path: Path) -> None:
    path = tmp_path / "s"
    chunks = random_chunks(4, seed=8)
    filled(path, chunks)
    raw = bytearray((path / CHUNK_FILE_NAME).read_bytes())
    raw[2 * SLOT_SIZE : 3 * SLOT_SIZE] = bytes(SLOT_SIZE)  # a write that never reached the disk
    (path / CHUNK_FILE_NAME).write_bytes(bytes(raw))
    with LocalStore(path, OVERLAY) as store:
        assert store.get(chunks[1].address) == chunks[1]
        assert store.has(chunks[2].address)
        with pytest.raises(
            ChunkDamaged,
            match=f"slot 2 of the chunk file should hold chunk "
            f"{chunks[2].address.hex()} but holds {'00' * 32}",
        ) as info:
            store.get(chunks[2].address)
        assert info.value.address == chunks[2].address and info.value.slot == 2
        assert store.get(chunks[3].address) == chunks[3]


def test_leveldb_gone_but_chunk_data_left_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "s"
    filled(path, random_chunks(5, seed=9))
    for name in os.listdir(path):
        if name not in (MARKER_NAME, CHUNK_FILE_NAME):
            os.remove(path / name)
    files = snapshot(path)
    with pytest.raises(StoreCorrupt, match="CURRENT file is missing"):
        LocalStore(path, OVERLAY)
    assert snapshot(path) == files


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_an_older_store_is_refused_with_what_to_do(tmp_path: Path, version: int) -> None:
    path = tmp_path / "s"
    filled(path, random_chunks(2, seed=10))
    marker = path / MARKER_NAME
    fields = json.loads(marker.read_text())
    fields["version"] = version
    marker.write_text(json.dumps(fields))
    with pytest.raises(
        UnsupportedStoreVersion,
        match=f"version {version}; this code reads version 5 only "
        r"\(an older format: move the directory away",
    ):
        LocalStore(path, OVERLAY)


def damage(path: Path, slot: int) -> None:
    """Zero one slot, as a power cut that lost the slot's write but kept the index could leave it."""
    with open(path / CHUNK_FILE_NAME, "r+b") as file:
        file.seek(slot * SLOT_SIZE)
        file.write(bytes(SLOT_SIZE))


def test_a_damaged_chunk_is_dropped_when_found_and_can_be_stored_again(tmp_path: Path) -> None:
    path = tmp_path / "s"
    chunks = random_chunks(30, seed=11)
    filled(path, chunks)
    victim = chunks[7]
    with LocalStore(path, OVERLAY) as store:
        bin = store.bin_of(victim.address)
        ids = {address: bin_id for bin_id, address in store.iter_bin(bin, 1)}
        victim_id = ids[victim.address]
        cursor = store.cursor(bin)
        damage(path, 7)
        with pytest.raises(ChunkDamaged):
            store.get(victim.address)
        assert len(store) == 29 and not store.has(victim.address)
        with pytest.raises(ChunkNotFound):
            store.get(victim.address)
        assert victim.address not in [address for _, address in store.iter_bin(bin, 1)]
        assert store.cursor(bin) == cursor, "a hole, not a rewound bin"
    with LocalStore(path, OVERLAY) as store:
        assert len(store) == 29 and not store.has(victim.address)
        assert store.put(victim)
        assert len(store) == 30 and store.get(victim.address) == victim
        again = [bin_id for bin_id, address in store.iter_bin(bin, 1) if address == victim.address]
        assert again == [cursor + 1] and victim_id != cursor + 1
        assert [store.get(chunk.address) for chunk in chunks] == chunks
    assert (path / CHUNK_FILE_NAME).stat().st_size == 31 * SLOT_SIZE, "the damaged slot stays taken"


def test_check_slot_finds_a_lost_slot_and_a_damaged_payload(tmp_path: Path) -> None:
    path = tmp_path / "s"
    chunks = random_chunks(5, seed=12)
    filled(path, chunks)
    with LocalStore(path, OVERLAY) as store:
        store.check_slot(chunks[3].address)
        damage(path, 3)
        with pytest.raises(ChunkDamaged, match=chunks[3].address.hex()):
            store.check_slot(chunks[3].address)
        with pytest.raises(ChunkNotFound):
            store.check_slot(chunks[3].address)
        flip(path, 1, SLOT_HEADER_SIZE + 20)
        with pytest.raises(ChunkDamaged, match="does not match its checksum"):
            store.check_slot(chunks[1].address)
        assert len(store) == 3 and not store.has(chunks[1].address)
        store.check_slot(chunks[4].address)
        assert store.statistics().dropped == 2


def flip(path: Path, slot: int, offset: int, mask: int = 0x01) -> None:
    """Flip bits of one byte of a slot, as bit rot would."""
    with open(path / CHUNK_FILE_NAME, "r+b") as file:
        file.seek(slot * SLOT_SIZE + offset)
        byte = file.read(1)[0]
        file.seek(slot * SLOT_SIZE + offset)
        file.write(bytes((byte ^ mask,)))


@pytest.mark.parametrize(
    "where",
    [0, 31, 32, 39, 40, 47, 48, 40 + 2048, 40 + 4103],
    ids=["address", "address-end", "checksum", "checksum-end", "span", "span-end", "payload", "mid", "last"],
)
def test_a_flipped_bit_in_a_slot_is_never_served(tmp_path: Path, where: int) -> None:
    path = tmp_path / "s"
    chunks = full_chunks(4, seed=13)
    filled(path, chunks)
    with LocalStore(path, OVERLAY) as store:
        flip(path, 2, where)
        with pytest.raises(ChunkDamaged) as info:
            store.get(chunks[2].address)
        assert info.value.slot == 2 and info.value.address == chunks[2].address
        with pytest.raises(ChunkNotFound):
            store.get(chunks[2].address)
        others = [c for c in chunks if c != chunks[2]]
        assert [store.get(c.address) for c in others] == others
        assert not store.has(chunks[2].address) and store.statistics().dropped == 1
        victim_bin = store.bin_of(chunks[2].address)
        assert chunks[2].address not in [a for _, a in store.iter_bin(victim_bin, 1)]
        assert store.put(chunks[2]), "stored again, in a new slot"
        assert store.get(chunks[2].address) == chunks[2]


def test_a_flipped_byte_in_the_padding_harms_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s"
    chunks = random_chunks(3, seed=14, size=100)
    filled(path, chunks)
    flip(path, 1, SLOT_SIZE - 1, 0xFF)
    with LocalStore(path, OVERLAY) as store:
        assert [store.get(c.address) for c in chunks] == chunks


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.integers(0, 4096), min_size=1, max_size=6),
    victim=st.integers(0, 5),
    position=st.floats(0, 1, exclude_max=True),
    mask=st.integers(1, 255),
)
def test_property_get_never_returns_other_bytes_than_were_put(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], victim: int, position: float, mask: int
) -> None:
    """Damage any bits of one byte in the covered part of a slot (address, checksum, data): get
    raises ChunkDamaged for that chunk, returns every other chunk intact, and nothing else."""
    path = tmp_path_factory.mktemp("rot") / "s"
    rng = random.Random(len(sizes))
    chunks = list({c.address: c for c in (Chunk.from_payload(rng.randbytes(n)) for n in sizes)}.values())
    victim %= len(chunks)
    filled(path, chunks)
    with LocalStore(path, OVERLAY) as store:
        flip(path, victim, int(position * (SLOT_HEADER_SIZE + len(chunks[victim].data))), mask)
        for slot, chunk in enumerate(chunks):
            if slot == victim:
                with pytest.raises(ChunkDamaged):
                    store.get(chunk.address)
            else:
                assert store.get(chunk.address) == chunk
        assert len(store) == len(chunks) - 1


@pytest.mark.parametrize("interleaved", [False, True], ids=["consecutive slots", "interleaved bins"])
def test_offerable_marks_holes_and_drops_damaged_chunks_as_check_slot_does(
    tmp_path: Path, interleaved: bool
) -> None:
    """What an upstream may offer of a range: every entry of the bin's log, a hole for an evicted
    chunk and for one whose slot is damaged (lost or rotted), which is dropped on the way; the
    bin's chunks in consecutive slots (checked a run at a time) or each alone."""
    path = tmp_path / "s"
    overlay = bytes(32)
    pool = full_chunks(40, seed=13)
    chunks = [c for c in pool if c.address[0] >= 0x80][:6]  # bin 0 of the overlay
    others = [c for c in pool if c.address[0] < 0x80][:6]
    stored = [c for pair in zip(chunks, others, strict=True) for c in pair] if interleaved else chunks
    slot = {c.address: i for i, c in enumerate(stored)}
    with LocalStore(path, overlay) as store:
        store.put_many(stored)
        assert store.cursor(0) == 6
        entries, damaged, slots = store.offerable(0, 1, 6)
        assert entries == [(c.address, False) for c in chunks] and damaged == []
        assert slots == {c.address: (slot[c.address], len(c.data)) for c in chunks}
        assert store.evict([chunks[0].address]) == 1
        damage(path, slot[chunks[2].address])  # a lost write: the slot holds no address
        flip(path, slot[chunks[4].address], SLOT_HEADER_SIZE + 100)  # bit rot in the payload
        entries, damaged, slots = store.offerable(0, 1, 6)
        assert [hole for _, hole in entries] == [True, False, True, False, True, False]
        assert [address for address, _ in entries] == [c.address for c in chunks], "holes keep their address"
        assert [exc.address for exc in damaged] == [chunks[2].address, chunks[4].address]
        assert "holds 0000" in str(damaged[0]) and "does not match its checksum" in str(damaged[1])
        assert slots == {c.address: (slot[c.address], 4104) for c in (chunks[1], chunks[3], chunks[5])}
        assert store.statistics().dropped == 2 and not store.has(chunks[2].address)
        assert store.logs is not None and store.logs.entries(0, 1, 6) == entries, "the log's holes, now"
        assert store.offerable(0, 1, 6) == (entries, [], slots), "dropped once: a hole from then on"
        assert store.offerable(0, 3, 4).entries == entries[2:4]
        with pytest.raises(ValueError, match="not 7"):
            store.offerable(0, 1, 7)


def test_offerable_passes_over_the_ranges_it_is_told_without_reading_their_slots(tmp_path: Path) -> None:
    """Entries the downstream gave us (syncer/given.py) are holes of the offer; their slots are
    not read, so a damaged one among them is neither found nor dropped here."""
    path = tmp_path / "s"
    overlay = bytes(32)
    chunks = [c for c in full_chunks(40, seed=16) if c.address[0] >= 0x80][:6]  # bin 0
    with LocalStore(path, overlay) as store:
        store.put_many(chunks)
        flip(path, 3, SLOT_HEADER_SIZE + 100)  # damaged, but passed over
        entries, damaged, slots = store.offerable(0, 1, 6, [(2, 4)])
        assert entries == [(c.address, 1 < i < 5) for i, c in enumerate(chunks, 1)]
        assert damaged == [] and set(slots) == {chunks[0].address, chunks[4].address, chunks[5].address}
        assert store.has(chunks[3].address)
        with pytest.raises(ValueError, match="not within"):
            store.offerable(0, 2, 6, [(1, 2)])


def test_get_at_reads_the_slot_an_offer_found_and_else_asks_the_index(tmp_path: Path) -> None:
    """A chunk is delivered from the slot its offer found it in while the slot holds it intact
    (its address, and data matching its checksum); otherwise (the slot reused, the chunk stored
    again elsewhere, or damaged) `get` decides."""
    path = tmp_path / "s"
    chunks = full_chunks(6, seed=14)
    with LocalStore(path, OVERLAY) as store:
        store.put_many(chunks[:4])
        size = len(chunks[0].data)
        assert store.get_at(chunks[1].address, 1, size) == chunks[1]
        assert store.get_at(chunks[1].address, 2, size) == chunks[1], "a wrong slot: the index's"
        assert store.evict([chunks[0].address]) == 1
        # removed, its slot not written again yet: the data there is still intact, the chunk's
        assert store.get_at(chunks[0].address, 0, size) == chunks[0]
        store.put_many([chunks[4]])  # takes the free slot 0
        with pytest.raises(ChunkNotFound):
            store.get_at(chunks[0].address, 0, size)
        assert store.get_at(chunks[4].address, 0, size) == chunks[4]
        flip(path, 3, SLOT_HEADER_SIZE + 7)
        with pytest.raises(ChunkDamaged, match="does not match its checksum"):
            store.get_at(chunks[3].address, 3, size)
        assert not store.has(chunks[3].address) and store.statistics().dropped == 1


def test_offerable_teaches_the_index_where_offered_chunks_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk synced out is offered back soon (two neighbours pull each other's bins): its `has`
    then needs no page read, and the answer is the index's own."""
    path = tmp_path / "s"
    overlay = bytes(32)
    chunks = [c for c in full_chunks(40, seed=15) if c.address[0] >= 0x80][:5]  # bin 0
    with LocalStore(path, overlay) as store:
        store.put_many(chunks)
        assert store.evict([chunks[1].address]) == 1
    with LocalStore(path, overlay) as store:  # reopened: nothing recent
        index = store._index
        expected = {c.address: index.get(c.address) for c in chunks}
        index._recent.clear()
        store.offerable(0, 1, 5)
        reads = counted_reads(index, monkeypatch)
        assert [index.get(c.address) for c in chunks] == [expected[c.address] for c in chunks]
        assert reads == [index._page_of(chunks[1].address)], "only the hole is looked up"
        assert [store.has(c.address) for c in chunks] == [True, False, True, True, True]


def test_check_run_reports_each_damaged_slot_of_a_run_as_read_would(tmp_path: Path) -> None:
    path = tmp_path / "s"
    chunks = full_chunks(4, seed=16)
    with LocalStore(path, OVERLAY) as store:
        store.put_many(chunks)
    flip(path, 1, 3)  # in the address
    flip(path, 2, SLOT_HEADER_SIZE + 4000)  # in the payload
    chunk_file = ChunkFile(str(path), 4)
    try:
        run = [(c.address, len(c.data)) for c in chunks] + [(chunks[0].address, 4104)]  # slot 4: none
        found = chunk_file.check_run(0, run)
        assert found[0] is None and found[3] is None
        assert [str(found[i]) == str(_raised(chunk_file, i, *run[i])) for i in (1, 2, 4)] == [True] * 3
        assert "does not match its checksum" in str(found[2]) and "holds nothing" in str(found[4])
    finally:
        chunk_file.close()


def _raised(chunk_file: ChunkFile, slot: int, address: bytes, length: int) -> ChunkDamaged:
    with pytest.raises(ChunkDamaged) as info:
        chunk_file.read(slot, length, address)
    return info.value
