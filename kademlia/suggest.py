"""Which known peer to connect next: the bin-filling policy and the per-bin choice strategies.

The policy (:func:`suggest_peer`) decides which bin needs a peer; a :class:`SuggestionStrategy` decides
which of that bin's candidates to take. ``first`` is what a naive Kademlia does; ``gap`` and
``temperature`` use the address-space gap searches of the pot (DESIGN.md, seed 003 "Address space gaps").

Ties between equally good candidates go to the one learned first. Not to the lowest address: while a
bin holds no connected peer every candidate lies in the same gap (the whole bin), and "lowest address"
would make every node of the network pick the same lowest-addressed peers, turning them into hubs (a
64-node simulation gave those nodes 62 connections against a mean of 28). First-learned order is
deterministic for one node but differs between nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Protocol

from pot import Pot, covered_gap_po, covering_gap

from .table import PeerTable

__all__ = [
    "STRATEGIES",
    "FirstStrategy",
    "GapStrategy",
    "SuggestionStrategy",
    "TemperatureStrategy",
    "get_strategy",
    "is_settled",
    "suggest_peer",
]


class SuggestionStrategy(Protocol):
    """Chooses one candidate to connect among the known, unconnected, callable peers of a bin."""

    @property
    def name(self) -> str:
        """The registry name of the strategy."""
        ...

    def pick(self, table: PeerTable, bin: int, candidates: Sequence[bytes]) -> bytes:
        """One of ``candidates`` (non-empty, in first-learned order), all in bin ``bin`` of ``table``."""
        ...


def _require(candidates: Sequence[bytes], bin: int) -> None:
    if not candidates:
        raise ValueError(f"no candidates to pick from in bin {bin}")


class FirstStrategy:
    """The first candidate learned: the baseline a naive Kademlia uses."""

    name = "first"

    def pick(self, table: PeerTable, bin: int, candidates: Sequence[bytes]) -> bytes:
        """The first of ``candidates``."""
        _require(candidates, bin)
        return candidates[0]


class GapStrategy:
    """The candidate covering the biggest address gap (lowest gap PO); ties: the first learned."""

    name = "gap"

    @staticmethod
    def key(connected: Pot, candidate: bytes) -> int:
        """Ranking key, smallest best: the PO of the gap ``candidate`` covers in ``connected``."""
        return covered_gap_po(connected, candidate)

    def pick(self, table: PeerTable, bin: int, candidates: Sequence[bytes]) -> bytes:
        """The first candidate with the smallest :meth:`key` against the connected pot (with base)."""
        _require(candidates, bin)
        connected = table.connected_pot()
        return min(candidates, key=lambda c: self.key(connected, c))


class TemperatureStrategy:
    """The candidate in the hottest gap (size / serving peers); ties: lowest gap PO, then first learned."""

    name = "temperature"

    @staticmethod
    def key(connected: Pot, candidate: bytes) -> tuple[Fraction, int]:
        """Ranking key, smallest best: minus the temperature of the gap ``candidate`` lies in, its PO.

        The temperature is recomputed exactly from the gap's PO and serving count
        (``2**-(po+1) / serving``), so equal temperatures compare equal whatever their float rounding.
        """
        gap = covering_gap(connected, candidate)
        return -Fraction(1, 2 ** (gap.po + 1) * gap.serving), gap.po

    def pick(self, table: PeerTable, bin: int, candidates: Sequence[bytes]) -> bytes:
        """The first candidate with the smallest :meth:`key` against the connected pot (with base)."""
        _require(candidates, bin)
        connected = table.connected_pot()
        return min(candidates, key=lambda c: self.key(connected, c))


STRATEGIES: dict[str, SuggestionStrategy] = {
    s.name: s for s in (FirstStrategy(), GapStrategy(), TemperatureStrategy())
}


def get_strategy(name: str) -> SuggestionStrategy:
    """The registered strategy called ``name``; ValueError listing the valid names otherwise."""
    try:
        return STRATEGIES[name]
    except KeyError:
        valid = ", ".join(sorted(STRATEGIES))
        raise ValueError(f"unknown suggestion strategy {name!r}; valid: {valid}") from None


def _always(_: bytes) -> bool:
    return True


def _next_bin(table: PeerTable, is_callable: Callable[[bytes], bool]) -> tuple[int, list[bytes]] | None:
    """The bin that needs a peer next and its candidates, or None when there is none (see suggest_peer)."""

    def candidates(po: int) -> list[bytes]:
        return [p for p in table.known(po) if not table.is_connected(p) and is_callable(p)]

    for po in range(table.max_po + 1):
        if len(table.connected(po)) < table.saturation:
            found = candidates(po)
            if found:
                return po, found
    for po in range(table.depth(), table.max_po + 1):
        found = candidates(po)
        if found:
            return po, found
    return None


def suggest_peer(
    table: PeerTable,
    strategy: SuggestionStrategy,
    is_callable: Callable[[bytes], bool] = _always,
) -> bytes | None:
    """The known peer to connect next, or None when the table is settled.

    1. Shallowest bin first, a bin with fewer than ``saturation`` connected peers that has callable,
       unconnected known peers: ``strategy`` picks among them.
    2. Then the neighbourhood: in bins >= depth every known peer should be connected; the shallowest such
       bin with a callable unconnected known peer: ``strategy`` picks.
    3. Else None: bins are saturated and the neighbourhood is complete.

    Why this converges without connecting everyone: connecting only ever adds peers, so the count of
    connected peers at or beyond any PO only grows and a bin with no connected peer (which caps the
    depth) only disappears; depth therefore never decreases. Step 1 fills every bin to saturation
    (or to all its callable peers), which lifts the empty-bin cap; step 2 connects the whole
    neighbourhood, which can only push the depth deeper, turning former neighbourhood bins into saturated
    bins that need nothing more. Each suggestion connects one more peer, so the process ends, and bins
    below the final depth stop at ``saturation`` peers instead of taking every known peer.
    """
    found = _next_bin(table, is_callable)
    if found is None:
        return None
    po, candidates = found
    return strategy.pick(table, po, candidates)


def is_settled(table: PeerTable, is_callable: Callable[[bytes], bool] = _always) -> bool:
    """Whether :func:`suggest_peer` has nothing to suggest (with any strategy)."""
    return _next_bin(table, is_callable) is None
