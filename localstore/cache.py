"""ChunkCache: a bounded in-memory LRU of chunks that passed through retrieval (pure).

A node that retrieves a chunk for its user, or forwards one for a peer, keeps it here, so the next
request for it (a second download of the same file, a neighbour asking for what it just relayed)
is answered at once instead of crossing the network again. Only verified chunks go in. The cache
is bounded by the bytes of chunk data it holds; putting a chunk evicts the least recently used
ones until the total fits. It never touches the store: a cached chunk is not in the pull index,
is not synced and does not answer ``HEAD /chunks``.
"""

from __future__ import annotations

from collections import OrderedDict

from chunks.chunk import Chunk

__all__ = ["DEFAULT_CACHE_BYTES", "ChunkCache"]

DEFAULT_CACHE_BYTES = 32 * 2**20
"""32 MiB: about 8,000 full chunks, a 30 MiB file read twice without retrieving it again."""


class ChunkCache:
    """Least-recently-used chunks, at most ``max_bytes`` of chunk data (0 disables the cache)."""

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError(f"cache size must be >= 0 bytes, got {max_bytes}")
        self.max_bytes = max_bytes
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._chunks: OrderedDict[bytes, Chunk] = OrderedDict()

    def __len__(self) -> int:
        return len(self._chunks)

    def __contains__(self, address: object) -> bool:
        return address in self._chunks

    def get(self, address: bytes) -> Chunk | None:
        """The cached chunk (now the most recently used), or None."""
        chunk = self._chunks.get(address)
        if chunk is None:
            self.misses += 1
            return None
        self._chunks.move_to_end(address)
        self.hits += 1
        return chunk

    def put(self, chunk: Chunk) -> None:
        """Keep ``chunk`` as the most recently used, evicting the least recently used beyond the
        limit. A chunk bigger than the whole cache is not kept."""
        size = len(chunk.data)
        old = self._chunks.pop(chunk.address, None)
        if old is not None:
            self.bytes -= len(old.data)
        if size > self.max_bytes:
            return
        self._chunks[chunk.address] = chunk
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, evicted = self._chunks.popitem(last=False)
            self.bytes -= len(evicted.data)

    def addresses(self) -> list[bytes]:
        """Cached addresses, least recently used first."""
        return list(self._chunks)
