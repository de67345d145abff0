"""An in-memory bin log with the reads of `syncer.proving.Log`, for upstreams played by tests.

A lying upstream builds its offers and states from a log it can rewrite at will: a list of
addresses per bin. Everything is recomputed from the list (naively, from RFC 6962's MTH), so it
shares no code with localstore/binlog.py beyond the hash functions.
"""

from __future__ import annotations

from chunks.merkle import leaf_hash, range_nodes
from tests.test_merkle import mth


class MemoryLog:
    def __init__(self) -> None:
        self.bins: dict[int, list[bytes]] = {}

    def append(self, bin: int, *addresses: bytes) -> None:
        self.bins.setdefault(bin, []).extend(addresses)

    def leaves(self, bin: int) -> list[bytes]:
        return [leaf_hash(i + 1, a) for i, a in enumerate(self.bins.get(bin, []))]

    def size(self, bin: int) -> int:
        return len(self.bins.get(bin, []))

    def root(self, bin: int, size: int | None = None) -> bytes:
        leaves = self.leaves(bin)
        return mth(leaves[: len(leaves) if size is None else size])

    def _node(self, bin: int, level: int, index: int) -> bytes:
        return mth(self.leaves(bin)[index << level : (index + 1) << level])

    def range(self, bin: int, begin: int, end: int) -> list[bytes]:
        return [self._node(bin, level, index) for level, index in range_nodes(begin, end)]

    def frontier(self, bin: int, size: int) -> list[bytes]:
        return self.range(bin, 0, size)

    def consistency(self, bin: int, a: int, b: int) -> list[bytes]:
        low, high = min(a, b), max(a, b)
        return self.frontier(bin, low) + self.range(bin, low, high)
