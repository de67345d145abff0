"""Addresses, proximity order and the immutable proximity order tree (pot) with gap searches.

Pure and stdlib-only: the bottom layer every other package builds on.
"""

from pot.gaps import Gap, covered_gap_po, covering_gap
from pot.proximity import MAX_PO, proximity
from pot.tree import Pot

__all__ = ["MAX_PO", "Gap", "Pot", "covered_gap_po", "covering_gap", "proximity"]
