"""OfferLeases: chunks offered to a downstream are not evicted before it had the chance to want them.

An upstream offers a batch of hashes, the downstream answers which it wants, and the upstream
delivers those. If the reserve evicted a chunk in between, the delivery could not be made and the
downstream's batch would wait for it until its timeout dropped the connection. So each chunk the
upstream checks before offering it (``offerable``, or ``check_slot``) is *leased* until it is
delivered (``get_at`` or ``get``), the downstream's answer passes it over (`release_all`, the
upstream's ``unwanted``), or `ttl` seconds pass (the downstream went away), and eviction passes
over leased chunks (``Reserve.add_guard``). A reserve over capacity waits for leased chunks, so
the leases bound how far it exceeds its capacity: the chunks of the offers in flight, not every
chunk offered in the last `ttl` seconds. This wraps the store the node hands each `Upstream`;
nothing in the pull-sync protocol changes.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from chunks import Chunk
from localstore.offerreads import Offerable

__all__ = ["LeasedStore", "OfferLeases"]

DEFAULT_TTL = 15.0
"""Seconds an offer keeps its chunks from eviction: a downstream answers within a moment, and the
chunks it did not want are evictable again soon (until then the reserve may be over capacity)."""


class OfferLeases:
    """Addresses offered and not yet delivered, each until its last lease is released or runs out.

    One chunk may be offered to several downstreams at once: each offer is a lease of its own,
    and the chunk stays leased until every one of them is delivered (or all have expired).
    """

    def __init__(self, ttl: float = DEFAULT_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        # address -> (open leases, when the latest runs out), oldest deadline first
        self._leases: OrderedDict[bytes, tuple[int, float]] = OrderedDict()

    def lease(self, address: bytes) -> None:
        count, _ = self._leases.pop(address, (0, 0.0))
        self._leases[address] = (count + 1, self._clock() + self.ttl)

    def release(self, address: bytes) -> None:
        entry = self._leases.get(address)
        if entry is None:
            return
        count, until = entry
        if count <= 1:
            del self._leases[address]
        else:
            self._leases[address] = (count - 1, until)

    def release_all(self, addresses: Iterable[bytes]) -> None:
        """Offered chunks a downstream did not want: their leases end now, not at the ttl."""
        for address in addresses:
            self.release(address)

    def __contains__(self, address: object) -> bool:
        if address not in self._leases:
            return False
        self._expire()
        return address in self._leases

    def __len__(self) -> int:
        self._expire()
        return len(self._leases)

    def _expire(self) -> None:
        now = self._clock()
        while self._leases:
            address, (_, until) = next(iter(self._leases.items()))
            if until > now:
                break
            del self._leases[address]


class LeasedStore:
    """The store as an upstream sees it: what it checks before offering is leased, what it
    delivers is released. Everything else passes through."""

    def __init__(self, store: Any, leases: OfferLeases) -> None:
        self._store = store
        self._leases = leases

    def check_slot(self, address: bytes) -> None:
        self._store.check_slot(address)
        self._leases.lease(address)

    def offerable(self, bin: int, start: int, end: int, passed: Iterable[tuple[int, int]] = ()) -> Offerable:
        """`LocalStore.offerable`, each chunk it finds offerable leased."""
        found = self._store.offerable(bin, start, end, passed)
        for address in found.slots:
            self._leases.lease(address)
        return found

    def get_at(self, address: bytes, slot: int, length: int) -> Chunk:
        try:
            chunk: Chunk = self._store.get_at(address, slot, length)
        finally:
            self._leases.release(address)
        return chunk

    def get(self, address: bytes) -> Chunk:
        try:
            chunk: Chunk = self._store.get(address)
        finally:
            self._leases.release(address)
        return chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)
