"""Addresses, proximity order and the immutable proximity order tree (pot) with gap searches.

Pure and stdlib-only: the bottom layer every other package builds on.
"""

from pot.gaps import Gap, covered_gap_po, covering_gap
from pot.proximity import proximity
from pot.tree import Pot

__all__ = ["Gap", "Pot", "covered_gap_po", "covering_gap", "proximity"]
