"""Which known peer to connect next: the bin-filling policy and the suggestion strategies.

The policy (:func:`suggest_peer`) decides which bins need a peer; a :class:`SuggestionStrategy` decides
which candidate (known, unconnected, callable peer) of those bins to take:

- ``first``: the first candidate learned in the shallowest bin that needs one, as a naive Kademlia does;
- ``gap`` / ``temperature``: in that same bin, the candidate filling the biggest / hottest address gap of
  the connected pot (DESIGN.md, seed 003 "Address space gaps");
- ``hottest``: across every bin that needs a peer, the hottest gap (seed 003 Fig. 3: a quarter of the
  space served by the node alone is filled before a quarter served by two peers, even in another bin),
  after giving every such bin without a connected peer its first one;
- ``loaded``: as ``hottest``, but a gap's temperature counts the request load through its bin
  (``PeerTable.requests``, ``kademlia.binload``): the bin's recent requests times the gap's share of
  the bin, over its serving peers. With no requests yet it is ``hottest``.

The gap strategies do not score the candidates: they ask the connected pot and the bin's candidate pot
together for the best gap holding a candidate (``pot.biggest_covered_gap`` / ``hottest_covered_gap``), so
a suggestion costs the same with ten candidates or a hundred thousand. Within one gap every candidate fills
it equally; the one nearest to the gap's anchor is taken. That is not "the lowest address": while a bin holds
no connected peer the gap is the whole bin, anchored at the node's own address with the bin's bit flipped,
so every node takes a different peer (a common tie-break would turn the same few peers into hubs).
``kademlia.ranking`` keeps the per-candidate ranking this replaced, as the reference it is tested against.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from pot import Cover, Gap, Pot, biggest_covered_gap, hottest_covered_gap

from .table import PeerTable

__all__ = [
    "DEFAULT_STRATEGY",
    "STRATEGIES",
    "FirstStrategy",
    "GapStrategy",
    "HottestStrategy",
    "LoadedStrategy",
    "SuggestionStrategy",
    "TemperatureStrategy",
    "get_strategy",
    "is_settled",
    "suggest_peer",
]

IsCallable = Callable[[bytes], bool]
_Search = Callable[[Pot, Pot, bytes, int], Cover | None]


class SuggestionStrategy(Protocol):
    """Chooses the candidate to connect among the bins the policy says need a peer."""

    @property
    def name(self) -> str:
        """The registry name of the strategy."""
        ...

    def pick(self, table: PeerTable, bins: Sequence[int], is_callable: IsCallable) -> bytes | None:
        """A known, unconnected peer of one of ``bins`` for which ``is_callable`` holds; None if none.

        ``bins`` are ascending and each holds at least one unconnected known peer.
        """
        ...


class FirstStrategy:
    """The first candidate learned, in the shallowest bin with one: the baseline a naive Kademlia uses."""

    name = "first"

    def pick(self, table: PeerTable, bins: Sequence[int], is_callable: IsCallable) -> bytes | None:
        for po in bins:
            for peer in table.unconnected(po):
                if is_callable(peer):
                    return peer
        return None


def _cover_in_bin(table: PeerTable, po: int, is_callable: IsCallable, search: _Search) -> Cover | None:
    """The best gap of bin ``po`` holding a callable candidate, by ``search``, and that candidate.

    An uncallable pick is left out and the search repeated: one more search per uncallable candidate
    that would have been chosen (the connection manager has at most a few dialling or backing off).
    """
    prefix, bits = table.bin_region(po)
    members = table.bin_pot(po)  # the connected pot's members in the region: the same search, smaller pot
    candidates = table.candidates(po)
    while True:
        cover = search(members, candidates, prefix, bits)
        if cover is None or is_callable(cover.candidate):
            return cover
        candidates = candidates.remove(cover.candidate)


class _SearchInBin:
    """In the shallowest bin with a callable candidate, the candidate filling the best gap by ``search``."""

    name: str
    _search: _Search

    def pick(self, table: PeerTable, bins: Sequence[int], is_callable: IsCallable) -> bytes | None:
        for po in bins:
            cover = _cover_in_bin(table, po, is_callable, type(self)._search)
            if cover is not None:
                return cover.candidate
        return None


class GapStrategy(_SearchInBin):
    """The candidate in the biggest gap (lowest PO) of the bin; ties: lower anchor, then nearest to it."""

    name = "gap"
    _search = staticmethod(biggest_covered_gap)


class TemperatureStrategy(_SearchInBin):
    """The candidate in the hottest gap (size / serving peers) of the bin; ties: lower PO, lower anchor."""

    name = "temperature"
    _search = staticmethod(hottest_covered_gap)


class HottestStrategy:
    """Across the bins, the hottest gap first; but a bin without a connected peer gets one before that.

    A bin without a connected peer leaves a whole region served by nobody but the node's own side and caps
    the depth, so the shallowest such bin is filled first (its candidate nearest to the node's mirror in
    the bin, as ``temperature`` picks there). Then the hottest gap of all the bins, ties: lower PO, then
    lower anchor (bins never share a gap). Saturation is the policy's: only bins it offers are searched.
    """

    name = "hottest"

    def pick(self, table: PeerTable, bins: Sequence[int], is_callable: IsCallable) -> bytes | None:
        return _first_empty_else_best(
            table, bins, is_callable, lambda po, gap: (gap.serving << (gap.po + 1), gap.po, gap.anchor)
        )


class LoadedStrategy:
    """``hottest`` with load: after the empty bins, the gap of the highest load temperature, its bin's
    request weight (``BinLoad.weight``) times its share of the bin (``2 ** (bin - gap PO)``) over the
    peers serving it; ties: lower PO, then lower anchor."""

    name = "loaded"

    def pick(self, table: PeerTable, bins: Sequence[int], is_callable: IsCallable) -> bytes | None:
        def rank(po: int, gap: Gap) -> tuple[float, int, bytes]:
            heat = table.requests.weight(po) * 2.0 ** (po - gap.po) / gap.serving
            return (-heat, gap.po, gap.anchor)

        return _first_empty_else_best(table, bins, is_callable, rank)


def _first_empty_else_best(
    table: PeerTable,
    bins: Sequence[int],
    is_callable: IsCallable,
    rank: Callable[[int, Gap], tuple[float, int, bytes]],
) -> bytes | None:
    """The candidate of the first bin (of `bins`) with no connected peer, else the one covering
    the hottest covered gap of least `rank` (given the bin and the gap) across the bins."""
    best: tuple[tuple[float, int, bytes], bytes] | None = None
    for po in bins:
        cover = _cover_in_bin(table, po, is_callable, hottest_covered_gap)
        if cover is None:
            continue
        if not table.connected(po):
            return cover.candidate
        ranked = rank(po, cover.gap)
        if best is None or ranked < best[0]:
            best = ranked, cover.candidate
    return None if best is None else best[1]


STRATEGIES: dict[str, SuggestionStrategy] = {
    s.name: s
    for s in (FirstStrategy(), GapStrategy(), TemperatureStrategy(), HottestStrategy(), LoadedStrategy())
}
# What the simulations (`swarm sim`, docs/simulation.md) show best: the biggest gaps smallest, the
# coolest gaps and the fewest hops, level with `gap` within noise and ahead of `first`.
DEFAULT_STRATEGY = "temperature"


def get_strategy(name: str) -> SuggestionStrategy:
    """The registered strategy called ``name``; ValueError listing the valid names otherwise."""
    try:
        return STRATEGIES[name]
    except KeyError:
        valid = ", ".join(sorted(STRATEGIES))
        raise ValueError(f"unknown suggestion strategy {name!r}; valid: {valid}") from None


def _always(_: bytes) -> bool:
    return True


def suggest_peer(
    table: PeerTable,
    strategy: SuggestionStrategy,
    is_callable: IsCallable = _always,
) -> bytes | None:
    """The known peer to connect next, or None when the table is settled.

    1. Saturation: the bins with fewer than ``saturation`` connected peers that have callable, unconnected
       known peers; ``strategy`` picks among them (``first``, ``gap`` and ``temperature`` in the shallowest
       such bin, ``hottest`` across them).
    2. Then the neighbourhood: in bins >= depth every known peer should be connected; ``strategy`` picks
       among the bins >= depth with a callable unconnected known peer.
    3. Else None: bins are saturated and the neighbourhood is complete.

    Why this converges without connecting everyone: connecting only ever adds peers, so the count of
    connected peers at or beyond any PO only grows and a bin with no connected peer (which caps the
    depth) only disappears; depth therefore never decreases. Step 1 fills every bin to saturation
    (or to all its callable peers), which lifts the empty-bin cap; step 2 connects the whole
    neighbourhood, which can only push the depth deeper, turning former neighbourhood bins into saturated
    bins that need nothing more. Each suggestion connects one more peer, so the process ends, and bins
    below the final depth stop at ``saturation`` peers instead of taking every known peer. The order in
    which a strategy takes bins does not change that end state's conditions.
    """
    for bins in (table.unsaturated_bins(), table.neighbourhood_bins()):
        if bins:
            peer = strategy.pick(table, bins, is_callable)
            if peer is not None:
                return peer
    return None


def is_settled(table: PeerTable, is_callable: IsCallable = _always) -> bool:
    """Whether :func:`suggest_peer` has nothing to suggest (with any strategy)."""
    for bins in (table.unsaturated_bins(), table.neighbourhood_bins()):
        for po in bins:
            if any(is_callable(p) for p in table.unconnected(po)):
                return False
    return True
