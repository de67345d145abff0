"""The limits of a peer table and the pruning rule they imply (pure).

A bin below depth is *saturated* at ``saturation`` connected peers (suggestion stops filling it)
and *over-saturated* beyond ``over_saturation`` (inbound connections are refused and the surplus
is dropped, the most redundant peer first). ``neighbourhood_size`` sets the depth;
``max_known_per_bin`` bounds the address book.
"""

from __future__ import annotations

from collections.abc import Iterable

from pot import proximity

__all__ = ["check_limits", "most_redundant", "surplus"]


def check_limits(
    *,
    neighbourhood_size: int,
    saturation: int,
    over_saturation: int,
    max_po: int,
    max_known_per_bin: int | None,
) -> None:
    """ValueError naming the first limit of a peer table that makes no sense."""
    if neighbourhood_size < 1:
        raise ValueError(f"neighbourhood_size must be at least 1, got {neighbourhood_size}")
    if saturation < 1:
        raise ValueError(f"saturation must be at least 1, got {saturation}")
    if over_saturation < saturation:
        raise ValueError(f"over_saturation ({over_saturation}) must be >= saturation ({saturation})")
    if max_po < 0:
        raise ValueError(f"max_po must not be negative, got {max_po}")
    if max_known_per_bin is not None and max_known_per_bin < 1:
        raise ValueError(f"max_known_per_bin must be at least 1, got {max_known_per_bin}")


def surplus(bins: Iterable[Iterable[bytes]], over_saturation: int) -> list[bytes]:
    """The peers to drop so that no bin of ``bins`` (connected peers, shallowest first) holds more
    than ``over_saturation``: in each bin the most redundant first, redundancy recomputed after
    every choice."""
    dropped: list[bytes] = []
    for connected in bins:
        peers = list(connected)
        while len(peers) > over_saturation:
            victim = most_redundant(peers)
            peers.remove(victim)
            dropped.append(victim)
    return dropped


def most_redundant(peers: list[bytes]) -> bytes:
    """The peer with the highest proximity to another of ``peers`` (its removal opens the smallest
    gap); ties: the higher address."""

    def redundancy(peer: bytes) -> tuple[int, bytes]:
        return max((proximity(peer, other) for other in peers if other != peer), default=-1), peer

    return max(peers, key=redundancy)
