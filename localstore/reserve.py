"""The reserve: how many chunks a node keeps (its capacity), its storage radius, and eviction.

The *reserve* is every stored chunk that is not protected: a chunk that is pinned, or held by an
upload until a receipt says a node of its neighbourhood stores it, is outside the accounting and
never evicted (the ``holders``: `localstore.pins.Pins`, the pusher's pending chunks).

The *storage radius* is the smallest proximity order ``r`` such that the reserve's chunks with
proximity ``>= r`` to this node fit in the capacity (Bee's storage radius), and at most the
Kademlia depth once the node has a neighbourhood (its chunks are what the node is responsible
for). Pull syncing wants only chunks within the radius (syncer/puller.py, syncer/intake.py), so a
chunk evicted for being outside it is not synced back. The radius rises when the reserve is over
capacity and goes back down, one step at a time, when the chunks within it fill less than half
the capacity and historical syncing is done (Bee's rule: the bin below then roughly doubles the
count, which still fits). It is kept in the state namespace, so a restart keeps it.

Eviction, when the reserve is over capacity: outside the radius first, farthest bins (lowest
proximity) first, oldest (lowest bin ID) first within a bin; if the radius cannot rise further
(it is at the depth) the farthest bins within it follow, and a warning says the neighbourhood
does not fit. It runs in bounded batches (`evict(limit)`), which the node's reserve worker calls
in the background (swarm/reserve/worker.py). Each bin remembers how far eviction has scanned, so
a batch does not walk the holes of earlier batches again.
"""

from __future__ import annotations

import logging
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from localstore.capacity import DEFAULT_CAPACITY, parse_capacity
from localstore.storefiles import BINS, MAX_BIN
from pot import proximity

__all__ = [
    "DEFAULT_CAPACITY",
    "Holder",
    "Reserve",
    "ReserveStatistics",
    "parse_capacity",
    "storage_radius",
]

log = logging.getLogger(__name__)

LOWER_BELOW = 0.5
"""The radius goes down when the chunks within it fill less than this share of the capacity."""
RADIUS_KEY = b"reserve/radius"


def storage_radius(counts: Sequence[int], capacity: int) -> int:
    """The smallest ``r`` such that ``sum(counts[r:]) <= capacity`` (``counts`` per bin)."""
    total = 0
    for bin in range(len(counts) - 1, -1, -1):
        total += counts[bin]
        if total > capacity:
            return bin + 1
    return 0


class Holder(Protocol):
    """Chunks kept outside the reserve (pins, uploads waiting for receipts)."""

    version: int
    """Raised whenever the set changes."""

    def __contains__(self, address: object) -> bool: ...

    def addresses(self) -> Iterable[bytes]: ...


class ReserveStore(Protocol):
    """The store, as the reserve uses it (``LocalStore`` implements it)."""

    @property
    def overlay(self) -> bytes: ...

    def bin_counts(self) -> list[int]: ...

    def iter_bin(self, bin: int, start: int, end: int | None = None) -> Iterable[tuple[int, bytes]]: ...

    def evict(self, addresses: Iterable[bytes]) -> int: ...

    def get_state(self, key: bytes) -> bytes | None: ...

    def put_state(self, key: bytes, value: bytes) -> None: ...


@dataclass(frozen=True)
class ReserveStatistics:
    capacity: int
    size: int  # reserve chunks (stored, not protected)
    size_within_radius: int
    radius: int
    protected: int  # stored chunks outside the accounting (pinned or held)
    evicted: int  # chunks evicted since start
    counts: tuple[int, ...]  # reserve chunks per bin


