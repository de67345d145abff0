"""PeerTable: bins, known/connected bookkeeping, depth, saturation, the sync rule, snapshots."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kademlia import MAX_PO, STRATEGIES, PeerTable, get_strategy, neighbourhood_depth, suggest_peer, sync_bins
from pot import Pot, proximity


def a(bits: str) -> bytes:
    """A 1-byte address from its 8-bit string, e.g. ``a("10000001")``."""
    assert len(bits) == 8
    return bytes([int(bits, 2)])


BASE = a("00000000")


def fill(*bins: int) -> list[str]:
    """One peer per bin for base 00000000: bin b gets the address with only bit b set (fill(1): 01000000)."""
    return [f"{1 << (7 - b):08b}" for b in bins]


def table_of(connected: Sequence[str] = (), known: Sequence[str] = (), **kwargs: int) -> PeerTable:
    """A table with base 00000000: ``known`` learned first, then ``connected`` connected, in order."""
    t = PeerTable(BASE, **kwargs)
    for k in known:
        t.add_known(a(k))
    for c in connected:
        t.connect(a(c))
    return t


# -- brute-force model, straight from the definitions, independent of pot.proximity ---------------


def po_bits(x: bytes, y: bytes) -> int:
    """Leading common bits, by comparing bit strings."""
    xs = "".join(f"{b:08b}" for b in x)
    ys = "".join(f"{b:08b}" for b in y)
    n = 0
    while n < len(xs) and xs[n] == ys[n]:
        n += 1
    return n


def model_depth(base: bytes, connected: set[bytes], nsize: int, max_po: int) -> int:
    """min(the neighbourhood-size rule, every bin with no connected peer); known peers play no part."""

    def bin_(p: bytes) -> int:
        return min(po_bits(base, p), max_po)

    by_size = max(
        (d for d in range(max_po + 1) if sum(1 for p in connected if bin_(p) >= d) >= nsize),
        default=0,
    )
    empty = [b for b in range(max_po + 1) if not any(bin_(p) == b for p in connected)]
    return min([by_size, *empty])


# -- bins and bookkeeping ----------------------------------------------------------------------------


def test_bins_are_proximity_to_base_capped_at_max_po() -> None:
    t = PeerTable(BASE, max_po=3)
    assert t.bin_of(a("10000000")) == 0
    assert t.bin_of(a("01000000")) == 1
    assert t.bin_of(a("00100000")) == 2
    assert t.bin_of(a("00010000")) == 3
    assert t.bin_of(a("00000001")) == 3  # proximity 7, capped
    assert PeerTable(BASE).bin_of(a("00000001")) == 7


def test_bins_with_32_byte_addresses() -> None:
    base = bytes(32)
    t = PeerTable(base)
    assert t.bin_of(b"\x80" + bytes(31)) == 0
    assert t.bin_of(bytes(31) + b"\x01") == 31  # proximity 255, capped at 31
    assert t.bin_of(bytes(3) + b"\x01" + bytes(28)) == 31
    assert t.bin_of(bytes(3) + b"\x02" + bytes(28)) == 30


def test_bin_regions_hold_exactly_the_bin() -> None:
    t = PeerTable(a("01100110"), max_po=5)
    everyone = Pot.from_addresses(bytes([x]) for x in range(256) if x != 0b01100110)
    for po in range(6):
        prefix, bits = t.bin_region(po)
        members = set(everyone.with_prefix(prefix, bits)) - {t.base}
        assert members == {p for p in everyone if t.bin_of(p) == po}, po
    assert t.bin_region(5) == (t.base, 5)  # the last bin holds every deeper peer too
    assert PeerTable(BASE).bin_region(0) == (a("10000000"), 1)
    assert MAX_PO == 31 and PeerTable(BASE).max_po == MAX_PO


def test_bins_to_fill_and_connected_bins() -> None:
    t = table_of(["10000000", "11000000", "01000000"], ["10100000", "00100000", "00000001"], saturation=2)
    assert t.connected_bins() == [(0, [a("10000000"), a("11000000")]), (1, [a("01000000")])]
    assert t.unsaturated_bins() == [2, 7]  # bin 0 is saturated, bin 1 has no candidate
    assert t.depth() == 0 and t.neighbourhood_bins() == [0, 2, 7]  # three peers in all: depth 0


def test_the_address_book_bound_counts_candidates_only() -> None:
    t = PeerTable(BASE, max_known_per_bin=2)
    assert t.add_known(a("10000000")) and t.add_known(a("11000000"))
    assert not t.has_room(0) and t.has_room(1)
    assert not t.add_known(a("10100000"))  # bin 0 holds two candidates: not kept
    assert not t.is_known(a("10100000"))
    t.connect(a("10000000"))  # a connected peer is no candidate: room again
    assert t.add_known(a("10100000"))
    assert t.connect(a("11100000"))  # connecting is never refused by the bound
    with pytest.raises(ValueError, match="max_known_per_bin"):
        PeerTable(BASE, max_known_per_bin=0)


def test_accepts_refuses_only_over_saturated_bins_below_depth() -> None:
    connected = ["10000000", "10000001", "01000000", "00100000", "00010000", "00001000"]
    t = table_of(connected, saturation=1, over_saturation=2)
    assert t.depth() == 2  # three peers at bins >= 2, none of bins 0 and 1 empty
    assert not t.accepts(a("11000000"))  # bin 0 holds 2 = over_saturation
    assert t.accepts(a("10000000"))  # already connected
    assert t.accepts(a("01100000"))  # bin 1 holds only 1
    assert t.accepts(a("00110000"))  # the neighbourhood takes everyone


@pytest.mark.parametrize("bad", [BASE, b"", b"\x00\x01", "x"])
def test_base_and_wrong_length_are_rejected(bad: object) -> None:
    t = PeerTable(BASE)
    for op in (t.add_known, t.connect, t.bin_of, t.disconnect, t.remove_known, t.sync_bins_for):
        with pytest.raises(ValueError):
            op(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"neighbourhood_size": 0},
        {"saturation": 0},
        {"saturation": 5, "over_saturation": 4},
        {"max_po": -1},
    ],
)
def test_bad_parameters_are_rejected(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        PeerTable(BASE, **kwargs)


def test_known_keeps_first_learned_order_and_connect_makes_known() -> None:
    t = PeerTable(BASE)
    assert t.add_known(a("11000000")) is True
    assert t.add_known(a("10000001")) is True
    assert t.add_known(a("11000000")) is False
    assert t.connect(a("10000000")) is True  # learned here, last
    assert t.connect(a("10000000")) is False
    assert t.known(0) == [a("11000000"), a("10000001"), a("10000000")]
    assert t.connected(0) == [a("10000000")]
    assert t.is_known(a("10000000")) and t.is_connected(a("10000000"))
    assert t.is_known(a("11000000")) and not t.is_connected(a("11000000"))
    assert not t.is_known(a("01000000")) and not t.is_connected(a("01000000"))
    assert (t.known_count(), t.connected_count()) == (3, 1)


def test_disconnect_keeps_known_and_remove_known_forgets_and_disconnects() -> None:
    t = table_of(connected=["10000000", "01000000"], known=["11000000"])
    assert t.disconnect(a("10000000")) is True
    assert t.disconnect(a("10000000")) is False
    assert t.is_known(a("10000000")) and not t.is_connected(a("10000000"))
    assert t.remove_known(a("01000000")) is True  # was connected
    assert not t.is_known(a("01000000")) and not t.is_connected(a("01000000"))
    assert a("01000000") not in t.connected_pot()
    assert t.remove_known(a("01000000")) is False
    assert (t.known_count(), t.connected_count()) == (2, 0)
    # learned again: now last in its bin
    t.add_known(a("10000000"))
    t.remove_known(a("10000000"))
    t.add_known(a("10000000"))
    assert t.known(0) == [a("11000000"), a("10000000")]


def test_known_and_connected_reject_bins_out_of_range() -> None:
    t = PeerTable(BASE, max_po=7)
    with pytest.raises(ValueError):
        t.known(8)
    with pytest.raises(ValueError):
        t.connected(-1)


def test_connected_pot_is_the_gap_set_with_or_without_base() -> None:
    t = table_of(connected=["10000000", "01000000"], known=["11000000"])
    assert t.connected_pot() == Pot.from_addresses([BASE, a("10000000"), a("01000000")])
    assert t.connected_pot(with_base=False) == Pot.from_addresses([a("10000000"), a("01000000")])
    t.disconnect(a("10000000"))
    assert t.connected_pot() == Pot.from_addresses([BASE, a("01000000")])
    assert t.connected_pot(with_base=False) == Pot.from_addresses([a("01000000")])
    assert PeerTable(BASE).connected_pot() == Pot.from_addresses([BASE])
    assert len(PeerTable(BASE).connected_pot(with_base=False)) == 0


# -- depth ----------------------------------------------------------------------------------------------

BIN3 = ["00010000", "00010001", "00010010"]  # three peers in bin 3
DEEP = ["00000001", "00000010", "00000011"]  # bins 7, 6, 6: depth 6 with neighbourhood size 3, once ...
FILL_0_5 = fill(0, 1, 2, 3, 4, 5)  # ... no bin below 6 is empty

DEPTH_CASES = [
    # (connected, known only, neighbourhood_size, max_po, depth)
    pytest.param([], [], 3, 31, 0, id="empty"),
    pytest.param([], ["10000000", "00000001"], 3, 31, 0, id="known only"),
    pytest.param(["00000100", "00000010"], [], 3, 31, 0, id="fewer connected than neighbourhood"),
    pytest.param(fill(0, 1, 2, 3), [], 3, 31, 1, id="3 in bins>=1"),
    # the neighbourhood-size rule says 3, but bins 1 and 2 hold no peer at all
    pytest.param([*BIN3, "10000000"], [], 3, 31, 1, id="three in bin 3"),
    pytest.param([*BIN3, *fill(0, 1, 2)], [], 3, 31, 3, id="three in bin 3, bins 0-2 filled"),
    pytest.param([*BIN3, *fill(0, 1)], [], 3, 31, 2, id="empty bin 2 caps, nothing known there"),
    pytest.param(DEEP, [], 3, 31, 0, id="bins 6 and 7, bins 0-5 empty"),
    pytest.param([*DEEP, *FILL_0_5], [], 3, 31, 6, id="bins 6 and 7"),
    pytest.param([*DEEP, *FILL_0_5], [], 1, 31, 7, id="neighbourhood of one"),
    pytest.param(fill(*range(8)), [], 3, 31, 5, id="one peer in every bin"),
    pytest.param(["00000001", "00000010", "00000100", *fill(0, 1, 2)], [], 3, 3, 3, id="capped at max_po"),
    pytest.param(["00000001", "00000010", "00000100", *fill(0, 1)], [], 3, 3, 2, id="bin 2 empty, max_po 3"),
    pytest.param([*BIN3, "10000000"], ["01000000"], 3, 31, 1, id="empty bin 1 caps"),
    pytest.param(["01000000", "01000001", "01000010"], ["10000000"], 3, 31, 0, id="empty bin 0 caps to 0"),
    pytest.param(["01000000", "01000001", "01000010"], [], 3, 31, 0, id="empty bin 0 caps, nothing known"),
    pytest.param([*BIN3, *fill(0, 1, 2)], ["00001000"], 3, 31, 3, id="empty deeper bin"),
    pytest.param([*BIN3, *fill(0, 1, 2), "00000001"], [], 3, 31, 3, id="empty bins 4-6 beyond depth"),
    pytest.param([*BIN3, *fill(0, 1, 2)], ["11000000", "00010011"], 3, 31, 3, id="known in filled bins"),
]  # fmt: skip


@pytest.mark.parametrize(("connected", "known", "nsize", "max_po", "depth"), DEPTH_CASES)
def test_depth_cases(connected: list[str], known: list[str], nsize: int, max_po: int, depth: int) -> None:
    t = table_of(connected, known, neighbourhood_size=nsize, max_po=max_po)
    assert t.depth() == depth
    assert model_depth(BASE, {a(x) for x in connected}, nsize, max_po) == depth
    # known peers do not matter: the same connected peers alone give the same depth
    assert table_of(connected, neighbourhood_size=nsize, max_po=max_po).depth() == depth


def test_depth_follows_changes() -> None:
    t = table_of([*BIN3, *fill(0, 1, 2)])
    assert t.depth() == 3
    t.disconnect(a("01000000"))
    assert t.depth() == 1  # bin 1 is empty (its peer still known)
    t.remove_known(a("01000000"))
    assert t.depth() == 1  # and still caps once nothing of it is known
    t.add_known(a("01000001"))
    assert t.depth() == 1  # learning a peer changes nothing
    t.connect(a("01000001"))
    assert t.depth() == 3
    t.disconnect(a("00010010"))
    assert t.depth() == 2  # bins >= 2 now hold 00100000, 00010000, 00010001
    t.disconnect(a("10000000"))
    assert t.depth() == 0  # bin 0 is empty
    t.connect(a("10000000"))
    assert t.depth() == 2


def test_neighbourhood_depth_from_connected_counts() -> None:
    assert neighbourhood_depth([1, 0, 3], 3) == 1  # the empty bin 1 caps it
    assert neighbourhood_depth([1, 1, 3], 3) == 2
    assert neighbourhood_depth([0, 2, 2], 3) == 0
    assert neighbourhood_depth([4, 0, 0], 3) == 0
    assert neighbourhood_depth([0, 0, 0], 3) == 0


def test_neighbourhood_depth_checks_its_inputs() -> None:
    with pytest.raises(ValueError):
        neighbourhood_depth([1], 0)


OPS = st.lists(st.tuples(st.sampled_from(["add", "connect", "disconnect", "remove"]), st.integers(0, 2**16)))


@settings(max_examples=150, deadline=None)
@given(
    nbytes=st.sampled_from([1, 2]),
    base_int=st.integers(0, 2**16 - 1),
    ops=OPS,
    nsize=st.integers(1, 5),
    max_po=st.integers(0, 16),
)
def test_depth_matches_brute_force_model(
    nbytes: int, base_int: int, ops: list[tuple[str, int]], nsize: int, max_po: int
) -> None:
    bits = 8 * nbytes
    base = (base_int % 2**bits).to_bytes(nbytes)
    t = PeerTable(base, neighbourhood_size=nsize, max_po=max_po)
    known: set[bytes] = set()
    connected: set[bytes] = set()
    for op, n in ops:
        # bias towards addresses near the base so that deep bins get populated too
        peer = (int.from_bytes(base) ^ (n % 2**bits) >> (n % bits)).to_bytes(nbytes)
        if peer == base:
            continue
        if op == "add":
            t.add_known(peer)
            known.add(peer)
        elif op == "connect":
            t.connect(peer)
            known.add(peer)
            connected.add(peer)
        elif op == "disconnect":
            t.disconnect(peer)
            connected.discard(peer)
        else:
            t.remove_known(peer)
            known.discard(peer)
            connected.discard(peer)
        assert t.depth() == model_depth(base, connected, nsize, max_po)
        if n % 3 == 0:
            t.candidates(n % (max_po + 1))  # build one bin's candidate pot mid-way: kept current after
    assert set(t.connected_pot(with_base=False)) == connected
    assert set(t.connected_pot()) == connected | {base}
    assert set(t.known_peers()) == known
    assert set(t.connected_peers()) == connected
    for po in range(max_po + 1):
        assert set(t.known(po)) == {p for p in known if min(po_bits(base, p), max_po) == po}
        assert set(t.connected(po)) == {p for p in connected if min(po_bits(base, p), max_po) == po}
        unconnected = {p for p in known - connected if min(po_bits(base, p), max_po) == po}
        assert set(t.candidates(po)) == unconnected
        assert set(t.unconnected(po)) == unconnected
        assert t.unconnected_count(po) == len(unconnected)


def settled_network(seed: int, strategy: str) -> dict[bytes, PeerTable]:
    """16-32 nodes with 2-byte addresses, each knowing all the others (in its own order), connected two-way
    with ``suggest_peer`` until every table is settled."""
    rng = random.Random(seed)
    addresses = [x.to_bytes(2) for x in rng.sample(range(2**16), rng.randint(16, 32))]
    tables: dict[bytes, PeerTable] = {}
    for me in addresses:
        t = PeerTable(me)
        others = [x for x in addresses if x != me]
        rng.shuffle(others)
        for x in others:
            t.add_known(x)
        tables[me] = t
    for _ in range(len(addresses) ** 2):
        moved = False
        for me, t in tables.items():
            peer = suggest_peer(t, get_strategy(strategy))
            if peer is not None:
                t.connect(peer)
                tables[peer].connect(me)
                moved = True
        if not moved:
            return tables
    pytest.fail("suggestions did not converge")


@pytest.mark.parametrize("seed", range(12))
def test_the_closest_node_has_every_chunk_address_in_its_neighbourhood(seed: int) -> None:
    # Greedy retrieval ends at the node closest to the chunk (no connected peer is closer); pull syncing
    # only carries a chunk to nodes whose neighbourhood holds it. So the closest node n* must have
    # proximity(n*, c) >= its depth. n*'s bin q = proximity(n*, c) holds no node at all (it would be
    # closer to c), and the empty-bin cap keeps n*'s depth <= q; a cap on known-but-unconnected bins
    # alone would not, since n* knows every node and none lies in bin q.
    strategy = sorted(STRATEGIES)[seed % len(STRATEGIES)]
    tables = settled_network(seed, strategy)
    rng = random.Random(-seed)
    chunks = [rng.randrange(2**16).to_bytes(2) for _ in range(2000)]
    chunks += [(int.from_bytes(n) ^ 1 << k).to_bytes(2) for n in tables for k in range(16)]  # near nodes
    assert max(t.depth() for t in tables.values()) > 0
    for c in chunks:
        closest = min(tables, key=lambda n: int.from_bytes(n) ^ int.from_bytes(c))
        assert proximity(closest, c) >= tables[closest].depth(), (closest.hex(), c.hex())


# -- saturation ---------------------------------------------------------------------------------------


def test_saturation_counts_connected_peers_of_the_bin() -> None:
    t = table_of(["10000000", "11000000"], ["10100000"], saturation=2, over_saturation=3)
    assert t.is_saturated(0)
    assert not t.is_saturated(1)
    t.disconnect(a("11000000"))
    assert not t.is_saturated(0)


# One filler peer per bin, alone in its bin: never over-saturated, and redundancy is measured within a
# bin, so it does not change which peers of another bin go first.
FILL_1_5 = fill(1, 2, 3, 4, 5)


def test_over_saturated_drops_most_redundant_first_recomputing_after_each() -> None:
    # bin 0: 10000000 and 10000001 are proximity 7 apart (the most redundant pair, the higher goes);
    # then 10000000 stands alone (proximity 1 to the rest) while 11100000 and 11110000 are proximity 3
    # apart: 11110000 goes. A ranking computed once would drop 10000000 second instead.
    bin0 = ["10000000", "10000001", "11000000", "11100000", "11110000"]
    t = table_of(bin0 + FILL_1_5 + DEEP, saturation=2, over_saturation=3)
    assert t.depth() == 6
    assert t.over_saturated() == [a("10000001"), a("11110000")]


def test_over_saturated_ties_go_to_the_higher_address_and_shallow_bins_first() -> None:
    bin0 = ["10000000", "10100000", "11000000", "11100000"]  # pairwise proximity 1 or 2: 10.. and 11..
    bin1 = ["01000000", "01000001", "01100000"]
    t = table_of(bin0 + bin1 + fill(2, 3, 4, 5) + DEEP, saturation=1, over_saturation=2)
    assert t.depth() == 6
    # bin 0: all four have redundancy 2, the highest goes (11100000); then 10000000/10100000 are
    # redundancy 2, 11000000 has 1: 10100000 goes. bin 1: 01000001 (7, higher of the pair).
    assert t.over_saturated() == [a("11100000"), a("10100000"), a("01000001")]
    for p in t.over_saturated():
        t.disconnect(p)
    assert t.depth() == 6
    assert t.over_saturated() == []


def test_over_saturated_spares_bins_at_or_below_the_limit_and_the_neighbourhood() -> None:
    # 4 connected in bin 0 with over_saturation 4: nothing to drop
    bin0 = ["10000000", "10000001", "10000010", "10000011"]
    t = table_of([*bin0, *FILL_1_5, *DEEP], saturation=2, over_saturation=4)
    assert t.depth() == 6
    assert t.over_saturated() == []
    # a crowded neighbourhood (bins >= depth) is never over-saturated
    crowded = [f"{i:08b}" for i in range(1, 16)]  # bins 4..7: 8, 4, 2 and 1 peers
    shallow = fill(0, 1, 2, 3)  # one each, at the over-saturation limit
    t = table_of(crowded + shallow, saturation=1, over_saturation=1, neighbourhood_size=15)
    assert t.depth() == 4
    assert t.over_saturated() == []
    t = table_of(crowded + shallow, saturation=1, over_saturation=1, neighbourhood_size=3)
    assert t.depth() == 6
    dropped = t.over_saturated()
    assert len(dropped) == (8 - 1) + (4 - 1)  # bins 4 and 5 trimmed to one peer each
    assert {t.bin_of(p) for p in dropped} == {4, 5}


# -- sync rule --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("peer_po", "depth", "max_po", "bins"),
    [
        (0, 3, 31, [0]),
        (2, 3, 31, [2]),
        (3, 3, 31, list(range(3, 32))),
        (5, 3, 31, list(range(3, 32))),
        (0, 0, 31, list(range(32))),
        (7, 5, 7, [5, 6, 7]),
        (4, 5, 7, [4]),
    ],
)
def test_sync_bins(peer_po: int, depth: int, max_po: int, bins: list[int]) -> None:
    assert sync_bins(peer_po, depth, max_po) == bins


def test_sync_bins_default_max_po_is_31() -> None:
    assert sync_bins(9, 8) == list(range(8, 32))


@pytest.mark.parametrize(("peer_po", "depth", "max_po"), [(-1, 0, 31), (0, -1, 31), (0, 32, 31)])
def test_sync_bins_rejects_bad_arguments(peer_po: int, depth: int, max_po: int) -> None:
    with pytest.raises(ValueError):
        sync_bins(peer_po, depth, max_po)


def test_sync_bins_for_uses_the_tables_depth() -> None:
    t = table_of([*BIN3, *fill(0, 1, 2)], max_po=7)
    assert t.depth() == 3
    assert t.sync_bins_for(a("10000000")) == [0]  # a far peer: only the chunks closer to us
    assert t.sync_bins_for(a("01000000")) == [1]
    assert t.sync_bins_for(a("00100001")) == [2]  # not even known
    assert t.sync_bins_for(a("00010001")) == [3, 4, 5, 6, 7]  # a neighbour: the whole neighbourhood
    assert t.sync_bins_for(a("00000001")) == [3, 4, 5, 6, 7]


# -- snapshot -------------------------------------------------------------------------------------------


def test_snapshot_summarises_bins() -> None:
    t = table_of(["10000000", "00010000", "00010001", "00010010"], ["11000000", "01000000"], max_po=7)
    snap = t.snapshot()
    assert snap.depth == t.depth() == 1
    assert snap.base == BASE
    assert len(snap.bins) == 8
    assert [(b.po, b.known, b.connected) for b in snap.bins[:4]] == [
        (0, 2, 1),
        (1, 1, 0),
        (2, 0, 0),
        (3, 3, 3),
    ]
    assert snap.bins[3].connected_peers == (a("00010000"), a("00010001"), a("00010010"))
    assert (snap.known, snap.connected) == (6, 4)
    d = snap.to_dict()
    assert d["depth"] == 1 and d["known"] == 6 and d["connected"] == 4
    assert d["bins"][0] == {"po": 0, "known": 2, "connected": 1, "connected_peers": ["80"]}  # type: ignore[index]
    t.connect(a("01000000"))
    assert snap.bins[1].connected == 0  # a snapshot does not change with the table
    with pytest.raises(AttributeError):
        snap.depth = 5  # type: ignore[misc]
