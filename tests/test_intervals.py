"""Tests of syncer.intervals: table-driven seed cases, a naive-set model, and the interval store."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pot import MAX_PO, proximity
from syncer.interval_store import CorruptState, IntervalStore, _upstream_bins
from syncer.intervals import MAX_ID, Intervals


def make(ranges: Iterable[tuple[int, int]], floor: int = 1) -> Intervals:
    iv = Intervals(floor)
    for s, e in ranges:
        iv.add(s, e)
    return iv


# --- table-driven cases -------------------------------------------------------------------------

NEXT_CASES = [
    # (ranges, ceiling, expected)
    ([], 0, (1, 0, False)),
    ([], 10, (1, 10, False)),
    ([(1, 5)], 0, (6, 0, False)),
    ([(1, 5)], 10, (6, 10, False)),
    ([(1, 5)], 6, (6, 6, False)),
    ([(1, 5)], 5, (5, 5, True)),
    ([(1, 5)], 3, (3, 3, True)),
    ([(1, 5), (8, 9)], 0, (6, 7, False)),
    ([(1, 5), (8, 9)], 7, (6, 7, False)),
    ([(1, 5), (8, 9)], 6, (6, 6, False)),
    ([(1, 5), (8, 9)], 20, (6, 7, False)),
    ([(3, 4)], 0, (1, 2, False)),
    ([(3, 4)], 1, (1, 1, False)),
    ([(3, 4)], 10, (1, 2, False)),
]


@pytest.mark.parametrize(("ranges", "ceiling", "expected"), NEXT_CASES)
def test_next_examples(ranges: list[tuple[int, int]], ceiling: int, expected: tuple[int, int, bool]) -> None:
    assert make(ranges).next(ceiling) == expected


def test_next_default_ceiling_is_open_ended() -> None:
    assert make([(1, 5)]).next() == (6, 0, False)


def test_next_ceiling_below_floor_is_empty() -> None:
    assert Intervals(5).next(3) == (3, 3, True)
    assert Intervals(5).next(5) == (5, 5, False)


def test_next_negative_ceiling_rejected() -> None:
    with pytest.raises(ValueError, match="ceiling -1"):
        Intervals().next(-1)


SEED = [(1, 6), (10, 12), (18, 20)]  # seed 000: received 1..6, 10..12, 18..20

# The four update kinds of seed 000, as the gap list after receiving the given numbers in order.
GAP_CASES = [
    ([], [(7, 9), (13, 17), (21, None)]),
    # left-side contraction
    ([7], [(8, 9), (13, 17), (21, None)]),
    ([21], [(7, 9), (13, 17), (22, None)]),
    # right-side contraction
    ([17], [(7, 9), (13, 16), (21, None)]),
    ([9], [(7, 8), (13, 17), (21, None)]),
    # division
    ([15], [(7, 9), (13, 14), (16, 17), (21, None)]),
    ([40], [(7, 9), (13, 17), (21, 39), (41, None)]),
    # full contraction
    ([8, 7], [(9, 9), (13, 17), (21, None)]),
    ([8, 7, 9], [(13, 17), (21, None)]),
    # a duplicate changes nothing
    ([3, 11, 20], [(7, 9), (13, 17), (21, None)]),
]


@pytest.mark.parametrize(("received", "expected"), GAP_CASES)
def test_seed_gap_list_updates(received: list[int], expected: list[tuple[int, int | None]]) -> None:
    iv = make(SEED)
    for n in received:
        iv.add(n)
    assert iv.gaps() == expected


def test_seed_duplicate_checks() -> None:
    iv = make(SEED)
    assert 10 in iv and 6 in iv and 20 in iv
    assert 7 not in iv and 17 not in iv and 21 not in iv and 10**9 not in iv
    assert 0 not in iv and -1 not in iv


ADD_CASES = [
    # (floor, adds, expected ranges)
    (1, [(1, 3), (4, 6)], [(1, 6)]),  # adjacent on the right
    (1, [(4, 6), (1, 3)], [(1, 6)]),  # adjacent on the left
    (1, [(1, 3), (5, 6)], [(1, 3), (5, 6)]),  # one missing ID keeps them apart
    (1, [(1, 3), (5, 6), (4, 4)], [(1, 6)]),  # filling the gap joins both
    (1, [(2, 3), (6, 7), (10, 11), (1, 12)], [(1, 12)]),  # swallows several
    (1, [(2, 3), (6, 7), (10, 11), (3, 6)], [(2, 7), (10, 11)]),
    (1, [(5, 9), (6, 7)], [(5, 9)]),  # contained
    (1, [(5, 9), (3, 12)], [(3, 12)]),  # containing
    (1, [(7, 7)], [(7, 7)]),
    (1, [(0, 2)], [(1, 2)]),  # zero is below the default floor
    (5, [(1, 3)], []),  # entirely below the floor
    (5, [(1, 4)], []),
    (5, [(1, 5)], [(5, 5)]),  # clipped
    (5, [(3, 8), (10, 10)], [(5, 8), (10, 10)]),
    (1, [(MAX_ID, MAX_ID), (1, 1)], [(1, 1), (MAX_ID, MAX_ID)]),
]


@pytest.mark.parametrize(("floor", "adds", "expected"), ADD_CASES)
def test_add(floor: int, adds: list[tuple[int, int]], expected: list[tuple[int, int]]) -> None:
    assert make(adds, floor).ranges == expected


def test_add_single_id_default_end() -> None:
    iv = Intervals()
    iv.add(3)
    iv.add(4)
    assert iv.ranges == [(3, 4)]


def test_add_start_after_end_rejected() -> None:
    iv = make([(1, 2)])
    with pytest.raises(ValueError, match="start 5 > end 3"):
        iv.add(5, 3)
    assert iv.ranges == [(1, 2)]


def test_add_beyond_max_id_rejected() -> None:
    with pytest.raises(ValueError, match="exceeds"):
        Intervals().add(1, MAX_ID + 1)


@pytest.mark.parametrize("floor", [0, -1, MAX_ID + 1])
def test_bad_floor_rejected(floor: int) -> None:
    with pytest.raises(ValueError, match=f"floor {floor}"):
        Intervals(floor)


def test_gaps_and_last_of_empty_set() -> None:
    assert Intervals().gaps() == [(1, None)]
    assert Intervals(4).gaps() == [(4, None)]
    assert Intervals(4).last() == 0
    assert make([(5, 5)], floor=3).gaps() == [(3, 4), (6, None)]


def test_last_and_count() -> None:
    iv = make(SEED)
    assert iv.last() == 20
    assert iv.count() == 6 + 3 + 3
    assert Intervals().count() == 0


MERGE_CASES = [
    # (floor a, ranges a, floor b, ranges b, expected ranges of a)
    (4, [(5, 6)], 1, [(1, 4), (8, 9)], [(4, 6), (8, 9)]),  # clipped to a's floor, then adjacent
    (4, [(7, 7)], 1, [(1, 2)], [(7, 7)]),  # b's range entirely below a's floor
    (4, [], 1, [(1, 3), (5, 5)], [(5, 5)]),
    (1, [(3, 4)], 3, [(5, 5), (9, 12)], [(3, 5), (9, 12)]),
    (1, [(1, 2), (6, 7)], 1, [(3, 5)], [(1, 7)]),  # fills the only gap
    (1, [(1, 20)], 1, [(3, 5), (8, 9)], [(1, 20)]),  # contained
    (1, [(3, 5), (8, 9)], 1, [(1, 20)], [(1, 20)]),  # containing
    (1, [(1, 1), (10, 10)], 1, [], [(1, 1), (10, 10)]),
]


@pytest.mark.parametrize(("floor_a", "ranges_a", "floor_b", "ranges_b", "expected"), MERGE_CASES)
def test_merge(
    floor_a: int,
    ranges_a: list[tuple[int, int]],
    floor_b: int,
    ranges_b: list[tuple[int, int]],
    expected: list[tuple[int, int]],
) -> None:
    a = make(ranges_a, floor_a)
    b = make(ranges_b, floor_b)
    a.merge(b)
    assert a == make(expected, floor_a)
    assert a.ranges == expected
    assert b == make(ranges_b, floor_b)  # other untouched


def test_equality_repr_copy() -> None:
    a = make([(1, 3)])
    assert a == make([(1, 2), (3, 3)])
    assert make([(3, 4)], floor=1) != make([(3, 4)], floor=2)  # same ranges, other floor
    assert Intervals(1) != Intervals(2)
    assert a != make([(1, 4)])
    assert a != [(1, 3)]
    assert repr(a) == "Intervals(floor=1, ranges=[(1, 3)])"
    b = a.copy()
    b.add(5)
    assert a.ranges == [(1, 3)]
    assert b.ranges == [(1, 3), (5, 5)]


def test_ranges_is_a_copy() -> None:
    a = make([(1, 3)])
    a.ranges.append((9, 9))
    assert a.ranges == [(1, 3)]


# --- byte format ----------------------------------------------------------------------------------


def test_encoding_golden() -> None:
    # version 1, floor 1, 3 ranges; (gap, length - 1) per range: (1-1, 5), (10-6-2, 2), (18-12-2, 2)
    assert make(SEED).to_bytes() == bytes([1, 1, 3, 0, 5, 2, 2, 4, 2])
    assert Intervals().to_bytes() == bytes([1, 1, 0])
    # floor 300 is the varint ac 02
    assert make([(300, 300)], floor=300).to_bytes() == bytes([1, 0xAC, 0x02, 1, 0, 0])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (bytes([2, 1, 0]), "unknown interval encoding version 2"),
        (bytes([0, 1, 0]), "unknown interval encoding version 0"),
        (bytes([1]), "truncated varint for floor"),
        (bytes([1, 0x81]), "truncated varint for floor"),
        (bytes([1, 1]), "truncated varint for range count"),
        (bytes([1, 1, 1, 0]), "range count 1 exceeds"),
        (bytes([1, 1, 2, 0, 5, 0]), "range count 2 exceeds"),
        (bytes([1, 1, 1, 0, 0x85]), "truncated varint for length of range 0"),
        (bytes([1, 1, 0, 7]), "1 trailing bytes"),
        (bytes([1, 1, 1, 0, 5, 0, 0]), "2 trailing bytes"),
        (bytes([1, 0, 0]), "floor 0 in interval encoding"),
        (bytes([1, 0x81, 0x00, 0]), "non-minimal varint for floor"),
        (bytes([1, 1, 0x80, 0x00]), "non-minimal varint for range count"),
        (bytes([1]) + bytes([0xFF] * 10) + bytes([1, 0]), "longer than 10 bytes"),
        (bytes([1]) + bytes([0xFF] * 9) + bytes([0x02, 0]), "exceeds 64 bits"),
        # floor MAX_ID, one range of length 2: ends beyond MAX_ID
        (bytes([1]) + bytes([0xFF] * 9) + bytes([0x01, 1, 0, 1]), "beyond the largest ID"),
    ],
)
def test_from_bytes_rejects(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Intervals.from_bytes(data)


def test_from_bytes_max_values_round_trip() -> None:
    iv = make([(MAX_ID - 3, MAX_ID - 2), (MAX_ID, MAX_ID)], floor=MAX_ID - 5)
    assert Intervals.from_bytes(iv.to_bytes()) == iv


# --- properties against a naive model ------------------------------------------------------------

TOP = 300
floors = st.integers(min_value=1, max_value=5)
# Starts drawn mostly near the floors as well as anywhere, so edge cases around the floor come up often.
adds = st.lists(
    st.tuples(
        st.integers(min_value=-2, max_value=8) | st.integers(min_value=-2, max_value=TOP),
        st.integers(min_value=0, max_value=25),
    ).map(lambda t: (t[0], min(t[0] + t[1], TOP))),
    max_size=30,
)


def model_add(model: set[int], floor: int, start: int, end: int) -> None:
    model.update(range(max(start, floor), end + 1))


def model_ranges(model: set[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n in sorted(model):
        if out and out[-1][1] == n - 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def model_next(model: set[int], floor: int, ceiling: int) -> tuple[int, int, bool]:
    start = floor
    while start in model:
        start += 1
    above = [n for n in model if n > start]
    end = min(above) - 1 if above else 0
    if ceiling == 0:
        return start, end, False
    empty = all(n in model for n in range(floor, ceiling + 1))
    return min(start, ceiling), ceiling if end == 0 else min(end, ceiling), empty


def model_gaps(model: set[int], floor: int) -> list[tuple[int, int | None]]:
    top = max(model, default=floor - 1)
    out: list[tuple[int, int | None]] = [(s, e) for s, e in model_ranges(set(range(floor, top + 1)) - model)]
    out.append((top + 1, None))
    return out


def build(floor: int, ops: list[tuple[int, int]]) -> tuple[Intervals, set[int]]:
    iv = Intervals(floor)
    model: set[int] = set()
    for s, e in ops:
        iv.add(s, e)
        model_add(model, floor, s, e)
    return iv, model


def check_against_model(iv: Intervals, model: set[int], floor: int, ceiling: int) -> None:
    assert iv.floor == floor
    assert iv.ranges == model_ranges(model)
    assert iv.last() == max(model, default=0)
    assert iv.count() == len(model)
    assert iv.gaps() == model_gaps(model, floor)
    assert iv.next() == model_next(model, floor, 0)
    assert iv.next(ceiling) == model_next(model, floor, ceiling)
    for n in range(-1, TOP + 3):
        assert (n in iv) == (n in model)
    encoded = iv.to_bytes()
    decoded = Intervals.from_bytes(encoded)
    assert decoded == iv
    assert decoded.to_bytes() == encoded


@given(floors, adds, st.integers(min_value=1, max_value=TOP + 10))
def test_add_matches_model(floor: int, ops: list[tuple[int, int]], ceiling: int) -> None:
    iv, model = build(floor, ops)
    check_against_model(iv, model, floor, ceiling)


@given(floors, adds, floors, adds, st.integers(min_value=1, max_value=TOP + 10))
def test_merge_matches_model(
    floor_a: int, ops_a: list[tuple[int, int]], floor_b: int, ops_b: list[tuple[int, int]], ceiling: int
) -> None:
    a, model_a = build(floor_a, ops_a)
    b, model_b = build(floor_b, ops_b)
    b_before = b.copy()
    a.merge(b)
    check_against_model(a, {n for n in model_a | model_b if n >= floor_a}, floor_a, ceiling)
    assert b == b_before


@given(floors, adds, adds)
def test_copy_is_independent(floor: int, ops: list[tuple[int, int]], more: list[tuple[int, int]]) -> None:
    iv, model = build(floor, ops)
    dup = iv.copy()
    assert dup == iv
    for s, e in more:
        dup.add(s, e)
    assert iv.ranges == model_ranges(model)


def _reencodes_or_value_error(data: bytes) -> None:
    try:
        iv = Intervals.from_bytes(data)
    except ValueError:
        return
    assert iv.to_bytes() == data
    # a decoded set is a valid set: sorted, disjoint, non-adjacent, at or above the floor
    ranges = iv.ranges
    assert all(iv.floor <= s <= e <= MAX_ID for s, e in ranges)
    assert all(prev[1] + 1 < cur[0] for prev, cur in pairwise(ranges))


@given(st.binary(max_size=40))
def test_from_bytes_garbage(data: bytes) -> None:
    _reencodes_or_value_error(data)


@given(st.binary(max_size=30))
def test_from_bytes_garbage_with_valid_version(data: bytes) -> None:
    _reencodes_or_value_error(b"\x01" + data)


@given(floors, adds, st.data())
def test_from_bytes_mutated(floor: int, ops: list[tuple[int, int]], data: st.DataObject) -> None:
    encoded = bytearray(build(floor, ops)[0].to_bytes())
    kind = data.draw(st.sampled_from(["flip", "truncate", "append"]))
    if kind == "flip":
        i = data.draw(st.integers(min_value=0, max_value=len(encoded) - 1))
        encoded[i] ^= data.draw(st.integers(min_value=1, max_value=255))
    elif kind == "truncate":
        del encoded[data.draw(st.integers(min_value=0, max_value=len(encoded) - 1)) :]
    else:
        encoded += data.draw(st.binary(min_size=1, max_size=4))
    _reencodes_or_value_error(bytes(encoded))


# --- IntervalStore --------------------------------------------------------------------------------


class DictState:
    """An in-memory StateStore that logs every write, so tests can check atomicity."""

    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}
        self.writes: list[str] = []

    def get_state(self, key: bytes) -> bytes | None:
        return self.data.get(key)

    def put_state(self, key: bytes, value: bytes) -> None:
        self.writes.append("put")
        self.data[key] = value

    def delete_state(self, key: bytes) -> None:
        self.writes.append("delete")
        self.data.pop(key, None)

    def iter_state(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        for key in sorted(self.data):
            if key.startswith(prefix):
                yield key, self.data[key]

    def write_state_batch(self, puts: Mapping[bytes, bytes], deletes: Iterable[bytes] = ()) -> None:
        self.writes.append("batch")
        for key in deletes:
            self.data.pop(key, None)
        self.data.update(puts)


A = bytes(range(32))
B = bytes(range(1, 33))


@pytest.fixture
def state() -> DictState:
    return DictState()


@pytest.fixture
def store(state: DictState) -> IntervalStore:
    return IntervalStore(state)


def test_get_missing_is_empty(store: IntervalStore) -> None:
    got = store.get(A, 3)
    assert got == Intervals(1)
    assert got.next() == (1, 0, False)


def test_put_get_per_peer_and_bin(store: IntervalStore, state: DictState) -> None:
    store.put(A, 0, make([(1, 10)]))
    store.put(A, 31, make([(5, 6)], floor=2))
    store.put(B, 0, make([(1, 3)]))
    assert store.get(A, 0) == make([(1, 10)])
    assert store.get(A, 31) == make([(5, 6)], floor=2)
    assert store.get(B, 0) == make([(1, 3)])
    assert store.get(B, 31) == Intervals()
    # documented key layout
    assert state.data[b"iv/" + bytes([32]) + A + bytes([31])] == make([(5, 6)], floor=2).to_bytes()
    store.put(A, 0, make([(1, 12)]))
    assert store.get(A, 0) == make([(1, 12)])


def test_bins_and_peers(store: IntervalStore) -> None:
    assert store.bins(A) == {}
    assert store.peers() == []
    store.put(B, 7, make([(1, 2)]))
    store.put(B, 2, make([(4, 4)]))
    store.put(A, 7, make([(9, 9)]))
    store.set_epoch(b"\xff", 1)  # a peer known only by its epoch
    assert store.bins(B) == {2: make([(4, 4)]), 7: make([(1, 2)])}
    assert store.bins(A) == {7: make([(9, 9)])}
    assert store.peers() == [A, B, b"\xff"]


def test_peer_that_is_a_prefix_of_another(store: IntervalStore) -> None:
    short, long = b"\x01", b"\x01\x05"
    store.put(short, 5, make([(1, 1)]))
    store.put(long, 3, make([(2, 2)]))
    store.set_epoch(short, 4)
    store.set_epoch(long, 6)
    assert store.bins(short) == {5: make([(1, 1)])}
    assert store.bins(long) == {3: make([(2, 2)])}
    assert store.peers() == [short, long]
    store.reset(short)
    assert store.bins(long) == {3: make([(2, 2)])}
    assert store.epoch(long) == 6
    assert store.peers() == [long]


def test_reset_one_peer_atomically(store: IntervalStore, state: DictState) -> None:
    store.put(A, 1, make([(1, 5)]))
    store.put(A, 2, make([(1, 7)]))
    store.set_epoch(A, 100)
    store.put(B, 1, make([(1, 9)]))
    store.set_epoch(B, 200)
    state.writes.clear()
    store.reset(A)
    assert state.writes == ["batch"]
    assert store.bins(A) == {}
    assert store.get(A, 1) == Intervals()
    assert store.epoch(A) is None
    assert store.bins(B) == {1: make([(1, 9)])}
    assert store.epoch(B) == 200
    assert store.peers() == [B]


def test_epoch_and_set_epoch(store: IntervalStore, state: DictState) -> None:
    assert store.epoch(A) is None
    store.put(A, 1, make([(1, 5)]))
    store.set_epoch(A, 2**63 + 5)
    assert store.epoch(A) == 2**63 + 5
    assert state.data[b"ep/" + bytes([32]) + A] == (2**63 + 5).to_bytes(8, "big")
    store.set_epoch(A, 0)
    assert store.epoch(A) == 0
    assert store.get(A, 1) == make([(1, 5)])  # set_epoch keeps intervals


def test_check_epoch_first_time_records(store: IntervalStore) -> None:
    store.put(A, 1, make([(1, 5)]))
    assert store.check_epoch(A, 7) is False
    assert store.epoch(A) == 7
    assert store.get(A, 1) == make([(1, 5)])


def test_check_epoch_same_keeps(store: IntervalStore, state: DictState) -> None:
    store.check_epoch(A, 7)
    store.put(A, 1, make([(1, 5)]))
    state.writes.clear()
    assert store.check_epoch(A, 7) is False
    assert state.writes == []
    assert store.get(A, 1) == make([(1, 5)])


def test_check_epoch_changed_voids_intervals(store: IntervalStore, state: DictState) -> None:
    store.check_epoch(A, 7)
    store.put(A, 1, make([(1, 5)]))
    store.put(A, 9, make([(1, 2)]))
    store.check_epoch(B, 7)
    store.put(B, 1, make([(1, 3)]))
    state.writes.clear()
    assert store.check_epoch(A, 8) is True
    assert state.writes == ["batch"]
    assert store.epoch(A) == 8
    assert store.bins(A) == {}
    assert store.get(A, 1) == Intervals()
    assert store.bins(B) == {1: make([(1, 3)])}
    assert store.epoch(B) == 7
    # an older epoch is a change too
    store.put(A, 1, make([(1, 1)]))
    assert store.check_epoch(A, 3) is True
    assert store.bins(A) == {}


@pytest.mark.parametrize("bin", [-1, 32, 256])
def test_bad_bin_rejected(store: IntervalStore, bin: int) -> None:
    with pytest.raises(ValueError, match=f"bin {bin}"):
        store.get(A, bin)
    with pytest.raises(ValueError, match=f"bin {bin}"):
        store.put(A, bin, Intervals())


@pytest.mark.parametrize("peer", [b"", bytes(256)])
def test_bad_peer_rejected(store: IntervalStore, peer: bytes) -> None:
    with pytest.raises(ValueError, match="peer"):
        store.get(peer, 0)
    with pytest.raises(ValueError, match="peer"):
        store.reset(peer)
    with pytest.raises(ValueError, match="peer"):
        store.check_epoch(peer, 1)


@pytest.mark.parametrize("epoch", [-1, MAX_ID + 1])
def test_bad_epoch_rejected(store: IntervalStore, epoch: int) -> None:
    with pytest.raises(ValueError, match=f"epoch {epoch}"):
        store.set_epoch(A, epoch)
    with pytest.raises(ValueError, match=f"epoch {epoch}"):
        store.check_epoch(A, epoch)
    assert store.epoch(A) is None


def test_corrupt_intervals_named(store: IntervalStore, state: DictState) -> None:
    store.put(A, 5, make([(1, 5)]))
    state.data[b"iv/" + bytes([32]) + A + bytes([5])] = b"\x01\x01\x01"
    with pytest.raises(CorruptState, match=f"peer {A.hex()} bin 5: .*range count 1") as info:
        store.get(A, 5)
    assert isinstance(info.value, ValueError)
    assert info.value.peer == A and info.value.bin == 5
    with pytest.raises(CorruptState, match=f"peer {A.hex()} bin 5"):
        store.bins(A)


@pytest.mark.parametrize("tail", [bytes([5, 0]), bytes([32]), bytes([255])])
def test_unexpected_interval_key_named(store: IntervalStore, state: DictState, tail: bytes) -> None:
    store.put(A, 5, make([(1, 5)]))
    state.data[b"iv/" + bytes([32]) + A + tail] = make([(1, 2)]).to_bytes()
    with pytest.raises(CorruptState, match=f"peer {A.hex()}: unexpected interval key"):
        store.bins(A)
    assert store.get(A, 5) == make([(1, 5)])


def test_peers_skips_keys_outside_the_layout(store: IntervalStore, state: DictState) -> None:
    store.put(A, 5, make([(1, 5)]))
    store.set_epoch(B, 3)
    for junk in [
        b"iv/",
        b"iv/" + bytes([0]) + bytes([1]),
        b"iv/" + bytes([4]) + b"ab",
        b"ep/" + bytes([1]) + b"xy",
    ]:
        state.data[junk] = b""
    assert store.peers() == [A, B]


def test_corrupt_epoch_named(store: IntervalStore, state: DictState) -> None:
    state.data[b"ep/" + bytes([32]) + A] = b"\x00\x01"
    with pytest.raises(CorruptState, match=f"peer {A.hex()}: stored epoch is 2 bytes"):
        store.epoch(A)
    with pytest.raises(CorruptState):
        store.check_epoch(A, 1)


# -- intervals reset after a power cut (issue 30 item 11) -----------------------------------------

addresses32 = st.binary(min_size=32, max_size=32)


@given(addresses32, addresses32, addresses32)
def test_a_lost_chunk_of_unknown_address_is_in_one_of_the_bins_reset(
    own: bytes, peer: bytes, chunk: bytes
) -> None:
    """Brute force: whatever the chunk's address, the peer's bin it is in is among those reset
    from only its bin in our store (and exactly that one when the address is known)."""
    ours, theirs = min(proximity(chunk, own), MAX_PO), min(proximity(chunk, peer), MAX_PO)
    assert theirs in _upstream_bins(own, peer, ours, None)
    assert _upstream_bins(own, peer, ours, chunk) == {theirs}
    if min(proximity(own, peer), MAX_PO) != ours:
        assert len(_upstream_bins(own, peer, ours, None)) == 1


def test_forget_lost_clears_the_bins_that_covered_a_lost_chunk_and_no_others() -> None:
    own, peer = bytes(32), b"\x80" + bytes(31)  # po 0: a chunk of our bin 3 is in its bin 0
    chunk = b"\x10" + bytes(31)  # po 3 to us, 0 to the peer
    state = IntervalStore(DictState())
    for bin in (0, 3):
        full = Intervals()
        full.add(1, 600)
        state.put(peer, bin, full)
    assert state.forget_lost(own, [(3, chunk)]) == 1
    assert state.get(peer, 0).ranges == [] and state.get(peer, 3).ranges == [(1, 600)]
    assert state.forget_lost(own, [(3, None)]) == 0  # bin 0 is clear already; bin 3 never held it
