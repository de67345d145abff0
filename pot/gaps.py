"""Address-space gaps: the biggest and the hottest gap of a pot, and the gap a candidate would fill.

For a member ``n`` of a set S and a PO ``p``, ``R(n, p)`` is every address that shares the first ``p``
bits with ``n`` and differs at bit ``p``: ``1 / 2 ** (p + 1)`` of the address space. It is a *gap* when no
member lies in it; the members sharing the first ``p + 1`` bits with ``n`` are equidistant to all of it
and *serve* it, and its *temperature* is its size divided by that number.

In the crit-bit trie (see ``pot._trie``) the members of a subtree X whose parent splits at bit ``b`` all
share the bits ``b + 1 .. X.bit - 1``, and nobody else does; so each PO ``p`` in that stretch gives the
gap ``R(lowest member of X, p)`` served by ``X.n`` members, and every gap arises this way exactly once.

Both searches walk the trie once, depth first, low side first, and skip every subtree that cannot hold a
gap better than the best so far: below a split at bit ``s`` no gap has PO under ``s + 1`` or a temperature
above ``2 ** -(s + 2)``. Ties are broken explicitly (lower PO, then lower anchor), and temperatures are
compared exactly, as the integer ``serving * 2 ** (po + 1)`` (the inverse of the temperature).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pot._trie import Node
from pot.proximity import proximity

if TYPE_CHECKING:
    from pot.tree import Pot

__all__ = ["Gap", "covered_gap_po", "covering_gap"]


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
    """The gap of lowest PO, then lowest anchor, in subtree ``top`` with PO >= ``first_po``.

    ``first_po`` must not exceed ``top.bit``: every member of ``top`` shares bits ``first_po .. top.bit - 1``.
    """
    if first_po < top.bit:  # gaps deeper down all have PO > top.bit
        return Gap.of(first_po, top.addr, top.n)
    best_po = nbits  # no gap has PO nbits: "nothing found yet"
    best = top
    later = [top] if top.kids is not None else []  # inner nodes whose children are still to look at
    pop, push = later.pop, later.append
    while later:
        node = pop()
        po = node.bit + 1  # the PO of each child's own first gap
        if po > best_po:
            continue
        low, high = node.kids  # type: ignore[misc]  # only inner nodes are pushed
        for kid in (high, low):  # pushed high first, so low is looked into first
            if po < kid.bit:
                if po < best_po or kid.key < best.key:
                    best_po, best = po, kid
            elif po + 1 < best_po or (po + 1 == best_po and kid.key < best.key):
                push(kid)  # no gap of its own, so an inner node
    return None if best_po == nbits else Gap.of(best_po, best.addr, best.n)


def hottest_gap(top: Node, first_po: int, nbits: int) -> Gap | None:
    """The hottest gap (then lowest PO, then lowest anchor) in subtree ``top`` with PO >= ``first_po``.

    Ranks by ``cost = serving << (po + 1)``, the inverse of the temperature: smaller is hotter.
    """
    best_cost = top.n << (nbits + 1)  # above any gap's cost: "nothing found yet"
    best_po = nbits
    best = top
    if first_po < top.bit:
        best_cost, best_po = top.n << (first_po + 1), first_po
    later = [top] if top.kids is not None else []  # inner nodes whose children are still to look at
    pop, push = later.pop, later.append
    while later:
        node = pop()
        po = node.bit + 1  # the PO of each child's own first gap
        low, high = node.kids  # type: ignore[misc]  # only inner nodes are pushed
        for kid in (high, low):  # pushed high first, so low is looked into first
            bit = kid.bit
            if po < bit:
                cost = kid.n << (po + 1)
                if cost < best_cost or (
                    cost == best_cost and (po < best_po or (po == best_po and kid.key < best.key))
                ):
                    best_cost, best_po, best = cost, po, kid
            if bit < nbits:
                # below the kid's split: PO >= bit + 1 and serving >= 1, so cost >= 1 << (bit + 2)
                floor = 1 << (bit + 2)
                if floor < best_cost or (
                    floor == best_cost and (bit < best_po - 1 or (bit == best_po - 1 and kid.key < best.key))
                ):
                    push(kid)
    return None if best_po == nbits else Gap.of(best_po, best.addr, best.n)


def covered_gap_po(connected: Pot, candidate: bytes) -> int:
    """The PO of the gap ``candidate`` would fill: its greatest proximity to a member of ``connected``.

    The full bit length when it is a member. ``ValueError`` for an empty pot or a length mismatch. O(depth).
    """
    if not connected:
        raise ValueError("covered_gap_po of an empty pot: no member to measure the candidate against")
    return proximity(candidate, next(connected.closest(candidate)))


def covering_gap(connected: Pot, candidate: bytes) -> Gap:
    """The gap of ``connected`` that ``candidate`` lies in. O(depth).

    ``po`` is ``covered_gap_po``; the members at exactly that proximity to the candidate serve it and the
    lowest of them anchors it. ``ValueError`` if the pot is empty or ``candidate`` is a member.
    """
    if not connected:
        raise ValueError("covering_gap of an empty pot: the candidate lies in no gap of a member")
    nearest = next(connected.closest(candidate))
    po = proximity(candidate, nearest)
    if po == len(candidate) * 8:
        raise ValueError(f"covering_gap: candidate {candidate.hex()} is a member, it lies in no gap")
    serving = connected.with_prefix(nearest, po + 1)
    return Gap.of(po, next(iter(serving)), len(serving))
