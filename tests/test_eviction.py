"""LocalStore.evict and slot reuse: against a naive model, across clean and unclean reopens."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunks import Chunk
from localstore import UnsupportedStoreVersion
from localstore.chunkfile import CHUNK_FILE_NAME, SLOT_SIZE
from localstore.pullindex import ENTRY_SIZE, HOLE_SLOT, pull_file_name
from localstore.slots import SlotMap, SlotSummaryError
from localstore.store import LocalStore
from localstore.storefiles import BINS, META_VERSION
from pot import proximity

OVERLAY = bytes(32)


def random_chunks(n: int, seed: int, size: int = 40) -> list[Chunk]:
    rng = random.Random(seed)
    return [Chunk.from_payload(rng.randbytes(size)) for _ in range(n)]


POOL = random_chunks(24, seed=21)


def bin_of(overlay: bytes, address: bytes) -> int:
    return min(proximity(overlay, address), 31)


operations = st.lists(
    st.one_of(
        st.tuples(st.just("put_many"), st.lists(st.integers(0, len(POOL) - 1), max_size=8)),
        st.tuples(st.just("evict"), st.lists(st.integers(0, len(POOL) - 1), max_size=8)),
        st.tuples(st.just("reopen"), st.none()),
        st.tuples(st.just("crash"), st.none()),
    ),
    max_size=40,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(overlay=st.binary(min_size=32, max_size=32), ops=operations)
def test_property_eviction_and_slot_reuse_match_a_model(
    overlay: bytes, ops: list[tuple[str, object]]
) -> None:
    """The model: a dict of live chunks and, per bin, the list of every address ever given a bin
    ID (an evicted one stays, as a hole). The file never has more slots than chunks were ever
    stored at once, because a put takes a free slot before it grows the file."""
    live: dict[bytes, bytes] = {}
    given_ids: dict[int, list[bytes]] = {b: [] for b in range(BINS)}
    holes: set[tuple[int, int]] = set()
    peak = 0

    def check(store: LocalStore) -> None:
        assert len(store) == len(live)
        assert store.cursors() == [len(given_ids[b]) for b in range(BINS)]
        assert store.bin_counts() == [sum(1 for a in live if bin_of(overlay, a) == b) for b in range(BINS)]
        for b in range(BINS):
            expected = [(i, a) for i, a in enumerate(given_ids[b], start=1) if (b, i) not in holes]
            assert list(store.iter_bin(b, 1)) == expected
        for chunk in POOL:
            assert store.has(chunk.address) == (chunk.address in live)
            if chunk.address in live:
                assert store.get(chunk.address).data == live[chunk.address]
        stats = store.statistics()
        assert stats.slots == peak, "slots are reused before the file grows"
        assert stats.free_slots == peak - len(live)

    with tempfile.TemporaryDirectory() as tmp:
        store = LocalStore(tmp, overlay)
        try:
            for op, arg in ops:
                if op == "put_many":
                    assert isinstance(arg, list)
                    new = 0
                    for i in arg:
                        chunk = POOL[i]
                        if chunk.address not in live:
                            live[chunk.address] = chunk.data
                            given_ids[bin_of(overlay, chunk.address)].append(chunk.address)
                            new += 1
                    assert store.put_many([POOL[i] for i in arg]) == new
                    peak = max(peak, len(live))
                elif op == "evict":
                    assert isinstance(arg, list)
                    expected = 0
                    for i in set(arg):
                        address = POOL[i].address
                        if address in live:
                            del live[address]
                            b = bin_of(overlay, address)
                            last = max(j for j, a in enumerate(given_ids[b], start=1) if a == address)
                            holes.add((b, last))
                            expected += 1
                    assert store.evict([POOL[i].address for i in arg]) == expected
                elif op == "reopen":
                    store.close()
                    store = LocalStore(tmp, overlay)
                else:  # a crash: the address index is not marked clean, the slot map not kept
                    store._index.mark_stale()
                    store.close()
                    store = LocalStore(tmp, overlay)
                check(store)
        finally:
            store.close()


def test_an_evicted_chunk_leaves_a_hole_keeping_its_address(tmp_path: Path) -> None:
    chunks = random_chunks(6, seed=3)
    with LocalStore(tmp_path / "s", OVERLAY) as store:
        store.put_many(chunks)
        victim = chunks[2]
        bin, bin_id = store.bin_of(victim.address), store._index.get(victim.address).bin_id  # type: ignore[union-attr]
        assert store.evict([victim.address, victim.address]) == 1, "counted once"
        assert store.statistics().evicted == 1
        assert victim.address not in [a for _, a in store.iter_bin(bin, 1)], "never offered again"
        assert store.put(victim), "it can be stored again"
        assert [i for i, a in store.iter_bin(bin, 1) if a == victim.address] == [store.cursor(bin)]
    raw = (tmp_path / "s" / pull_file_name(bin)).read_bytes()
    entry = raw[(bin_id - 1) * ENTRY_SIZE : bin_id * ENTRY_SIZE]
    assert entry[:32] == victim.address
    assert int.from_bytes(entry[32:38], "big") == HOLE_SLOT
    assert (tmp_path / "s" / CHUNK_FILE_NAME).stat().st_size == 6 * SLOT_SIZE, "its slot was reused"


def test_eviction_keeps_every_bin_log_root_across_a_clean_stop_and_a_crash(tmp_path: Path) -> None:
    """An evicted chunk's leaf stays (its address, as a hole): the provable-streams logs' roots,
    and the proofs signed over them, do not change; a rebuild after a crash finds the same."""
    from tests.test_binlog import bin_leaves, mth

    path = tmp_path / "s"
    with LocalStore(path, OVERLAY) as store:
        store.put_many(random_chunks(300, seed=4))
        assert store.logs is not None
        roots = [store.logs.root(b) for b in range(BINS)]
        victims = [a for b in range(BINS) for _, a in list(store.iter_bin(b, 1))[::3]]
        assert store.evict(victims) == len(victims)
        assert [store.logs.root(b) for b in range(BINS)] == roots
        bin = max(range(BINS), key=store.cursor)
        assert store.logs.root(bin) == mth(bin_leaves(store, bin))
        assert store.logs.leaf(bin, 1) == (next(a for a in victims if store.bin_of(a) == bin), True)
    with LocalStore(path, OVERLAY) as store:
        assert store.logs is not None and [store.logs.root(b) for b in range(BINS)] == roots
        store._index.mark_stale()  # a crash: everything derived is rebuilt at the next open
    with LocalStore(path, OVERLAY) as store:
        assert store.logs is not None and store.logs.rebuilt > 0
        assert [store.logs.root(b) for b in range(BINS)] == roots
        assert not any(store.has(a) for a in victims)


def test_a_store_of_format_4_is_refused(tmp_path: Path) -> None:
    import plyvel

    path = tmp_path / "s"
    LocalStore(path, OVERLAY).close()
    db = plyvel.DB(str(path))
    db.put(META_VERSION, (4).to_bytes(8, "big"))
    db.close()
    marker = path / "LOCALSTORE"
    marker.write_text(marker.read_text().replace('"version": 5', '"version": 4'))
    with pytest.raises(UnsupportedStoreVersion, match="version 4; this code reads version 5 only"):
        LocalStore(path, OVERLAY)


def test_slot_summary_round_trip_and_refusals() -> None:
    slots = SlotMap(10, [3, 0, 2], [7, 2, 9])
    raw = slots.to_bytes(generation=42)
    again = SlotMap.from_bytes(raw, 42, 10, 3)
    assert again.counts == [3, 0, 2] and sorted(again.free) == [2, 7, 9]
    assert again.allocate(4) == [2, 7, 9, 10], "lowest free first, then new slots"
    with pytest.raises(SlotSummaryError, match="another state"):
        SlotMap.from_bytes(raw, 43, 10, 3)
    with pytest.raises(SlotSummaryError, match="truncated"):
        SlotMap.from_bytes(raw[:5], 42, 10, 3)
    with pytest.raises(SlotSummaryError, match="past the end"):
        SlotMap.from_bytes(SlotMap(10, [0], [12]).to_bytes(1), 1, 10, 1)
