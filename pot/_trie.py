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

Gap augmentation. Every node also caches the biggest and the hottest of the address-space gaps (see
``pot.gaps``) lying strictly inside its subtree, i.e. below its split. For an inner node splitting at
``bit`` those come from its two children: a child ``C`` has the *path gaps* ``R(C.key, p)`` for every
``p`` with ``bit < p < C.bit``, each served by ``C.n`` members, plus the gaps strictly inside ``C``. Of a
child's path gaps the first one, ``p = bit + 1``, is both the biggest and the hottest (size halves and
serving stays as ``p`` grows), so ``join`` chooses among at most four candidates: O(1) per node, computed
bottom up as the node is created. Since nodes are only ever created by ``leaf`` and ``join``, updates pay
O(depth) extra and ``build`` O(n), and the cache can never be stale. A leaf has no gap inside.

The cached values are plain numbers and bytes, never references to nodes, so that ``==`` on roots stays
one walk over the two tries. Neither cache is part of a subtree's identity: both are functions of its
members, like ``n`` and ``key``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple


class Node(NamedTuple):
    """One trie node; see the module docstring for the invariants and the gap caches."""

    bit: int
    n: int  # members in the subtree
    key: int  # the lowest member of the subtree ...
    addr: bytes  # ... and the same as bytes
    kids: tuple[Node, Node] | None
    # the biggest gap strictly inside: lowest PO, then lowest anchor; big_po == nbits when there is none
    big_po: int
    big_addr: bytes  # its anchor, the lowest member serving it
    big_n: int  # the members serving it
    # the hottest gap strictly inside: smallest cost, then lowest PO, then lowest anchor, where
    # cost = serving << (po + 1) is the inverse of the temperature; hot_po == nbits when there is none,
    # and then hot_cost is ``no_gap_cost(nbits)``, above every real cost
    hot_cost: int
    hot_po: int
    hot_addr: bytes


_new_node = tuple.__new__
_NO_GAP_COST: dict[int, int] = {}


def no_gap_cost(nbits: int) -> int:
    """The hot cost standing for "no gap": above every gap's, which is at most ``2 ** nbits``.

    The members serving ``R(n, p)`` share their first ``p + 1`` bits, so there are at most
    ``2 ** (nbits - p - 1)`` of them and ``serving << (p + 1) <= 2 ** nbits``. Cached per ``nbits``, so
    that all leaves share one int object.
    """
    cost = _NO_GAP_COST.get(nbits)
    if cost is None:
        cost = _NO_GAP_COST[nbits] = 2 << nbits
    return cost


def leaf(key: int, addr: bytes, nbits: int) -> Node:
    """A one-member subtree."""
    return _new_node(Node, (nbits, 1, key, addr, None, nbits, addr, 1, no_gap_cost(nbits), nbits, addr))


def join(bit: int, low: Node, high: Node) -> Node:
    """The inner node splitting at ``bit`` over ``low`` (0 at ``bit``) and ``high`` (1 at ``bit``).

    Also picks the node's gap caches from its children's (see the module docstring). Every anchor on the
    low side is below every anchor on the high side, and a child's path gap (PO ``bit + 1``) has a lower PO
    than any gap inside that child (PO ``> child.bit >= bit + 1``); the tie rules follow from those two.
    """
    # one unpacking each instead of a dozen attribute lookups: join is the inner loop of every update
    lbit, ln, key, laddr, _, lbig_po, lbig_addr, lbig_n, lhot_cost, lhot_po, lhot_addr = low
    hbit, hn, _, haddr, _, hbig_po, hbig_addr, hbig_n, hhot_cost, hhot_po, hhot_addr = high
    po = bit + 1  # the PO of each child's first path gap, if the child has one (po < child bit)
    # biggest: lowest PO, then lowest anchor
    if po < lbit:
        big_po, big_addr, big_n = po, laddr, ln
    elif po < hbit:
        big_po, big_addr, big_n = po, haddr, hn
    elif hbig_po < lbig_po:
        big_po, big_addr, big_n = hbig_po, hbig_addr, hbig_n
    else:
        big_po, big_addr, big_n = lbig_po, lbig_addr, lbig_n
    # hottest: smallest cost, then lowest PO, then lowest anchor; the two path gaps come last because each
    # wins a tie with everything before it (lower PO than the insides, lower anchor than the high side's)
    hot_cost, hot_po, hot_addr = lhot_cost, lhot_po, lhot_addr
    if hhot_cost < hot_cost or (hhot_cost == hot_cost and hhot_po < hot_po):
        hot_cost, hot_po, hot_addr = hhot_cost, hhot_po, hhot_addr
    if po < hbit:
        cost = hn << (po + 1)
        if cost <= hot_cost:
            hot_cost, hot_po, hot_addr = cost, po, haddr
    if po < lbit:
        cost = ln << (po + 1)
        if cost <= hot_cost:
            hot_cost, hot_po, hot_addr = cost, po, laddr
    # tuple.__new__ skips the Python-level Node.__new__ (as NamedTuple._make does)
    n = ln + hn
    return _new_node(
        Node, (bit, n, key, laddr, (low, high), big_po, big_addr, big_n, hot_cost, hot_po, hot_addr)
    )


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
    none = no_gap_cost(nbits)
    cur = _new_node(Node, (nbits, 1, prev, addr, None, nbits, addr, 1, none, nbits, addr))  # leaf(), inlined
    for key, addr in it:
        split = nbits - (prev ^ key).bit_length()
        while waiting_bits and waiting_bits[-1] > split:
            cur = join(waiting_bits.pop(), waiting_lows.pop(), cur)
        waiting_bits.append(split)
        waiting_lows.append(cur)
        cur = _new_node(Node, (nbits, 1, key, addr, None, nbits, addr, 1, none, nbits, addr))
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
