"""The Merkle tree of a bin's log: RFC 6962 (Certificate Transparency) shapes with Keccak-256.

Pure: hashes, shapes and proofs over values, no I/O. A bin's log is the sequence of its pull
index entries; leaf ``i`` (0-based) is entry ``bin_id = i + 1``::

    leaf = keccak256(0x00 || bin_id u64 BE || address)      node = keccak256(0x01 || left || right)

and the state at size ``n`` is ``MTH`` of the first ``n`` leaves as RFC 6962 section 2.1 defines
it (the empty tree's root is ``keccak256(b"")``). The domain bytes keep a leaf from passing as a
node; the bin ID in the leaf keeps an address from passing as another position.

Proofs are made of *compact ranges*: the perfect, aligned subtrees that cover a range of leaves
``[begin, end)``, left to right (the shape of transparency-dev/merkle's ``compact`` package).
The compact range of ``[0, n)`` is the log's *frontier* at size ``n``: one subtree per set bit of
``n``, largest first, and folding it from the right gives the root. So

- a **range proof** of leaves ``[s, e)`` in the tree of size ``n`` is the frontier at ``s`` and the
  compact range ``[e, n)``: append the leaves to the frontier, then the right nodes, fold;
- a **consistency proof** from size ``a`` to ``b`` is the frontier at ``a`` (it must fold to the
  root at ``a``) and the compact range ``[a, b)`` (appended, it must fold to the root at ``b``):
  the tree at ``b`` is then built on exactly the first ``a`` leaves of the tree at ``a``;
- an **inclusion proof** of one leaf, for people (`swarm prove`), is RFC 6962's audit path,
  verified by RFC 9162's algorithm (section 2.1.3.2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from chunks.bmt import keccak256

__all__ = [
    "EMPTY_ROOT",
    "HASH_SIZE",
    "Frontier",
    "InvalidProof",
    "audit_path_ranges",
    "consistency_proof_size",
    "fold",
    "leaf_hash",
    "leaf_hashes",
    "node_hash",
    "range_nodes",
    "root_from_range",
    "verify_consistency",
    "verify_inclusion",
]

HASH_SIZE = 32
LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
EMPTY_ROOT = keccak256(b"")
"""The root of the empty log (RFC 6962: the hash of the empty string)."""

Node = tuple[int, int]
"""A perfect subtree: (level, index); it covers leaves ``[index << level, (index + 1) << level)``."""


class InvalidProof(ValueError):
    """Proof hashes of the wrong number or size for the sizes they claim to connect."""


def leaf_hash(bin_id: int, address: bytes) -> bytes:
    return keccak256(LEAF_PREFIX + bin_id.to_bytes(8, "big") + address)


def node_hash(left: bytes, right: bytes) -> bytes:
    return keccak256(NODE_PREFIX + left + right)


def leaf_hashes(first_bin_id: int, addresses: Iterable[bytes]) -> list[bytes]:
    """The leaves of consecutive entries from ``first_bin_id`` on (a bulk :func:`leaf_hash`)."""
    return [
        keccak256(LEAF_PREFIX + bin_id.to_bytes(8, "big") + address)
        for bin_id, address in enumerate(addresses, first_bin_id)
    ]


def fold(hashes: Sequence[bytes]) -> bytes:
    """The root over a frontier's hashes (largest subtree first): folded from the right."""
    if not hashes:
        return EMPTY_ROOT
    root = hashes[-1]
    for h in reversed(hashes[:-1]):
        root = node_hash(h, root)
    return root


def range_nodes(begin: int, end: int) -> list[Node]:
    """The compact range of leaves ``[begin, end)``: its perfect subtrees, left to right.

    Nodes strictly below the point where the paths to leaves ``begin - 1`` and ``end`` part:
    on the left, rising levels (the zero bits of ``begin - 1`` under that point), then falling
    ones on the right (the set bits of ``end`` under it). At most two per level.
    """
    if not 0 <= begin <= end:
        raise ValueError(f"range [{begin}, {end}) is not a range of leaves")
    if begin == 0:
        left, right = 0, end
    else:
        mask = (1 << ((begin - 1) ^ end).bit_length() - 1) - 1
        left, right = ~(begin - 1) & mask, end & mask
    nodes: list[Node] = []
    position = begin
    for level in range(left.bit_length()):
        if left >> level & 1:
            nodes.append((level, position >> level))
            position += 1 << level
    for level in reversed(range(right.bit_length())):
        if right >> level & 1:
            nodes.append((level, position >> level))
            position += 1 << level
    return nodes


def root_from_range(begin: int, end: int, node: Callable[[int, int], bytes]) -> bytes:
    """``MTH`` of leaves ``[begin, end)`` taken as a tree of their own, from its compact range's
    nodes. Only for a range that starts at a multiple of a power of two at least its length
    (every range of an audit path does): then the two trees have the same shape."""
    if begin and begin & -begin < end - begin:
        raise ValueError(f"range [{begin}, {end}) is not aligned: its tree is not a subtree of the log")
    return fold([node(level, index) for level, index in range_nodes(begin, end)])


