"""BinLogs: each bin's pull index as an append-only Merkle log (chunks/merkle.py), on disk.

Leaf ``i`` of bin ``b``'s log is entry ``i + 1`` of its pull index, a hole's included (a dropped
chunk keeps its address there). The state at size ``n`` is the root of the first ``n`` leaves.

Beside ``PULL-bb`` each bin has ``TREE-bb``: the hashes of its complete subtrees of
``2**TREE_LEVEL`` leaves and more, in post-order (the order they complete in, so the file only
grows), 32 bytes each: about ``64 / 2**TREE_LEVEL`` bytes per leaf (4 with the default 16-leaf
blocks: 400 KB per 100,000 chunks, a tenth of the pull index). A subtree below that size is
rehashed from its at most ``2**TREE_LEVEL`` pull-index entries (one pread) when a proof needs
it; every proof needs O(log n) of the stored hashes and at most a few such blocks.

In memory each bin keeps its frontier (the compact range of the whole log: at most 64 hashes),
from which appending and the current root cost no I/O.

The tree files are derived data, like the address index: ``open`` rebuilds them from the pull
index when the store was not closed cleanly (``rebuild=True``, what the store passes whenever it
rebuilds its address index), and extends one that is shorter than its bin (a store that ran
without logs: ``swarm node --provable-sync off``). Not thread-safe: the store serialises access.
"""

from __future__ import annotations

import logging
import os
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from chunks.merkle import (
    HASH_SIZE,
    Frontier,
    audit_path_ranges,
    fold,
    leaf_hashes,
    node_hash,
    range_nodes,
)
from localstore.pullindex import PullIndex

__all__ = ["TREE_LEVEL", "BinLogStatistics", "BinLogs", "tree_file_name"]

log = logging.getLogger(__name__)

TREE_LEVEL = 4
"""Subtrees of ``2**TREE_LEVEL`` leaves and more are stored; smaller ones are rehashed."""
BLOCK = 1 << TREE_LEVEL
BLOCK_CACHE = 256
"""Blocks whose leaf hashes are kept (LRU): the edges of the ranges proofs are asked for."""


@dataclass(frozen=True)
class BinLogStatistics:
    """What the logs take, on disk and in memory (for the benches)."""

    tree_bytes: int  # bytes of every bin's tree file
    frontier_bytes: int  # bytes of the frontiers' hashes kept in memory
    cached_blocks: int  # blocks whose leaf hashes are cached (at most BLOCK_CACHE)


def tree_file_name(bin: int) -> str:
    return f"TREE-{bin:02d}"


def stored_nodes(blocks: int) -> int:
    """Nodes in a tree file once ``blocks`` blocks are complete: each block, and every parent."""
    return 2 * blocks - blocks.bit_count()


def node_position(level: int, index: int) -> int:
    """Where subtree (level, index) (``level >= TREE_LEVEL``) is in its tree file, in nodes: it is
    written when its last block completes, ``trailing zeros of index + 1`` nodes before the top
    of that block's chain of parents."""
    rise = level - TREE_LEVEL
    after = index + 1
    return stored_nodes(after << rise) - 1 - ((after & -after).bit_length() - 1)


