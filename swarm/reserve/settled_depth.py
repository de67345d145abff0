"""SettledDepth: the node's depth once it has held long enough to act on.

The reserve caps its storage radius by the depth. A depth seen while peers are still connecting,
or while a neighbour restarts, would make it evict chunks that syncing then brings back; so the
depth counts only once the node has a neighbourhood (enough connected peers) and the same depth
has held for ``settle`` seconds. Pure: the caller passes the time.
"""

from __future__ import annotations

__all__ = ["DEPTH_SETTLE", "SettledDepth"]

DEPTH_SETTLE = 60.0
"""Seconds the depth must hold before the storage radius is capped by it."""


class SettledDepth:
    def __init__(self, neighbourhood_size: int, settle: float = DEPTH_SETTLE) -> None:
        self.neighbourhood_size = neighbourhood_size
        self.settle = settle
        self._since: tuple[int, float] | None = None  # the depth, and since when it holds

    def observe(self, connected: int, depth: int, now: float) -> int | None:
        """The depth if it has settled, else None, given the connected peers' count and the
        depth now."""
        if connected < self.neighbourhood_size:
            self._since = None
            return None
        if self._since is None or self._since[0] != depth:
            self._since = (depth, now)
        return depth if now - self._since[1] >= self.settle else None
