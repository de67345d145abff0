"""The pots a peer table keeps, each brought up to date when read (``kademlia.lazypot``).

- the connected peers with the table's base: the set S of the address-space gap definition (routing,
  gap metrics), and the same without the base, derived from it when asked for;
- per bin, its connected peers (with the base in the last bin, which shares its region): the members a
  gap search of the bin descends;
- per bin, its candidates (known, not connected): what a gap search of the bin picks from.

The table tells it every change and hands each read a function listing the current members.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pot import Pot

from .lazypot import LazyPot

__all__ = ["TablePots"]

Listing = Callable[[], Iterable[bytes]]


class TablePots:
    """The lazily updated pots of one table with base ``base`` and ``bins`` bins."""

    __slots__ = ("_base", "_bins", "_candidates", "_with_base", "_without_base")

    def __init__(self, base: bytes, bins: int) -> None:
        self._base = base
        self._with_base = LazyPot(Pot().add(base))
        self._without_base: Pot | None = Pot()  # derived when asked for, None when stale
        self._bins = [LazyPot() for _ in range(bins)]
        self._candidates = [LazyPot() for _ in range(bins)]

    def learned(self, po: int, overlay: bytes) -> None:
        """``overlay`` became a candidate of bin ``po``."""
        self._candidates[po].add(overlay)

    def forgotten(self, po: int, overlay: bytes) -> None:
        """``overlay`` is no longer a candidate of bin ``po`` (and is not connected)."""
        self._candidates[po].remove(overlay)

    def connected(self, po: int, overlay: bytes) -> None:
        self._with_base.add(overlay)
        self._bins[po].add(overlay)
        self._without_base = None
        self._candidates[po].remove(overlay)

    def disconnected(self, po: int, overlay: bytes) -> None:
        self._with_base.remove(overlay)
        self._bins[po].remove(overlay)
        self._without_base = None
        self._candidates[po].add(overlay)

    def connected_pot(self, members: Listing, with_base: bool) -> Pot:
        """The connected peers (``members`` lists them with the base), with or without the base."""
        pot = self._with_base.get(members)
        if with_base:
            return pot
        if self._without_base is None:
            self._without_base = pot.remove(self._base)
        return self._without_base

    def bin_pot(self, po: int, members: Listing) -> Pot:
        return self._bins[po].get(members)

    def candidates(self, po: int, members: Listing) -> Pot:
        return self._candidates[po].get(members)

    def release_candidates(self) -> None:
        """Let the candidate pots go until read again (built anew then)."""
        for pot in self._candidates:
            pot.drop()
