"""Crit-bit (PATRICIA) trie nodes and the pure algorithms on them.

Addresses are handled as unsigned big-endian integers (``key``) of ``nbits`` bits, so that bit ``p``
(0 = most significant bit of byte 0) is ``key >> (nbits - 1 - p) & 1`` and integer order is byte order.

A node is a leaf (``kids is None``) or an inner node with exactly two subtrees. ``bit`` is where the
members of a subtree stop agreeing: an inner node's members share bits ``[0, bit)`` and differ at ``bit``
(members with 0 there are in ``kids[0]``, with 1 in ``kids[1]``); a leaf's ``bit`` is ``nbits``. Bits grow
strictly from parent to child, and for a given member set the trie is unique, which makes ``==`` on roots
a member comparison. Every node caches its member count (``n``) and its lowest member.

Nodes are never mutated: an update rebuilds the path from the root to the change and shares the rest.
Paths are at most ``nbits`` long, so the algorithms loop instead of recursing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple


class Node(NamedTuple):
    """One trie node; see the module docstring for the invariants."""

    bit: int
    n: int  # members in the subtree
    key: int  # the lowest member of the subtree ...
    addr: bytes  # ... and the same as bytes
    kids: tuple[Node, Node] | None


def leaf(key: int, addr: bytes, nbits: int) -> Node:
    """A one-member subtree."""
    return Node(nbits, 1, key, addr, None)


def join(bit: int, low: Node, high: Node) -> Node:
    """The inner node splitting at ``bit`` over ``low`` (0 at ``bit``) and ``high`` (1 at ``bit``)."""
    return Node(bit, low.n + high.n, low.key, low.addr, (low, high))


def build(items: Iterable[tuple[int, bytes]], nbits: int) -> Node | None:
    """Build the trie of ``items``: ``(key, addr)`` pairs sorted by strictly increasing key. O(n).

    Adjacent keys split at ``po(prev, key)``; the trie is the Cartesian tree of those split bits, built
    left to right with a stack of inner nodes still waiting for their high subtree.
    """
    waiting_bits: list[int] = []
    waiting_lows: list[Node] = []
    it = iter(items)
    first = next(it, None)
    if first is None:
        return None
    prev, addr = first
    cur = Node(nbits, 1, prev, addr, None)
    for key, addr in it:
        split = nbits - (prev ^ key).bit_length()
        while waiting_bits and waiting_bits[-1] > split:
            cur = join(waiting_bits.pop(), waiting_lows.pop(), cur)
        waiting_bits.append(split)
        waiting_lows.append(cur)
        cur = Node(nbits, 1, key, addr, None)
        prev = key
    while waiting_bits:
        cur = join(waiting_bits.pop(), waiting_lows.pop(), cur)
    return cur


def insert(root: Node, key: int, addr: bytes, nbits: int) -> Node:
    """Return ``root`` with ``key`` added (``root`` itself when already present)."""
    top = nbits - 1
    bits: list[int] = []
    kidss: list[tuple[Node, Node]] = []
    node = root
    while True:
        diff = key ^ node.key
        if diff == 0:
            return root
        split = nbits - diff.bit_length()
        kids = node.kids
        if split < node.bit or kids is None:  # a leaf always splits: its bit is nbits
            new = leaf(key, addr, nbits)
            new = join(split, node, new) if key >> (top - split) & 1 else join(split, new, node)
            break
        bits.append(node.bit)
        kidss.append(kids)
        node = kids[key >> (top - node.bit) & 1]
    return _rebuild(bits, kidss, key, new, top)


def delete(root: Node, key: int, nbits: int) -> Node | None:
    """Return ``root`` without ``key`` (None when that empties it); ``KeyError`` if absent."""
    top = nbits - 1
    bits: list[int] = []
    kidss: list[tuple[Node, Node]] = []
    node = root
    while (kids := node.kids) is not None:
        bits.append(node.bit)
        kidss.append(kids)
        node = kids[key >> (top - node.bit) & 1]
    if node.key != key:
        raise KeyError(key)
    if not bits:
        return None
    sibling = kidss.pop()[not key >> (top - bits.pop()) & 1]
    return _rebuild(bits, kidss, key, sibling, top)


def _rebuild(bits: list[int], kidss: list[tuple[Node, Node]], key: int, new: Node, top: int) -> Node:
    """Copy the path ``bits``/``kidss`` (root first) bottom up, putting ``new`` where ``key`` went."""
    for bit, (low, high) in zip(reversed(bits), reversed(kidss), strict=True):
        new = join(bit, low, new) if key >> (top - bit) & 1 else join(bit, new, high)
    return new


def nearest(root: Node, key: int, nbits: int) -> Node:
    """The leaf sharing the longest prefix with ``key``, i.e. its closest member by XOR distance."""
    top = nbits - 1
    node = root
    while (kids := node.kids) is not None:
        node = kids[key >> (top - node.bit) & 1]
    return node


def with_prefix(root: Node, prefix: int, bits: int, nbits: int) -> Node | None:
    """The subtree of exactly the members whose first ``bits`` bits are ``prefix`` (None if none)."""
    node = root
    while node.bit < bits and (kids := node.kids) is not None:
        node = kids[prefix >> (bits - 1 - node.bit) & 1]
    if node.key >> (nbits - bits) != prefix:
        return None
    return node


def by_distance(root: Node, target: int, nbits: int) -> Iterator[bytes]:
    """Yield the members in increasing XOR distance to ``target``.

    At an inner node every member on ``target``'s side is closer than every member on the other side,
    so a depth-first walk taking that side first is already in distance order.
    """
    top = nbits - 1
    later: list[Node] = [root]
    while later:
        node = later.pop()
        while (kids := node.kids) is not None:
            side = target >> (top - node.bit) & 1
            later.append(kids[not side])
            node = kids[side]
        yield node.addr


def ascending(root: Node) -> Iterator[bytes]:
    """Yield the members in ascending order."""
    later: list[Node] = [root]
    while later:
        node = later.pop()
        while (kids := node.kids) is not None:
            later.append(kids[1])
            node = kids[0]
        yield node.addr


def nodes(root: Node | None) -> Iterator[Node]:
    """Yield every node (pre-order); for diagnostics and tests."""
    later = [] if root is None else [root]
    while later:
        node = later.pop()
        yield node
        if node.kids is not None:
            later.extend(reversed(node.kids))