class Reserve:
    """Capacity, radius and eviction over one store. Not thread-safe (the trio thread uses it)."""

    def __init__(self, store: ReserveStore, capacity: int, holders: Sequence[Holder] = ()) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1 chunk, got {capacity}")
        self._store = store
        self.capacity = capacity
        self._holders = list(holders)
        self._guards: list[Container[bytes]] = []
        raw = store.get_state(RADIUS_KEY)
        self.radius = raw[0] if raw else 0
        self.evicted = 0
        self._scan_from = [1] * BINS  # per bin: the first bin ID eviction has not looked at
        self._skipped = [0] * BINS  # per bin: the lowest protected bin ID it passed (0: none)
        self._protected_key: tuple[int, ...] | None = None
        self._protected: list[int] = [0] * BINS
        self._warned: int | None = None  # the depth last warned about

    # -- accounting -----------------------------------------------------------------------------

    def add_holder(self, holder: Holder) -> None:
        self._holders.append(holder)
        self._protected_key = None

    def add_guard(self, guard: Container[bytes]) -> None:
        """Chunks in ``guard`` are not evicted for now but count in the reserve (chunks offered
        to a downstream and not delivered yet: swarm/reserve/offer_leases.py); eviction comes back to them."""
        self._guards.append(guard)

    def protected(self, address: bytes) -> bool:
        return any(address in holder for holder in self._holders)

    def _guarded(self, address: bytes) -> bool:
        return any(address in guard for guard in self._guards)

    def _protected_counts(self) -> list[int]:
        """Protected chunks per bin, recounted only when a holder changed (a walk over every
        held chunk: eviction and the radius skip it while even all stored chunks fit)."""
        key = tuple(holder.version for holder in self._holders)
        if key != self._protected_key:
            if self._protected_key is not None:
                self._rescan_skipped()
            overlay = self._store.overlay
            seen: set[bytes] = set()
            counts = [0] * BINS
            for holder in self._holders:
                for address in holder.addresses():
                    if address not in seen:
                        seen.add(address)
                        counts[min(proximity(overlay, address), MAX_BIN)] += 1
            self._protected, self._protected_key = counts, key
        return self._protected

    def counts(self) -> list[int]:
        """Reserve chunks per bin: stored, less the protected ones."""
        protected = self._protected_counts()
        stored = self._store.bin_counts()
        return [max(0, count - held) for count, held in zip(stored, protected, strict=True)]

    def size(self) -> int:
        return sum(self.counts())

    def size_within_radius(self) -> int:
        return sum(self.counts()[self.radius :])

    def excess(self) -> int:
        """Chunks over capacity (0 when the reserve fits)."""
        if sum(self._store.bin_counts()) <= self.capacity:
            return 0  # fits even counting the protected chunks: no need to count those
        return max(0, self.size() - self.capacity)

    def within_radius(self, address: bytes) -> bool:
        """Whether a chunk at ``address`` belongs in this reserve (pull syncing wants it)."""
        return proximity(self._store.overlay, address) >= self.radius

    # -- the radius -----------------------------------------------------------------------------

    def update_radius(self, depth: int | None) -> int:
        """Raise the radius as far as the reserve needs (up to ``depth``), or lower it to ``depth``
        if that went down; ``depth`` None: the node has no neighbourhood yet (keep the radius).
        Returns the radius."""
        fits = sum(self._store.bin_counts()) <= self.capacity  # then the protected need no count
        needed = 0 if fits else storage_radius(self.counts(), self.capacity)
        radius = max(self.radius, needed)
        if depth is not None:
            radius = min(radius, depth)
            if needed > depth and self._warned != depth:
                self._warned = depth  # once per depth: eviction runs in many rounds
                log.warning(
                    "the reserve (capacity %d chunks) does not fit the chunks of this node's "
                    "neighbourhood (depth %d): evicting within it, farthest bins first",
                    self.capacity,
                    depth,
                )
        self._set_radius(radius)
        return radius

    def lower_radius(self, historical_done: bool) -> bool:
        """One step down if the chunks within the radius fill less than half the capacity and
        historical syncing is done; True if it went down."""
        if self.radius == 0 or not historical_done:
            return False
        if self.size_within_radius() >= self.capacity * LOWER_BELOW:
            return False
        self._set_radius(self.radius - 1)
        return True

    def _set_radius(self, radius: int) -> None:
        if radius != self.radius:
            log.info("storage radius %d -> %d", self.radius, radius)
            self.radius = radius
            self._store.put_state(RADIUS_KEY, bytes((radius,)))

    # -- eviction -------------------------------------------------------------------------------

    def evict(self, limit: int, depth: int | None = None) -> int:
        """Evict up to ``limit`` chunks if the reserve is over capacity (raising the radius
        first as far as it may); return how many were evicted.

        Chunks within the radius are evicted only as far as they alone exceed the capacity (the
        radius is at the depth and the neighbourhood does not fit); otherwise the excess comes
        from outside the radius, and while some of that is guarded the reserve waits, over
        capacity, rather than evict a chunk it is responsible for.
        """
        excess = self.excess()
        if not excess:
            return 0
        self.update_radius(depth)
        counts = self.counts()
        inside = max(0, sum(counts[self.radius :]) - self.capacity)
        victims: list[bytes] = []
        wanted = min(excess, limit)
        for bin in range(self.radius):  # the lowest bins are the farthest
            if len(victims) >= wanted:
                break
            self._collect(bin, victims, wanted)
        wanted = len(victims) + min(inside, limit - len(victims))
        for bin in range(self.radius, BINS):
            if len(victims) >= wanted:
                break
            self._collect(bin, victims, wanted)
        evicted = self._store.evict(victims)
        self.evicted += evicted
        return evicted

    def _collect(self, bin: int, victims: list[bytes], wanted: int) -> None:
        """Add the oldest unprotected chunks of ``bin`` to ``victims``, up to ``wanted`` in all."""
        position = self._scan_from[bin]
        guarded = 0  # the first guarded bin ID passed: the next scan starts there again
        for bin_id, address in self._store.iter_bin(bin, position):
            position = bin_id + 1
            if self.protected(address):
                if not self._skipped[bin]:
                    self._skipped[bin] = bin_id
                continue
            if self._guarded(address):
                guarded = guarded or bin_id
                continue
            victims.append(address)
            if len(victims) >= wanted:
                break
        self._scan_from[bin] = guarded or position

    def _rescan_skipped(self) -> None:
        """A holder changed: protected chunks eviction passed may be evictable now."""
        for bin in range(BINS):
            if self._skipped[bin]:
                self._scan_from[bin] = min(self._scan_from[bin], self._skipped[bin])
                self._skipped[bin] = 0

    def statistics(self) -> ReserveStatistics:
        counts = self.counts()
        return ReserveStatistics(
            capacity=self.capacity,
            size=sum(counts),
            size_within_radius=sum(counts[self.radius :]),
            radius=self.radius,
            protected=sum(self._protected),
            evicted=self.evicted,
            counts=tuple(counts),
        )
