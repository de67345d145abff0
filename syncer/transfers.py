"""Transfers: the node-wide batch tracker, wired to the peers whose batches it completes.

`BatchTracker` (pure) decides what to want and when a batch is complete; this class routes its
verdicts: a completed batch goes to the pull-sync client of the peer that offered it, a chunk
whose request failed is asked of another peer that offered it. Clients register themselves as
`BatchListener`s; the chunk intake reports every chunk stored (`stored`), whatever its source,
because an upload or a retrieval can complete a batch as well as a delivery.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from streamer.messages import ProvenOffer
from syncer.batches import BatchTracker, CompletedBatch, Rerequest
from syncer.session_events import Offer

__all__ = ["BatchListener", "Transfers"]

log = logging.getLogger(__name__)


class BatchListener(Protocol):
    """What `Transfers` asks of a peer's pull-sync client."""

    def batch_completed(self, done: CompletedBatch) -> None:
        """Every chunk of one of this peer's batches is stored."""

    def fetch_soon(self, address: bytes) -> None:
        """Fetch a chunk this peer offered by a direct request (its first request failed)."""


class Transfers:
    """One transfer per chunk, node-wide; completions and re-requests go to the right peer."""

    def __init__(self) -> None:
        self.tracker = BatchTracker()
        self._listeners: dict[bytes, BatchListener] = {}

    def attach(self, peer: bytes, listener: BatchListener) -> None:
        self._listeners[peer] = listener

    def detach(self, peer: bytes) -> None:
        """The peer is gone: drop its batches, ask others for what it owed them."""
        if self._listeners.pop(peer, None) is None:
            return
        self._rerequest(self.tracker.peer_gone(peer))

    def offer(
        self,
        peer: bytes,
        offer: Offer,
        is_stored: Callable[[bytes], bool],
    ) -> list[int]:
        """Register `peer`'s offer; returns the indices to want (a complete batch is reported).
        A proven offer's holes are never wanted."""
        holes = frozenset(offer.hole_indices()) if isinstance(offer, ProvenOffer) else frozenset()
        decision = self.tracker.offer(
            peer, offer.bin, offer.live, offer.start, offer.end, offer.hashes, is_stored, holes
        )
        if decision.completed is not None:
            self._completed(decision.completed)
        return decision.wanted

    def stored(self, addresses: Iterable[bytes]) -> None:
        """These chunks are now in the local store."""
        tracker = self.tracker
        for address in addresses:
            for done in tracker.stored(address):
                self._completed(done)

    def request_failed(self, address: bytes, peer: bytes) -> None:
        again = self.tracker.request_failed(address, peer)
        if again is not None:
            self._rerequest([again])

    def incomplete(self, peer: bytes, bin: int, live: bool) -> int:
        return self.tracker.incomplete(peer, bin, live)

    def open_batches(self, peer: bytes) -> int:
        return self.tracker.open_batches(peer)

    def _completed(self, done: CompletedBatch) -> None:
        listener = self._listeners.get(done.peer)
        if listener is not None:
            listener.batch_completed(done)

    def _rerequest(self, rerequests: list[Rerequest]) -> None:
        for again in rerequests:
            listener = self._listeners.get(again.peer)
            if listener is not None:
                listener.fetch_soon(again.address)
            else:
                log.debug("no peer left to re-request %s from", again.address.hex()[:12])
