"""Reference: peer suggestion by scoring every candidate, the way it was done before the pot searches.

Each candidate is scored by the gap it would fill (``pot.covering_gap``, one O(depth) lookup each), so a
pick costs O(candidates * depth). The strategies of ``kademlia.suggest`` get the same best gap from one
descent of two pots instead; this module is the slow, obviously correct model they are tested and
benchmarked against (tests/test_kademlia_suggest.py, benches/suggest.py), and is not used by the node.
Ties go to the candidate learned first.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from pot import Pot, covered_gap_po, covering_gap

__all__ = ["gap_key", "rank_by_gap", "rank_by_temperature", "temperature_key"]


def gap_key(connected: Pot, candidate: bytes) -> int:
    """Smallest best: the PO of the gap ``candidate`` covers in ``connected``."""
    return covered_gap_po(connected, candidate)


def temperature_key(connected: Pot, candidate: bytes) -> tuple[Fraction, int]:
    """Smallest best: minus the temperature of the gap ``candidate`` lies in, then its PO.

    The temperature is exact (``2**-(po+1) / serving`` as a fraction), so equal temperatures compare equal.
    """
    gap = covering_gap(connected, candidate)
    return -Fraction(1, 2 ** (gap.po + 1) * gap.serving), gap.po


def rank_by_gap(connected: Pot, candidates: Sequence[bytes]) -> bytes:
    """The first of ``candidates`` with the smallest :func:`gap_key`."""
    return min(_nonempty(candidates), key=lambda c: gap_key(connected, c))


def rank_by_temperature(connected: Pot, candidates: Sequence[bytes]) -> bytes:
    """The first of ``candidates`` with the smallest :func:`temperature_key`."""
    return min(_nonempty(candidates), key=lambda c: temperature_key(connected, c))


def _nonempty(candidates: Sequence[bytes]) -> Sequence[bytes]:
    if not candidates:
        raise ValueError("no candidates to rank")
    return candidates
