"""Address-space gaps: the ``Gap`` value and the biggest and hottest gap searches on trie nodes.

For a member ``n`` of a set S and a PO ``p``, ``R(n, p)`` is every address that shares the first ``p``
bits with ``n`` and differs at bit ``p``: ``1 / 2 ** (p + 1)`` of the address space. It is a *gap* when no
member lies in it; the members sharing the first ``p + 1`` bits with ``n`` are equidistant to all of it
and *serve* it, and its *temperature* is its size divided by that number.

In the crit-bit trie (see ``pot._trie``) the members of a subtree X whose parent splits at bit ``b`` all
share the bits ``b + 1 .. X.bit - 1``, and nobody else does; so each PO ``p`` in that stretch gives the
gap ``R(lowest member of X, p)`` served by ``X.n`` members (X's *path gaps*), and every gap arises this
way exactly once.

Both searches cost the same, O(depth): the trie is augmented (see ``pot._trie``) so that every node
caches the biggest and the hottest gap strictly inside its subtree, picked when the node is created from
its two children's caches and their first path gaps (O(1) per node, so O(depth) per update). A search
descends to the subtree X holding the region's members (``Pot._region``, as ``with_prefix`` does) and
compares X's first path gap inside the region (PO ``region_bits``, if ``region_bits < X.bit``) with X's
cache. This is the seed's remark that temperature "can be calculated on the fly as the gap is found"
(seed 003, "Address space gaps"): a gap's temperature follows from the same two numbers as its size, its PO
and the ``n`` of the subtree it hangs off, at the same place in the trie, so ranking by temperature costs
one shift and one comparison more than ranking by size, at each node creation and at each search.
Ties are broken explicitly (lower PO, then lower anchor), and temperatures are compared exactly, as the
integer ``serving << (po + 1)`` (the inverse of the temperature, the *cost*).

Which gap a candidate address would fill, and which candidate fills the biggest or hottest gap, is
``pot.cover`` (it works on two pots; this module knows only trie nodes, so ``pot.tree`` can use it).
"""

from __future__ import annotations

from dataclasses import dataclass

from pot._trie import Node

__all__ = ["Gap", "biggest_gap", "empty_region_gap", "hottest_gap"]


@dataclass(frozen=True, slots=True)
class Gap:
    """A gap ``R(anchor, po)`` in the members of a pot.

    ``anchor`` is the lowest member defining the gap; for a searched region holding no member at all it is
    the region prefix as given (the whole region is the gap, ``po = region_bits - 1``, ``serving = 1``).
    ``size = 2 ** -(po + 1)`` is the fraction of the address space; ``temperature = size / serving``.
    """

    po: int
    anchor: bytes
    size: float
    serving: int
    temperature: float

    def __post_init__(self) -> None:
        if self.po < 0:
            raise ValueError(f"gap PO must be >= 0, got {self.po}")
        if self.serving < 1:
            raise ValueError(f"a gap is served by at least one member, got serving={self.serving}")
        if self.size != 2.0 ** -(self.po + 1):
            raise ValueError(f"gap size {self.size} does not match PO {self.po}: expected 2 ** -(po + 1)")
        if self.temperature != self.size / self.serving:
            raise ValueError(f"gap temperature {self.temperature} is not size / serving")

    @classmethod
    def of(cls, po: int, anchor: bytes, serving: int) -> Gap:
        """The gap of PO ``po`` at ``anchor`` served by ``serving`` members, size and temperature derived."""
        size = 2.0 ** -(po + 1)
        return cls(po, anchor, size, serving, size / serving if serving > 0 else 0.0)


def empty_region_gap(region_prefix: bytes, region_bits: int) -> Gap | None:
    """The gap of a searched region without members: the region itself (None for the whole space)."""
    if region_bits == 0:
        return None
    return Gap.of(region_bits - 1, region_prefix, 1)


def biggest_gap(top: Node, first_po: int, nbits: int) -> Gap | None:
    """The gap of lowest PO, then lowest anchor, in subtree ``top`` with PO >= ``first_po``. O(1).

    ``first_po`` must not exceed ``top.bit``: every member of ``top`` shares bits ``first_po .. top.bit - 1``.
    """
    if first_po < top.bit:  # gaps strictly inside all have PO > top.bit
        return Gap.of(first_po, top.addr, top.n)
    if top.big_po == nbits:
        return None
    return Gap.of(top.big_po, top.big_addr, top.big_n)


def hottest_gap(top: Node, first_po: int, nbits: int) -> Gap | None:
    """The hottest gap (then lowest PO, then lowest anchor) in subtree ``top`` with PO >= ``first_po``. O(1).

    Ranks by ``cost = serving << (po + 1)``, the inverse of the temperature: smaller is hotter. ``first_po``
    as for ``biggest_gap``.
    """
    if first_po < top.bit:
        # the hottest of top's own path gaps is the first; on a tie its PO is below any inside gap's
        cost = top.n << (first_po + 1)
        if cost <= top.hot_cost:
            return Gap.of(first_po, top.addr, top.n)
    po = top.hot_po
    if po == nbits:
        return None
    return Gap.of(po, top.hot_addr, top.hot_cost >> (po + 1))