class BinLogs:
    """The logs of a store's 32 bins."""

    def __init__(
        self, directory: str, pull_index: PullIndex, cursors: Sequence[int], *, rebuild: bool
    ) -> None:
        self._directory = directory
        self._pull_index = pull_index
        self._fds: dict[int, int] = {}
        self._frontiers: dict[int, Frontier] = {}
        self._pending: list[bytes] = []  # completed stored subtrees of the bin being appended to
        self._blocks: OrderedDict[tuple[int, int], list[bytes]] = OrderedDict()
        self.rebuilt = 0  # bins whose tree file was built or extended at open
        try:
            for bin, cursor in enumerate(cursors):
                self._open_bin(bin, cursor, rebuild)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            os.close(fd)

    # -- opening --------------------------------------------------------------------------------

    def _open_bin(self, bin: int, cursor: int, rebuild: bool) -> None:
        """Load the bin's frontier from its tree file, building or extending the file first if it
        does not cover the bin (rebuilt from scratch if ``rebuild``)."""
        fd = self._fds[bin] = os.open(
            os.path.join(self._directory, tree_file_name(bin)), os.O_RDWR | os.O_CREAT, 0o644
        )
        nodes = os.fstat(fd).st_size // HASH_SIZE
        blocks = cursor >> TREE_LEVEL
        if not rebuild and nodes >= stored_nodes(blocks):
            if nodes > stored_nodes(blocks):
                os.ftruncate(fd, stored_nodes(blocks) * HASH_SIZE)
            self._frontiers[bin] = self._load_frontier(bin, cursor)
            return
        kept = 0 if rebuild else _whole_blocks(nodes)
        started = time.perf_counter()
        os.ftruncate(fd, stored_nodes(kept) * HASH_SIZE)
        self._frontiers[bin] = self._load_frontier(bin, kept << TREE_LEVEL)
        step = 64 * BLOCK
        for first in range((kept << TREE_LEVEL) + 1, cursor + 1, step):
            last = min(cursor, first + step - 1)
            self.append(bin, first, [a for a, _ in self._pull_index.addresses(bin, first, last)])
        if cursor:
            self.rebuilt += 1
            log.info(
                "%s: %s %s to %d leaves in %.2f s",
                self._directory,
                "rebuilt" if rebuild or not kept else "extended",
                tree_file_name(bin),
                cursor,
                time.perf_counter() - started,
            )

    def _load_frontier(self, bin: int, size: int) -> Frontier:
        hashes = [self.node(bin, level, index, size=size) for level, index in range_nodes(0, size)]
        return Frontier(size, hashes, on_node=self._collect, report_from=TREE_LEVEL)

    # -- appending ------------------------------------------------------------------------------

    def _collect(self, level: int, index: int, h: bytes) -> None:
        self._pending.append(h)

    def append(self, bin: int, first_bin_id: int, addresses: Sequence[bytes]) -> None:
        """Add the leaves of bin IDs ``first_bin_id, ...`` (just committed to the pull index)."""
        frontier = self._frontiers[bin]
        if first_bin_id != frontier.size + 1:
            raise ValueError(
                f"bin {bin}'s log has {frontier.size} leaves; cannot append bin ID {first_bin_id}"
            )
        pending = self._pending
        pending.clear()
        frontier.append_leaves(leaf_hashes(first_bin_id, addresses))
        if pending:
            at = stored_nodes((first_bin_id - 1) >> TREE_LEVEL) * HASH_SIZE
            os.pwrite(self._fds[bin], b"".join(pending), at)
            pending.clear()

    # -- reading --------------------------------------------------------------------------------

    def size(self, bin: int) -> int:
        return self._frontiers[bin].size

    def root(self, bin: int, size: int | None = None) -> bytes:
        """The state of ``bin`` at ``size`` leaves (default: all of them)."""
        frontier = self._frontiers[bin]
        if size is None or size == frontier.size:
            return frontier.root()
        return fold(self.frontier(bin, size))

    def frontier(self, bin: int, size: int) -> list[bytes]:
        """The compact range ``[0, size)``: the first half of a consistency or range proof."""
        return self.range(bin, 0, size)

    def range(self, bin: int, begin: int, end: int) -> list[bytes]:
        """The hashes of the compact range of leaves ``[begin, end)``."""
        self._check(bin, end)
        if end == self._frontiers[bin].size and begin == 0:
            return list(self._frontiers[bin].hashes)
        return [self.node(bin, level, index) for level, index in range_nodes(begin, end)]

    def consistency(self, bin: int, a: int, b: int) -> list[bytes]:
        """Proof that the state at ``min(a, b)`` is a prefix of the state at ``max(a, b)``: the
        frontier at the smaller size, then the compact range up to the larger."""
        low, high = min(a, b), max(a, b)
        return self.frontier(bin, low) + self.range(bin, low, high)

    def audit_path(self, bin: int, index: int, size: int) -> list[bytes]:
        """RFC 6962's inclusion proof of leaf ``index`` (bin ID ``index + 1``) at ``size``."""
        self._check(bin, size)
        return [
            fold([self.node(bin, level, i) for level, i in range_nodes(begin, end)])
            for begin, end in audit_path_ranges(index, size)
        ]

    def entries(self, bin: int, start: int, end: int) -> list[tuple[bytes, bool]]:
        """``(address, hole)`` of bin IDs ``start..end``: the leaves an offer of them carries."""
        self._check(bin, end)
        return self._pull_index.addresses(bin, start, end)

    def find(self, bin: int, address: bytes) -> int | None:
        """The last bin ID of ``bin`` whose entry names ``address`` (a hole's too), by a scan of
        the pull index from its end: for proofs about chunks no longer indexed."""
        last = self._frontiers[bin].size
        step = 4096
        while last > 0:
            first = max(1, last - step + 1)
            entries = self._pull_index.addresses(bin, first, last)
            for offset in range(len(entries) - 1, -1, -1):
                if entries[offset][0] == address:
                    return first + offset
            last = first - 1
        return None

    def leaf(self, bin: int, bin_id: int) -> tuple[bytes, bool]:
        """The address of ``bin_id`` and whether it is a hole."""
        self._check(bin, bin_id)
        [(address, hole)] = self._pull_index.addresses(bin, bin_id, bin_id)
        return address, hole

    def node(self, bin: int, level: int, index: int, *, size: int | None = None) -> bytes:
        """The hash of the complete subtree (level, index) of ``bin``'s log."""
        if level >= TREE_LEVEL:
            raw = os.pread(self._fds[bin], HASH_SIZE, node_position(level, index) * HASH_SIZE)
            if len(raw) != HASH_SIZE:
                raise ValueError(f"subtree ({level}, {index}) of bin {bin} is not complete")
            return raw
        block = index >> (TREE_LEVEL - level)
        leaves = self._block_leaves(bin, block, size)
        first = (index << level) - (block << TREE_LEVEL)
        return _subtree_root(leaves[first : first + (1 << level)])

    def _block_leaves(self, bin: int, block: int, size: int | None) -> list[bytes]:
        key = (bin, block)
        leaves = self._blocks.get(key)
        if leaves is not None:
            self._blocks.move_to_end(key)
            return leaves
        first = (block << TREE_LEVEL) + 1
        last = first + BLOCK - 1
        last = min(last, self._frontiers[bin].size if size is None else size)
        entries = self._pull_index.addresses(bin, first, last)
        leaves = leaf_hashes(first, [address for address, _ in entries])
        if len(leaves) == BLOCK:  # only complete blocks: a partial one still grows
            self._blocks[key] = leaves
            if len(self._blocks) > BLOCK_CACHE:
                self._blocks.popitem(last=False)
        return leaves

    def _check(self, bin: int, size: int) -> None:
        if not 0 <= size <= self._frontiers[bin].size:
            raise ValueError(f"bin {bin}'s log has {self._frontiers[bin].size} leaves, not {size}")

    def statistics(self) -> BinLogStatistics:
        """Bytes of the tree files and of the frontiers in memory (for the benches)."""
        disk = sum(os.fstat(fd).st_size for fd in self._fds.values())
        memory = sum(len(f.hashes) * HASH_SIZE for f in self._frontiers.values())
        return BinLogStatistics(tree_bytes=disk, frontier_bytes=memory, cached_blocks=len(self._blocks))


def _whole_blocks(nodes: int) -> int:
    """The most blocks whose stored nodes fit in ``nodes`` (a shorter file is a prefix of them)."""
    blocks = 0
    for bit in reversed(range(64)):
        if stored_nodes(blocks | 1 << bit) <= nodes:
            blocks |= 1 << bit
    return blocks


def _subtree_root(leaves: list[bytes]) -> bytes:
    """The root of a perfect subtree (``2**k`` leaves)."""
    while len(leaves) > 1:
        leaves = [node_hash(leaves[i], leaves[i + 1]) for i in range(0, len(leaves), 2)]
    return leaves[0]
