"""The peer table of one node: known and connected peers by proximity bin, depth and saturation.

Pure: it takes overlay addresses and returns values; the connection manager around it does the I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from pot import MAX_PO, Pot

from .binload import BinLoad
from .depth import neighbourhood_depth, sync_bins
from .saturation import check_limits, surplus
from .snapshot import TableSnapshot
from .tablepots import TablePots

__all__ = ["PeerTable"]


class PeerTable:
    """Known and connected peers of the node ``base``, grouped by bin = ``min(proximity, max_po)``.

    Every connected peer is also known. Known peers of a bin keep the order in which they were first
    learned; connected peers the order in which they were connected. The pot of connected peers with the
    base (the set S of the address-space gap definition) is kept as a pot, and so is each bin's
    *candidates* (known, not connected), which the gap searches of peer suggestion descend instead of
    scoring every candidate; both are brought up to date when read (``kademlia.lazypot``).

    ``max_known_per_bin`` bounds the address book: a peer learned into a bin that already holds that many
    candidates is not kept (None: no bound). Connected peers never count against it.
    """

    def __init__(
        self,
        base: bytes,
        *,
        neighbourhood_size: int = 3,
        saturation: int = 4,
        over_saturation: int = 8,
        max_po: int = MAX_PO,
        max_known_per_bin: int | None = None,
    ) -> None:
        if not isinstance(base, bytes) or not base:
            raise ValueError(f"base must be a non-empty bytes address, got {base!r}")
        check_limits(
            neighbourhood_size=neighbourhood_size,
            saturation=saturation,
            over_saturation=over_saturation,
            max_po=max_po,
            max_known_per_bin=max_known_per_bin,
        )
        self.base = base
        self.neighbourhood_size = neighbourhood_size
        self.saturation = saturation
        self.over_saturation = over_saturation
        self.max_po = max_po
        self.max_known_per_bin = max_known_per_bin
        self.requests = BinLoad(max_po)  # requests sent through each bin (the ``loaded`` strategy)
        # Dicts used as insertion-ordered sets.
        self._known: list[dict[bytes, None]] = [{} for _ in range(max_po + 1)]
        self._connected: list[dict[bytes, None]] = [{} for _ in range(max_po + 1)]
        self._bin: dict[bytes, int] = {}  # every known peer -> its bin
        self._pots = TablePots(base, max_po + 1)
        self._depth: int | None = None
        self._deepest = -1  # the deepest bin that ever held a known peer
        self._key = int.from_bytes(base)  # the base as an integer, for bin_of on the hot path of gossip
        self._nbits = len(base) * 8

    def _members(self) -> list[bytes]:
        return [self.base, *self.connected_peers()]

    def _bin_members(self, po: int) -> list[bytes]:
        peers = list(self._connected[po])
        return [self.base, *peers] if po == self.max_po else peers

    # -- addresses ---------------------------------------------------------------------------------

    def bin_of(self, overlay: bytes) -> int:
        """The bin ``overlay`` falls into; ValueError for the base itself or a wrong-length address."""
        if not isinstance(overlay, bytes) or len(overlay) != len(self.base):
            raise ValueError(
                f"peer address must be {len(self.base)} bytes, got {overlay!r}"
                f" ({len(overlay) if isinstance(overlay, bytes) else type(overlay).__name__})"
            )
        distance = self._key ^ int.from_bytes(overlay)
        if not distance:
            raise ValueError(f"peer address {overlay.hex()} is the table's own base address")
        po = self._nbits - distance.bit_length()  # pot.proximity, without converting the base every time
        return po if po < self.max_po else self.max_po

    # -- changes ----------------------------------------------------------------------------------

    def bin_region(self, po: int) -> tuple[bytes, int]:
        """Bin ``po`` as a pot region ``(prefix, bits)``: the base with bit ``po`` flipped, ``po + 1`` bits.

        The last bin (``max_po``) also holds every deeper peer: its region is the base's first ``max_po``
        bits (which the base shares too; it is never a candidate).
        """
        self._check_bin(po)
        if po == self.max_po:
            return self.base, po
        key = self._key ^ (1 << (self._nbits - 1 - po))
        return key.to_bytes(len(self.base)), po + 1

    def add_known(self, overlay: bytes) -> bool:
        """Learn a peer; True if it was not known before (and its bin had room: ``max_known_per_bin``)."""
        if overlay in self._bin:  # the common case when gossip repeats itself: no proximity to compute
            return False
        # bin_of, inlined (gossip in a simulation calls this tens of millions of times); it still raises
        if type(overlay) is not bytes or len(overlay) * 8 != self._nbits:
            self.bin_of(overlay)
        distance = self._key ^ int.from_bytes(overlay)
        if not distance:
            self.bin_of(overlay)
        po = self._nbits - distance.bit_length()
        if po > self.max_po:
            po = self.max_po
        known = self._known[po]
        cap = self.max_known_per_bin
        if cap is not None and len(known) - len(self._connected[po]) >= cap:
            return False
        self._bin[overlay] = po
        known[overlay] = None
        if po > self._deepest:
            self._deepest = po
        self._pots.learned(po, overlay)
        return True

    def remove_known(self, overlay: bytes) -> bool:
        """Forget a peer (disconnecting it first if connected); True if it was known."""
        po = self.bin_of(overlay)
        if overlay not in self._bin:
            return False
        self.disconnect(overlay)
        del self._bin[overlay]
        del self._known[po][overlay]
        self._pots.forgotten(po, overlay)
        return True

    def connect(self, overlay: bytes) -> bool:
        """Mark a peer connected (learning it if new, whatever the bound); True if it was not connected."""
        po = self._bin.get(overlay)
        if po is None:
            po = self._bin[overlay] = self.bin_of(overlay)
            self._known[po][overlay] = None
            self._deepest = max(self._deepest, po)
            self._pots.learned(po, overlay)
        if overlay in self._connected[po]:
            return False
        self._connected[po][overlay] = None
        self._pots.connected(po, overlay)
        self._depth = None
        return True

    def disconnect(self, overlay: bytes) -> bool:
        """Mark a peer no longer connected (it stays known); True if it was connected."""
        po = self.bin_of(overlay)
        if overlay not in self._connected[po]:
            return False
        del self._connected[po][overlay]
        self._pots.disconnected(po, overlay)
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

    def has_room(self, po: int) -> bool:
        """Whether bin ``po`` takes another known peer (fewer candidates than ``max_known_per_bin``)."""
        cap = self.max_known_per_bin
        return cap is None or len(self._known[po]) - len(self._connected[po]) < cap

    def unconnected(self, po: int) -> Iterator[bytes]:
        """Known, unconnected peers of bin ``po``, lazily, in the order first learned."""
        connected = self._connected[self._check_bin(po)]
        return (p for p in self._known[po] if p not in connected)

    def unconnected_count(self, po: int) -> int:
        """How many known peers of bin ``po`` are not connected."""
        return len(self._known[self._check_bin(po)]) - len(self._connected[po])

    def candidates(self, po: int) -> Pot:
        """The known, unconnected peers of bin ``po`` as a pot (see ``kademlia.candidates``)."""
        return self._pots.candidates(self._check_bin(po), partial(self.unconnected, po))

    # The three below look at bins up to the deepest that ever held a peer (``_deepest``), not all of
    # them: most are empty, and suggestions and gossip ask these questions on every turn.

    def connected_bins(self) -> list[tuple[int, list[bytes]]]:
        """``(po, connected peers)`` for every bin holding a connected peer, shallowest first."""
        connected = self._connected
        return [(po, list(connected[po])) for po in range(self._deepest + 1) if connected[po]]

    def unsaturated_bins(self) -> list[int]:
        """Bins with fewer than ``saturation`` connected peers and a candidate, shallowest first."""
        sat, known, connected = self.saturation, self._known, self._connected
        return [
            po
            for po in range(self._deepest + 1)
            if len(connected[po]) < sat and len(known[po]) > len(connected[po])
        ]

    def neighbourhood_bins(self) -> list[int]:
        """Bins at or beyond depth with a candidate, shallowest first."""
        known, connected = self._known, self._connected
        return [po for po in range(self.depth(), self._deepest + 1) if len(known[po]) > len(connected[po])]

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
        return sum(map(len, self._connected))

    def release_pots(self) -> None:
        """Let the candidate pots go until a search needs them again (built anew then): for a holder of
        many settled tables, such as the simulation, whose memory they would otherwise fill."""
        self._pots.release_candidates()

    def bin_pot(self, po: int) -> Pot:
        """The connected peers of bin ``po`` as a pot, with the base in the last bin (which shares its
        region, ``bin_region``): the members a gap search of the bin descends, without the rest."""
        return self._pots.bin_pot(self._check_bin(po), partial(self._bin_members, po))

    def connected_pot(self, with_base: bool = True) -> Pot:
        """The connected peers as a pot; with the base it is the set S of the address-space gap definition."""
        return self._pots.connected_pot(self._members, with_base)

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
            self._depth = neighbourhood_depth([len(c) for c in self._connected], self.neighbourhood_size)
        return self._depth

    def is_saturated(self, po: int) -> bool:
        """Whether bin ``po`` has at least ``saturation`` connected peers.

        Saturation only limits bins below depth; in the neighbourhood every known peer is wanted.
        """
        return len(self._connected[self._check_bin(po)]) >= self.saturation

    def accepts(self, overlay: bytes) -> bool:
        """Whether an inbound connection from ``overlay`` is welcome: it is connected already, or its bin is
        in the neighbourhood, or holds fewer than ``over_saturation`` connected peers.

        bee refuses the others (``Kad.Pick``); the simulation does too, which keeps popular peers from
        collecting connections without limit.
        """
        po = self.bin_of(overlay)
        return (
            overlay in self._connected[po]
            or po >= self.depth()
            or len(self._connected[po]) < self.over_saturation
        )

    def over_saturated(self) -> list[bytes]:
        """Connected peers to disconnect: the surplus beyond ``over_saturation`` in each bin below depth,
        shallowest bin first, the most redundant first within a bin (``kademlia.saturation.surplus``).
        Dropping them leaves the depth unchanged."""
        return surplus((self._connected[po] for po in range(self.depth())), self.over_saturation)

    def sync_bins_for(self, overlay: bytes) -> list[int]:
        """The upstream bins to pull from peer ``overlay`` under the sync rule, at the current depth."""
        return sync_bins(self.bin_of(overlay), self.depth(), self.max_po)

    def snapshot(self) -> TableSnapshot:
        """A frozen summary of the table for the topology view."""
        depth, size = self.depth(), self.neighbourhood_size
        return TableSnapshot.of(self.base, depth, size, self._known, self._connected)

    def __repr__(self) -> str:
        return (
            f"PeerTable(base={self.base.hex()}, known={self.known_count()},"
            f" connected={self.connected_count()}, depth={self.depth()})"
        )

    def _check_bin(self, po: int) -> int:
        if not 0 <= po <= self.max_po:
            raise ValueError(f"bin must be within 0..{self.max_po}, got {po}")
        return po
