"""Which gap a candidate fills, and which candidate fills the biggest or the hottest gap.

Two pots take part: the *members* (for peer suggestion: the node and its connected peers, the set S of
DESIGN.md) and the *candidates* (known peers not yet connected). A candidate ``c`` lies in exactly one gap of
the members, ``R(n, p)`` with ``p`` its greatest proximity to a member (``covering_gap``); connecting it
fills that gap.

``biggest_covered_gap`` / ``hottest_covered_gap`` answer "which gap that some candidate lies in is the
biggest (hottest), and which candidate fills it" without scoring the candidates one by one: they descend
both tries at once from the searched region. At a pair of subtrees (members ``s``, candidates ``k``)
sharing their first ``b`` bits, the first bit where the two disagree decides:

- ``s`` and ``k`` part before either splits: every candidate of ``k`` lies in the gap ``R(lowest of s, j)``
  (``j`` the parting bit), served by all of ``s``;
- ``s`` splits first: the side of ``s`` without candidates holds no gap worth filling; follow the other;
- ``k`` splits first: its half on the far side from ``s`` lies in the gap at that bit (the biggest any of
  ``k`` can fill); for the hottest, the near half goes on, since a deeper gap served by fewer members can
  be hotter;
- both split at the same bit: both sides go on.

Only pairs that can still beat the best gap found are followed (a gap at PO ``>= b`` costs at least
``1 << (b + 1)``), and the candidate-only descents are single paths, so a search visits O(depth) nodes per
member subtree it enters: its cost grows with the members in the region, never with the candidates.

Ranking: biggest = lowest PO, then lowest anchor; hottest = lowest cost ``serving << (po + 1)`` (the
inverse of the temperature, compared exactly), then lowest PO, then lowest anchor, as ``Pot``'s own
searches rank. All candidates of one gap fill it equally (each leaves the same smaller gaps behind); the
one taken is the nearest to the gap's anchor by XOR, one more O(depth) descent.
"""

from __future__ import annotations

from dataclasses import dataclass

from pot import _trie
from pot._trie import Node
from pot.gaps import Gap, empty_region_gap
from pot.proximity import proximity
from pot.tree import Pot

__all__ = ["Cover", "biggest_covered_gap", "covered_gap_po", "covering_gap", "hottest_covered_gap"]


@dataclass(frozen=True, slots=True)
class Cover:
    """A gap of the members and the candidate chosen to fill it (a candidate lying in it)."""

    gap: Gap
    candidate: bytes


def covered_gap_po(connected: Pot, candidate: bytes) -> int:
    """The PO of the gap ``candidate`` would fill: its greatest proximity to a member of ``connected``.

    The full bit length when it is a member. ``ValueError`` for an empty pot or a length mismatch. O(depth).
    """
    if not connected:
        raise ValueError("covered_gap_po of an empty pot: no member to measure the candidate against")
    return proximity(candidate, connected.nearest(candidate))


def covering_gap(connected: Pot, candidate: bytes) -> Gap:
    """The gap of ``connected`` that ``candidate`` lies in. O(depth).

    ``po`` is ``covered_gap_po``; the members at exactly that proximity to the candidate serve it and the
    lowest of them anchors it. ``ValueError`` if the pot is empty or ``candidate`` is a member.
    """
    if not connected:
        raise ValueError("covering_gap of an empty pot: the candidate lies in no gap of a member")
    nearest = connected.nearest(candidate)
    po = proximity(candidate, nearest)
    if po == len(candidate) * 8:
        raise ValueError(f"covering_gap: candidate {candidate.hex()} is a member, it lies in no gap")
    serving = connected.with_prefix(nearest, po + 1)
    return Gap.of(po, next(iter(serving)), len(serving))


