"""The peer table of one node: known and connected peers by proximity bin, depth and saturation.

Pure: it takes overlay addresses and returns values; the connection manager around it does the I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from pot import Pot, proximity

from .depth import neighbourhood_depth, sync_bins

__all__ = ["BinSummary", "PeerTable", "TableSnapshot"]


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


class PeerTable:
    """Known and connected peers of the node ``base``, grouped by bin = ``min(proximity, max_po)``.

    Every connected peer is also known. Known peers of a bin keep the order in which they were first
    learned; connected peers the order in which they were connected. The pot of connected peers (the set
    S of the address-space gap definition) is maintained incrementally.
    """

    def __init__(
        self,
        base: bytes,
        *,
        neighbourhood_size: int = 3,
        saturation: int = 4,
        over_saturation: int = 8,
        max_po: int = 31,
    ) -> None:
        if not isinstance(base, bytes) or not base:
            raise ValueError(f"base must be a non-empty bytes address, got {base!r}")
        if neighbourhood_size < 1:
            raise ValueError(f"neighbourhood_size must be at least 1, got {neighbourhood_size}")
        if saturation < 1:
            raise ValueError(f"saturation must be at least 1, got {saturation}")
        if over_saturation < saturation:
            raise ValueError(f"over_saturation ({over_saturation}) must be >= saturation ({saturation})")
        if max_po < 0:
            raise ValueError(f"max_po must not be negative, got {max_po}")
        self.base = base
        self.neighbourhood_size = neighbourhood_size
        self.saturation = saturation
        self.over_saturation = over_saturation
        self.max_po = max_po
        # Dicts used as insertion-ordered sets.
        self._known: list[dict[bytes, None]] = [{} for _ in range(max_po + 1)]
        self._connected: list[dict[bytes, None]] = [{} for _ in range(max_po + 1)]
        self._bin: dict[bytes, int] = {}  # every known peer -> its bin
        self._pot = Pot()
        self._pot_with_base = Pot().add(base)
        self._depth: int | None = None

    # -- addresses ---------------------------------------------------------------------------------

    def bin_of(self, overlay: bytes) -> int:
        """The bin ``overlay`` falls into; ValueError for the base itself or a wrong-length address."""
        if not isinstance(overlay, bytes) or len(overlay) != len(self.base):
            raise ValueError(
                f"peer address must be {len(self.base)} bytes, got {overlay!r}"
                f" ({len(overlay) if isinstance(overlay, bytes) else type(overlay).__name__})"
            )
        if overlay == self.base:
            raise ValueError(f"peer address {overlay.hex()} is the table's own base address")
        return min(proximity(self.base, overlay), self.max_po)

    # -- changes ----------------------------------------------------------------------------------

    def add_known(self, overlay: bytes) -> bool:
        """Learn a peer; True if it was not known before."""
        po = self.bin_of(overlay)
        if overlay in self._bin:
            return False
        self._bin[overlay] = po
        self._known[po][overlay] = None
        self._depth = None
        return True

    def remove_known(self, overlay: bytes) -> bool:
        """Forget a peer (disconnecting it first if connected); True if it was known."""
        po = self.bin_of(overlay)
        if overlay not in self._bin:
            return False
        self.disconnect(overlay)
        del self._bin[overlay]
        del self._known[po][overlay]
        self._depth = None
        return True

    def connect(self, overlay: bytes) -> bool:
        """Mark a peer connected (learning it if new); True if it was not connected before."""
        self.add_known(overlay)
        po = self._bin[overlay]
        if overlay in self._connected[po]:
            return False
        self._connected[po][overlay] = None
        self._pot = self._pot.add(overlay)
        self._pot_with_base = self._pot_with_base.add(overlay)
        self._depth = None
        return True

    def disconnect(self, overlay: bytes) -> bool:
        """Mark a peer no longer connected (it stays known); True if it was connected."""
        po = self.bin_of(overlay)
        if overlay not in self._connected[po]:
            return False
        del self._connected[po][overlay]
        self._pot = self._pot.remove(overlay)
        self._pot_with_base = self._pot_with_base.remove(overlay)
        self._depth = None
        return True

    # -- queries ----------------------------------------------------------------------------------

    def is_known(self, overlay: bytes) -> bool:
        """Whether ``overlay`` is known (connected peers are known)."""
        return overlay in self._bin

    def is_connected(self, overlay: bytes) -> bool:
        """Whether ``overlay`` is connected."""
        po = self._bin.get(overlay)
        return po is not None and overlay in self._connected[po]

    def known(self, po: int) -> list[bytes]:
        """Known peers of bin ``po`` (connected ones included), in the order first learned."""
        return list(self._known[self._check_bin(po)])

    def connected(self, po: int) -> list[bytes]:
        """Connected peers of bin ``po``, in the order connected."""
        return list(self._connected[self._check_bin(po)])

    def known_peers(self) -> list[bytes]:
        """Every known peer, shallowest bin first."""
        return [p for peers in self._known for p in peers]

    def connected_peers(self) -> list[bytes]:
        """Every connected peer, shallowest bin first."""
        return [p for peers in self._connected for p in peers]

    def known_count(self) -> int:
        """How many peers are known (connected ones included)."""
        return len(self._bin)

    def connected_count(self) -> int:
        """How many peers are connected."""
        return len(self._pot)

    def connected_pot(self, with_base: bool = True) -> Pot:
        """The connected peers as a pot; with the base it is the set S of the address-space gap definition."""
        return self._pot_with_base if with_base else self._pot

    # -- depth, saturation, sync ------------------------------------------------------------------

    def depth(self) -> int:
        """The neighbourhood depth.

        The highest PO d such that the connected peers with bin >= d number at least
        ``neighbourhood_size`` (0 if there are fewer connected peers than that), but never deeper than the
        shallowest bin with no connected peer, known peers or not (bee's rule). The node closest to a chunk
        has an empty bin exactly where the chunk lies, so this cap keeps that chunk in its neighbourhood:
        it keeps every chunk routed to it. See :func:`~kademlia.depth.neighbourhood_depth`.
        """
        if self._depth is None:
            self._depth = neighbourhood_depth(
                [len(c) for c in self._connected], [len(k) for k in self._known], self.neighbourhood_size
            )
        return self._depth

    def is_saturated(self, po: int) -> bool:
        """Whether bin ``po`` has at least ``saturation`` connected peers.

        Saturation only limits bins below depth; in the neighbourhood every known peer is wanted.
        """
        return len(self._connected[self._check_bin(po)]) >= self.saturation

    def over_saturated(self) -> list[bytes]:
        """Connected peers to disconnect: the surplus beyond ``over_saturation`` in each bin below depth.

        Within a bin the most redundant peer goes first: the one with the highest proximity to another
        connected peer of the bin (its removal opens the smallest gap); ties go to the higher address.
        Redundancy is recomputed after every choice. Shallowest bin first. Dropping these peers leaves
        the depth unchanged.
        """
        surplus: list[bytes] = []
        for po in range(self.depth()):
            peers = list(self._connected[po])
            while len(peers) > self.over_saturation:
                victim = _most_redundant(peers)
                peers.remove(victim)
                surplus.append(victim)
        return surplus

    def sync_bins_for(self, overlay: bytes) -> list[int]:
        """The upstream bins to pull from peer ``overlay`` under the sync rule, at the current depth."""
        return sync_bins(self.bin_of(overlay), self.depth(), self.max_po)

    def snapshot(self) -> TableSnapshot:
        """A frozen summary of the table for the topology view."""
        return TableSnapshot(
            base=self.base,
            depth=self.depth(),
            neighbourhood_size=self.neighbourhood_size,
            bins=tuple(
                BinSummary(
                    po,
                    len(self._known[po]),
                    len(self._connected[po]),
                    tuple(self._connected[po]),
                    tuple(self._known[po]),
                )
                for po in range(self.max_po + 1)
            ),
        )

    def __repr__(self) -> str:
        return (
            f"PeerTable(base={self.base.hex()}, known={self.known_count()},"
            f" connected={self.connected_count()}, depth={self.depth()})"
        )

    def _check_bin(self, po: int) -> int:
        if not 0 <= po <= self.max_po:
            raise ValueError(f"bin must be within 0..{self.max_po}, got {po}")
        return po


def _most_redundant(peers: list[bytes]) -> bytes:
    """The peer with the highest proximity to another of ``peers``; ties: the higher address."""

    def redundancy(peer: bytes) -> tuple[int, bytes]:
        return max((proximity(peer, other) for other in peers if other != peer), default=-1), peer

    return max(peers, key=redundancy)
