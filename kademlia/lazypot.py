"""A pot whose changes are noted as they happen and applied when it is next read.

The peer table keeps two kinds of pot: the connected peers with the node's own address (read by the gap
searches and by routing) and, per bin, the candidates (read by the gap searches of that bin only). Both
change far more often than some of them are read: a node learns most of its peers by gossip into bins it
never searches again, and an inbound connection changes the connected pot between two suggestions. So a
change only goes into a list; a read applies the list, one O(depth) insert or removal per change, or one
O(n) rebuild from the current members when that is cheaper (many changes to a small pot). A pot that is
never read costs a dict entry per change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pot import Pot

__all__ = ["LazyPot"]


class LazyPot:
    """A pot and the additions and removals not applied to it yet.

    The caller keeps the members (the table's dicts) and hands ``get`` a function listing them, used when
    a rebuild is cheaper than applying the changes; so the pot is never the only record of them, and it
    holds no reference back to its owner (no reference cycle: a dropped table is freed at once).
    """

    __slots__ = ("_adds", "_pot", "_removes")

    def __init__(self, pot: Pot | None = None) -> None:
        self._pot = pot  # None: build from the members at the first read
        self._adds: dict[bytes, None] = {}
        self._removes: dict[bytes, None] = {}

    def add(self, overlay: bytes) -> None:
        """``overlay`` became a member."""
        if self._pot is None:
            return
        if overlay in self._removes:
            del self._removes[overlay]
        else:
            self._adds[overlay] = None

    def remove(self, overlay: bytes) -> None:
        """``overlay`` is no longer a member."""
        if self._pot is None:
            return
        if overlay in self._adds:
            del self._adds[overlay]
        else:
            self._removes[overlay] = None

    def drop(self) -> None:
        """Let the pot go (the next read builds it from the members): saves its memory meanwhile."""
        self._pot = None
        self._adds.clear()
        self._removes.clear()

    def get(self, members: Callable[[], Iterable[bytes]]) -> Pot:
        """The pot of the current members (``members`` lists them, for a rebuild)."""
        pot = self._pot
        changes = len(self._adds) + len(self._removes)
        if pot is None or changes * len(pot).bit_length() > len(pot):
            pot = Pot.from_addresses(members())
        elif changes:
            for overlay in self._removes:
                pot = pot.remove(overlay)
            for overlay in self._adds:
                pot = pot.add(overlay)
        self._adds.clear()
        self._removes.clear()
        self._pot = pot
        return pot