def biggest_covered_gap(
    members: Pot, candidates: Pot, region_prefix: bytes = b"", region_bits: int = 0
) -> Cover | None:
    """The biggest gap of ``members`` inside the region that holds a candidate, and the one to take.

    The region is as for ``Pot.biggest_address_gap``; a region without members is itself the gap (PO
    ``region_bits - 1``, anchored at ``region_prefix``, served by 1, as there). Candidates that are members
    fill nothing and are ignored. None when no candidate lies in a gap of the region.
    """
    return _search(members, candidates, region_prefix, region_bits, hottest=False)


def hottest_covered_gap(
    members: Pot, candidates: Pot, region_prefix: bytes = b"", region_bits: int = 0
) -> Cover | None:
    """The hottest gap of ``members`` inside the region that holds a candidate, and the one to take.

    Ties: lower PO, then lower anchor. Region, empty regions and None as for ``biggest_covered_gap``.
    """
    return _search(members, candidates, region_prefix, region_bits, hottest=True)


def _search(members: Pot, candidates: Pot, prefix: bytes, bits: int, *, hottest: bool) -> Cover | None:
    k = candidates._region(prefix, bits)
    if k is None:
        return None
    nbits = candidates._nbits
    if members and members._nbits != nbits:
        raise ValueError(
            f"members have {members._nbits}-bit addresses, candidates {nbits}-bit: they cannot be compared"
        )
    s = members._region(prefix, bits)
    if s is None:
        gap = empty_region_gap(prefix, bits)
        if gap is None:  # no members at all: no gap is defined
            return None
        target = int.from_bytes(prefix) << max(0, nbits - len(prefix) * 8) >> max(0, len(prefix) * 8 - nbits)
        return Cover(gap, _trie.nearest(k, target, nbits).addr)
    found = _descend(s, k, bits, nbits, hottest)
    if found is None:
        return None
    _, po, anchor, serving, group = found
    return Cover(Gap.of(po, anchor.addr, serving), _trie.nearest(group, anchor.key, nbits).addr)


# (rank, po, anchor subtree, serving, candidate subtree in the gap); rank compares as the module says
_Found = tuple[tuple[int, ...], int, Node, int, Node]


def _descend(s: Node, k: Node, b: int, nbits: int, hottest: bool) -> _Found | None:
    """The best gap holding a candidate, over the member subtree ``s`` and candidate subtree ``k``.

    Both share their first ``b`` bits (the region); see the module docstring for the walk.
    """
    top = nbits - 1
    best: _Found | None = None
    pairs: list[tuple[Node, Node, int]] = [(s, k, b)]

    def rank(po: int, s: Node) -> tuple[int, ...]:
        return (s.n << (po + 1), po, s.key) if hottest else (po, s.key)

    while pairs:
        s, k, b = pairs.pop()
        while True:
            # the best a gap at PO >= b inside this pair could rank: PO b, served by 1, anchored at s's lowest
            if best is not None and best[0] <= ((1 << (b + 1), b, s.key) if hottest else (b, s.key)):
                break
            sbit, kbit, skids, kkids = s.bit, k.bit, s.kids, k.kids
            split = sbit if sbit < kbit else kbit
            part = nbits - (s.key ^ k.key).bit_length()  # the first bit where s and k disagree
            if part < split:  # all of k lies in R(s's lowest, part)
                found = (rank(part, s), part, s, s.n, k)
                if best is None or found[0] < best[0]:
                    best = found
                break
            if split == nbits:  # the same leaf: a candidate that is a member fills nothing
                break
            if kkids is None or (skids is not None and sbit < kbit):  # s splits first: follow k's side
                assert skids is not None
                s = skids[k.key >> (top - split) & 1]
            elif skids is None or kbit < sbit:  # k splits first: its far half lies in R(s's lowest, split)
                near = s.key >> (top - split) & 1
                found = (rank(split, s), split, s, s.n, kkids[1 - near])
                if best is None or found[0] < best[0]:
                    best = found
                if not hottest:
                    break
                k = kkids[near]
            else:  # both split here
                pairs.append((skids[1], kkids[1], split + 1))
                s, k = skids[0], kkids[0]
            b = split + 1
    return best
