"""OfferLeases: chunks offered to a downstream are not evicted before it had the chance to want them.

An upstream offers a batch of hashes, the downstream answers which it wants, and the upstream
delivers those. If the reserve evicted a chunk in between, the delivery could not be made and the
downstream's batch would wait for it until its timeout dropped the connection. So each chunk
the upstream checks before offering it (``check_slot``) is *leased* until it is delivered
(``get``) or `ttl` seconds pass (the downstream did not want it, or went away), and eviction
passes over leased chunks (``Reserve.add_guard``). This wraps the store the node hands each
`Upstream`; nothing in the pull-sync protocol changes.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from localstore import Chunk

__all__ = ["LeasedStore", "OfferLeases"]

DEFAULT_TTL = 60.0


class OfferLeases:
    """Addresses offered and not yet delivered, each until its lease runs out."""

    def __init__(self, ttl: float = DEFAULT_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._until: OrderedDict[bytes, float] = OrderedDict()  # oldest lease first

    def lease(self, address: bytes) -> None:
        self._until[address] = self._clock() + self.ttl
        self._until.move_to_end(address)

    def release(self, address: bytes) -> None:
        self._until.pop(address, None)

    def __contains__(self, address: object) -> bool:
        until = self._until.get(address)  # type: ignore[call-overload]
        if until is None:
            return False
        self._expire()
        return address in self._until

    def __len__(self) -> int:
        self._expire()
        return len(self._until)

    def _expire(self) -> None:
        now = self._clock()
        while self._until:
            address, until = next(iter(self._until.items()))
            if until > now:
                break
            del self._until[address]


class LeasedStore:
    """The store as an upstream sees it: what it checks before offering is leased, what it
    delivers is released. Everything else passes through."""

    def __init__(self, store: Any, leases: OfferLeases) -> None:
        self._store = store
        self._leases = leases

    def check_slot(self, address: bytes) -> None:
        self._store.check_slot(address)
        self._leases.lease(address)

    def get(self, address: bytes) -> Chunk:
        try:
            chunk: Chunk = self._store.get(address)
        finally:
            self._leases.release(address)
        return chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)
