"""A frozen summary of a peer table, for the topology view (``/topology``, ``swarm topology``)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

__all__ = ["BinSummary", "TableSnapshot"]


@dataclass(frozen=True)
class BinSummary:
    """One bin of a :class:`TableSnapshot`."""

    po: int
    known: int
    connected: int
    connected_peers: tuple[bytes, ...]
    known_peers: tuple[bytes, ...] = ()  # every known peer of the bin, connected ones included


@dataclass(frozen=True)
class TableSnapshot:
    """A point-in-time summary of a table, for the topology view."""

    base: bytes
    depth: int
    neighbourhood_size: int
    bins: tuple[BinSummary, ...]

    @classmethod
    def of(
        cls,
        base: bytes,
        depth: int,
        neighbourhood_size: int,
        known: Sequence[Collection[bytes]],
        connected: Sequence[Collection[bytes]],
    ) -> TableSnapshot:
        """The snapshot of a table from its known and connected peers per bin (insertion order)."""
        bins = tuple(
            BinSummary(po, len(known[po]), len(connected[po]), tuple(connected[po]), tuple(known[po]))
            for po in range(len(known))
        )
        return cls(base, depth, neighbourhood_size, bins)

    @property
    def known(self) -> int:
        """All known peers (connected ones included)."""
        return sum(b.known for b in self.bins)

    @property
    def connected(self) -> int:
        """All connected peers."""
        return sum(b.connected for b in self.bins)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready form, addresses in hex."""
        return {
            "base": self.base.hex(),
            "depth": self.depth,
            "neighbourhood_size": self.neighbourhood_size,
            "known": self.known,
            "connected": self.connected,
            "bins": [
                {
                    "po": b.po,
                    "known": b.known,
                    "connected": b.connected,
                    "connected_peers": [p.hex() for p in b.connected_peers],
                }
                for b in self.bins
            ],
        }
