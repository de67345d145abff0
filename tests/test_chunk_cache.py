"""ChunkCache against a naive model (a list in recency order), and its edge cases."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunks import Chunk
from localstore.cache import ChunkCache


def chunk(key: int, size: int) -> Chunk:
    """A stand-in chunk (the cache never verifies): address from `key`, `size` bytes of data."""
    return Chunk(key.to_bytes(32, "big"), bytes([key % 256]) * size)


class NaiveLRU:
    """Entries in recency order, least recent first; every operation by a linear scan."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.entries: list[tuple[bytes, Chunk]] = []

    def get(self, address: bytes) -> Chunk | None:
        for i, (a, c) in enumerate(self.entries):
            if a == address:
                self.entries.append(self.entries.pop(i))
                return c
        return None

    def put(self, c: Chunk) -> None:
        self.entries = [(a, x) for a, x in self.entries if a != c.address]
        if len(c.data) > self.max_bytes:
            return
        self.entries.append((c.address, c))
        while sum(len(x.data) for _, x in self.entries) > self.max_bytes:
            self.entries.pop(0)


operations = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(0, 11), st.integers(8, 4104)),
        st.tuples(st.just("get"), st.integers(0, 11), st.just(0)),
    ),
    max_size=80,
)


@given(st.integers(0, 20_000), operations)
def test_cache_behaves_like_the_naive_lru(max_bytes: int, ops: list[tuple[str, int, int]]) -> None:
    cache, model = ChunkCache(max_bytes), NaiveLRU(max_bytes)
    hits = misses = 0
    for op, key, size in ops:
        if op == "put":
            cache.put(chunk(key, size))
            model.put(chunk(key, size))
        else:
            address = key.to_bytes(32, "big")
            expected = model.get(address)
            assert cache.get(address) == expected
            hits += expected is not None
            misses += expected is None
        assert cache.addresses() == [a for a, _ in model.entries]
        assert cache.bytes == sum(len(c.data) for _, c in model.entries) <= max_bytes
        assert len(cache) == len(model.entries)
    assert (cache.hits, cache.misses) == (hits, misses)


def test_least_recently_used_goes_first_and_a_get_refreshes() -> None:
    cache = ChunkCache(3 * 100)
    for key in (1, 2, 3):
        cache.put(chunk(key, 100))
    assert cache.get((1).to_bytes(32, "big")) is not None  # 1 is now the most recent
    cache.put(chunk(4, 100))
    assert [int.from_bytes(a, "big") for a in cache.addresses()] == [3, 1, 4]
    assert (2).to_bytes(32, "big") not in cache


def test_oversized_chunks_and_a_zero_cache_keep_nothing() -> None:
    cache = ChunkCache(50)
    cache.put(chunk(1, 40))
    cache.put(chunk(1, 60))  # the replacement does not fit: the old copy is gone too
    assert len(cache) == 0 and cache.bytes == 0
    off = ChunkCache(0)
    off.put(chunk(2, 8))
    assert len(off) == 0 and off.get((2).to_bytes(32, "big")) is None


def test_negative_size_is_refused() -> None:
    with pytest.raises(ValueError, match="cache size must be >= 0 bytes, got -1"):
        ChunkCache(-1)
