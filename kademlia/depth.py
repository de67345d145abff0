"""Neighbourhood depth and the sync rule: pure functions of per-bin counts."""

from __future__ import annotations

from collections.abc import Sequence

from pot import MAX_PO

__all__ = ["neighbourhood_depth", "sync_bins"]


def neighbourhood_depth(connected_counts: Sequence[int], neighbourhood_size: int) -> int:
    """The depth of a table given, for every bin 0..max_po, its connected peer count.

    Depth is the smaller of two bounds: the highest PO ``d`` such that the connected peers with bin >= ``d``
    number at least ``neighbourhood_size`` (0 if there are fewer connected peers than that), and the
    shallowest bin with no connected peer, whether or not peers of it are known (ethersphere/bee's rule).

    Why the empty-bin cap: the node closest to a chunk, sharing ``q`` bits with it, has no node at all in
    its bin ``q`` (one there would be closer to the chunk), so the cap keeps its depth at most ``q``: the
    chunk lies in its neighbourhood, it stores every chunk routed to it, and pull syncing carries any
    chunk up to it. A cap on known-but-unconnected bins alone let that depth pass ``q``; the node closest
    to the chunk, where greedy retrieval ends, then neither kept nor pulled it (the empty-bin cap covers
    the old "known but not connected" cap, so known peers do not enter the depth at all).
    """
    if neighbourhood_size < 1:
        raise ValueError(f"neighbourhood_size must be at least 1, got {neighbourhood_size}")
    depth = 0
    total = 0
    for po in range(len(connected_counts) - 1, -1, -1):
        total += connected_counts[po]
        if total >= neighbourhood_size:
            depth = po
            break
    for po in range(depth):
        if connected_counts[po] == 0:
            return po
    return depth


def sync_bins(peer_po: int, depth: int, max_po: int = MAX_PO) -> list[int]:
    """The upstream pull-index bins to sync from a peer at ``peer_po`` from us, given our ``depth``.

    A peer outside our neighbourhood (``peer_po < depth``) gives us only its bin ``peer_po``: exactly the
    chunks closer to us than to it. A neighbour (``peer_po >= depth``) gives us every bin from ``depth`` to
    ``max_po``: the chunks of our neighbourhood.
    """
    if peer_po < 0:
        raise ValueError(f"peer_po must not be negative, got {peer_po}")
    if not 0 <= depth <= max_po:
        raise ValueError(f"depth must be within 0..max_po={max_po}, got {depth}")
    if peer_po < depth:
        return [peer_po]
    return list(range(depth, max_po + 1))
