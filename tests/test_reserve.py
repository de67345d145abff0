"""The reserve: capacity parsing, the storage radius, eviction order, protection, pins."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunks import Chunk
from localstore.chunkfile import SLOT_SIZE
from localstore.pins import Pins
from localstore.reserve import Reserve, parse_capacity, storage_radius
from localstore.store import LocalStore
from pot import proximity

OVERLAY = bytes(32)


def chunks(n: int, seed: int) -> list[Chunk]:
    rng = random.Random(seed)
    return [Chunk.from_payload(rng.randbytes(24)) for _ in range(n)]


class Held:
    """A holder double: a set with a version."""

    def __init__(self, addresses: set[bytes] | None = None) -> None:
        self.set = addresses or set()
        self.version = 0

    def __contains__(self, address: object) -> bool:
        return address in self.set

    def addresses(self) -> set[bytes]:
        return self.set

    def discard(self, address: bytes) -> None:
        self.set.discard(address)
        self.version += 1


@pytest.mark.parametrize(
    ("text", "chunks"),
    [
        ("5000", 5000),
        ("1", 1),
        ("4GiB", (4 << 30) // SLOT_SIZE),
        ("500MB", 500 * 10**6 // SLOT_SIZE),
        ("1.5 gb", int(1.5 * 10**9) // SLOT_SIZE),
        ("64kib", 65536 // SLOT_SIZE),
    ],
)
def test_capacity_is_chunks_or_a_size(text: str, chunks: int) -> None:
    assert parse_capacity(text) == chunks


@pytest.mark.parametrize("text", ["", "lots", "4 parsecs", "-3", "1.5", "0", "100B"])
def test_a_bad_capacity_says_what_is_accepted(text: str) -> None:
    with pytest.raises(ValueError, match="capacity"):
        parse_capacity(text)


@given(counts=st.lists(st.integers(0, 50), min_size=32, max_size=32), capacity=st.integers(1, 800))
def test_storage_radius_is_the_smallest_that_fits(counts: list[int], capacity: int) -> None:
    fits = [r for r in range(33) if sum(counts[r:]) <= capacity]
    assert storage_radius(counts, capacity) == min(fits)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    capacity=st.integers(1, 60),
    stored=st.integers(0, 90),
    protect=st.sets(st.integers(0, 89), max_size=15),
    limit=st.integers(1, 40),
)
def test_eviction_takes_the_oldest_of_the_farthest_bins_first(
    capacity: int, stored: int, protect: set[int], limit: int
) -> None:
    """Against a model: the unprotected chunks sorted by (bin, bin ID); the first ``excess`` go,
    ``limit`` per call; protected ones stay and do not count."""
    pool = chunks(stored, seed=stored)
    held = Held({pool[i].address for i in protect if i < stored})
    with tempfile.TemporaryDirectory() as tmp, LocalStore(tmp, OVERLAY) as store:
        for chunk in pool:  # one by one: bin IDs in pool order
            store.put(chunk)
        reserve = Reserve(store, capacity, [held])
        order = sorted(
            (c for c in pool if c.address not in held),
            key=lambda c: (min(proximity(OVERLAY, c.address), 31), pool.index(c)),
        )
        excess = max(0, len(order) - capacity)
        while reserve.evict(limit):
            pass
        assert reserve.size() == len(order) - excess <= capacity
        gone = {c.address for c in order[:excess]}
        assert {c.address for c in pool if not store.has(c.address)} == gone
        assert all(store.has(a) for a in held.set), "protected chunks are never evicted"
        assert reserve.radius == storage_radius(reserve.counts(), capacity) or reserve.radius > 0


def test_a_released_chunk_becomes_evictable(tmp_path: Path) -> None:
    pool = chunks(10, seed=5)
    with LocalStore(tmp_path / "s", OVERLAY) as store:
        store.put_many(pool)
        held = Held({c.address for c in pool})
        reserve = Reserve(store, 2, [held])
        assert reserve.size() == 0 and reserve.evict(100) == 0
        for chunk in pool[:5]:
            held.discard(chunk.address)
        assert reserve.size() == 5
        assert reserve.evict(100) == 3
        assert reserve.size() == 2 and reserve.statistics().protected == 5


def test_radius_rises_to_fit_is_capped_by_depth_kept_across_restart_and_lowered(tmp_path: Path) -> None:
    pool = chunks(400, seed=6)
    path = tmp_path / "s"
    with LocalStore(path, OVERLAY) as store:
        store.put_many(pool)
        reserve = Reserve(store, 100)
        needed = storage_radius(reserve.counts(), 100)
        assert needed >= 2
        assert reserve.update_radius(depth=None) == needed, "no neighbourhood yet: what fits"
        assert reserve.update_radius(depth=1) == 1, "at most the depth"
        assert reserve.update_radius(depth=8) == needed
        while reserve.evict(50, depth=8):
            pass
        assert reserve.size() <= 100 and reserve.radius == needed
        assert all(not reserve.within_radius(c.address) for c in pool if not store.has(c.address))
    with LocalStore(path, OVERLAY) as store:
        reserve = Reserve(store, 100)
        assert reserve.radius == needed, "a restart keeps the radius"
        assert not reserve.lower_radius(historical_done=False)
        reserve.capacity = 10_000
        assert not reserve.lower_radius(historical_done=False), "not while historical syncing runs"
        assert reserve.lower_radius(historical_done=True)
        assert reserve.radius == needed - 1


def test_pins_count_shared_chunks_and_persist(tmp_path: Path) -> None:
    a, b, c = (bytes([n]) * 32 for n in (1, 2, 3))
    root1, root2 = bytes([9]) * 32, bytes([8]) * 32
    path = tmp_path / "s"
    with LocalStore(path, OVERLAY) as store:
        pins = Pins(store)
        assert pins.pin(root1, [root1, a, b, a])
        assert not pins.pin(root1, [root1])
        assert pins.pin(root2, [root2, b, c])
        assert len(pins) == 5 and b in pins
    with LocalStore(path, OVERLAY) as store:
        pins = Pins(store)
        assert pins.roots() == {root1: 3, root2: 3}
        assert sorted(pins.unpin(root1) or []) == sorted([root1, a]), "b is still pinned by root2"
        assert b in pins and a not in pins
        assert pins.unpin(root1) is None
        with pytest.raises(ValueError, match="32 or 64 bytes"):
            pins.pin(b"short", [])
        encrypted = bytes(range(64))  # an encrypted file's root: its address, then its key
        assert pins.pin(encrypted, [a]) and pins.roots()[encrypted] == 1 and a in pins


def test_guarded_chunks_wait_and_leases_expire(tmp_path: Path) -> None:
    from swarm.reserve.offer_leases import LeasedStore, OfferLeases

    now = [0.0]
    pool = chunks(6, seed=8)
    with LocalStore(tmp_path / "s", OVERLAY) as store:
        store.put_many(pool)
        leases = OfferLeases(ttl=10, clock=lambda: now[0])
        upstream_view = LeasedStore(store, leases)
        reserve = Reserve(store, 3)
        reserve.add_guard(leases)
        for chunk in pool:
            upstream_view.check_slot(chunk.address)  # all offered
        assert reserve.evict(10) == 0 and reserve.size() == 6, "offered: not evicted, still counted"
        assert upstream_view.get(pool[0].address) == pool[0]  # delivered: the lease ends
        assert reserve.evict(10) == 1 and not store.has(pool[0].address)
        now[0] = 11  # the rest were never wanted: their leases run out
        assert len(leases) == 0
        assert reserve.evict(10) == 2 and reserve.size() == 3


def test_a_chunk_offered_twice_stays_leased_until_both_are_delivered() -> None:
    from swarm.reserve.offer_leases import OfferLeases

    now = [0.0]
    leases = OfferLeases(ttl=10, clock=lambda: now[0])
    address = bytes([7]) * 32
    leases.lease(address)
    leases.lease(address)  # offered to a second downstream
    leases.release(address)  # the first delivered it
    assert address in leases
    leases.release(address)
    assert address not in leases and len(leases) == 0
    leases.lease(address)
    leases.release_all([address, bytes([8]) * 32])  # the downstream did not want it
    assert address not in leases, "passed over by a want: evictable at once, not after the ttl"