class Frontier:
    """The compact range ``[0, size)`` of a log: what appending needs, and the root.

    ``on_node(level, index, hash)``, if given, sees every subtree of ``report_from`` levels up as
    it completes, in the order they complete (a leaf, then the parents it completes, bottom up:
    post-order).
    """

    __slots__ = ("_on_node", "_report_from", "hashes", "size")

    def __init__(
        self,
        size: int = 0,
        hashes: Iterable[bytes] = (),
        *,
        on_node: Callable[[int, int, bytes], None] | None = None,
        report_from: int = 0,
    ) -> None:
        self.size = size
        self.hashes = list(hashes)
        self._on_node = on_node
        self._report_from = report_from
        if len(self.hashes) != size.bit_count():
            raise InvalidProof(
                f"a frontier at size {size} has {size.bit_count()} hashes, got {len(self.hashes)}"
            )
        if any(len(h) != HASH_SIZE for h in self.hashes):
            raise InvalidProof(f"frontier hashes are {HASH_SIZE} bytes")

    def copy(self) -> Frontier:
        return Frontier(self.size, self.hashes)

    def append_leaf(self, leaf: bytes) -> None:
        self.append_node(0, leaf)

    def append_leaves(self, leaves: Iterable[bytes]) -> None:
        """Append leaves one after the other: :meth:`append_leaf` without its per-call overhead
        (the hot path of appending to a log and of checking an offer)."""
        hashes, size, on_node, report_from = self.hashes, self.size, self._on_node, self._report_from
        try:
            for h in leaves:
                if len(h) != HASH_SIZE:
                    raise InvalidProof(f"proof hashes are {HASH_SIZE} bytes, got {len(h)}")
                if on_node is not None and report_from == 0:
                    on_node(0, size, h)
                index, level = size, 0
                while index & 1:  # a left sibling of the same size completes a parent
                    h = keccak256(NODE_PREFIX + hashes.pop() + h)
                    index >>= 1
                    level += 1
                    if on_node is not None and level >= report_from:
                        on_node(level, index, h)
                hashes.append(h)
                size += 1
        finally:
            self.size = size

    def append_node(self, level: int, h: bytes) -> None:
        """Append a perfect subtree of ``2**level`` leaves at position ``size`` (which it must be
        aligned to), merging completed pairs."""
        size = self.size
        if size & ((1 << level) - 1):
            raise InvalidProof(f"a subtree of 2**{level} leaves cannot start at leaf {size}")
        if len(h) != HASH_SIZE:
            raise InvalidProof(f"proof hashes are {HASH_SIZE} bytes, got {len(h)}")
        on_node, report_from = self._on_node, self._report_from
        if on_node is not None and level >= report_from:
            on_node(level, size >> level, h)
        hashes = self.hashes
        self.size = size + (1 << level)
        index = size >> level
        while index & 1:  # a left sibling of the same size completes a parent
            h = node_hash(hashes.pop(), h)
            index >>= 1
            level += 1
            if on_node is not None and level >= report_from:
                on_node(level, index, h)
        hashes.append(h)

    def append_range(self, end: int, hashes: Sequence[bytes]) -> None:
        """Append the compact range ``[size, end)`` given as its nodes' hashes, in order."""
        shape = range_nodes(self.size, end)
        if len(hashes) != len(shape):
            raise InvalidProof(
                f"the compact range [{self.size}, {end}) has {len(shape)} nodes, got {len(hashes)} hashes"
            )
        for (level, _), h in zip(shape, hashes, strict=True):
            self.append_node(level, h)

    def root(self) -> bytes:
        return fold(self.hashes)


def audit_path_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """RFC 6962's ``PATH(index, D[0:size])`` as leaf ranges ``[begin, end)``, bottom up: the
    proof's hashes are ``MTH`` of each range (see :func:`root_from_range`)."""
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of {size} leaves")
    ranges: list[tuple[int, int]] = []
    begin, end = 0, size
    while end - begin > 1:
        split = 1 << (end - begin - 1).bit_length() - 1
        if index < begin + split:
            ranges.append((begin + split, end))
            end = begin + split
        else:
            ranges.append((begin, begin + split))
            begin += split
    return ranges[::-1]


def verify_inclusion(leaf: bytes, index: int, size: int, path: Sequence[bytes], root: bytes) -> bool:
    """RFC 9162 section 2.1.3.2: does ``path`` prove ``leaf`` at ``index`` in the tree of ``size``
    leaves whose root is ``root``?"""
    if not 0 <= index < size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0 or len(p) != HASH_SIZE:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(
    a: int, root_a: bytes, b: int, root_b: bytes, proof: Sequence[bytes]
) -> Frontier | None:
    """Check a consistency proof between sizes ``a <= b`` (the frontier at ``a``, then the compact
    range ``[a, b)``); the frontier at ``b`` if it holds, else None."""
    if not 0 <= a <= b:
        raise ValueError(f"sizes {a} and {b} are not in order")
    split = a.bit_count()
    if len(proof) != split + len(range_nodes(a, b)):
        return None
    try:
        frontier = Frontier(a, proof[:split])
        if frontier.root() != root_a:
            return None
        frontier.append_range(b, proof[split:])
    except InvalidProof:
        return None
    return frontier if frontier.root() == root_b else None


def consistency_proof_size(a: int, b: int) -> int:
    """Hashes in a consistency proof between sizes ``a`` and ``b`` (either order)."""
    low, high = min(a, b), max(a, b)
    return low.bit_count() + len(range_nodes(low, high))
