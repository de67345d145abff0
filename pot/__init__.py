"""Addresses, proximity order and the immutable proximity order tree (pot) with gap searches.

Pure and stdlib-only: the bottom layer every other package builds on.
"""

from pot.cover import Cover, biggest_covered_gap, covered_gap_po, covering_gap, hottest_covered_gap
from pot.gaps import Gap
from pot.proximity import MAX_PO, proximity
from pot.tree import Pot

__all__ = [
    "MAX_PO",
    "Cover",
    "Gap",
    "Pot",
    "biggest_covered_gap",
    "covered_gap_po",
    "covering_gap",
    "hottest_covered_gap",
    "proximity",
]
