"""Takeover: what a verifying client took over from one upstream, and the receipts it owes (trio).

For each offer the session verified, it keeps what the offer's receipt will need: its end, the
upstream's root there, its entries. When the offer's batch completes, its range is recorded as
taken over and persisted, but for every entry this node does not hold then (syncer/receipts.py):
a hole, or a chunk not wanted because it is outside the storage radius (the reserve's
`within_radius`: the radius may rise while a stream runs). A receipt for the taken-over run
that ends there becomes due: sent at once, or once `interval` has passed since the bin's last
one (the latest of a run covers what it replaces, so the upstream checks about one a second per
bin; receipts of different runs, apart where this node lacks an entry, are all sent).
It also persists the live states the session accepted, and the equivocations it found before
the peer is dropped for them (docs/protocol.md 8.6).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import trio

from streamer.messages import Message, OfferedHashes, SkippedOffer
from streamer.outbox import Priority
from streamer.states import StateSigner
from syncer.batches import CompletedBatch
from syncer.intervals import Intervals
from syncer.proof_store import ProofStore
from syncer.provable import ProvenLogs
from syncer.receipts import take_over
from syncer.session import DownstreamSession
from syncer.session_events import OfferReceived

__all__ = ["Takeover", "Verifying"]


@dataclass(frozen=True)
class Verifying:
    """What verifying provable streams needs: the upstream's logs as this connection knows them,
    this node's signer (receipts) and where accepted states and taken-over ranges are kept."""

    logs: ProvenLogs
    signer: StateSigner
    proofs: ProofStore


class _Connection(Protocol):
    async def send(self, msg: Message, priority: Priority = ...) -> None: ...

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None: ...


@dataclass
class _Batch:
    end: int
    root: bytes
    addresses: tuple[bytes, ...]  # every entry of the offer, from its start: what must be held here


@dataclass
class _DueReceipt:
    start: int
    end: int
    root: bytes
    live: bool


class Takeover:
    def __init__(
        self,
        verifying: Verifying,
        session: DownstreamSession,
        conn: _Connection,
        has: Callable[[bytes], bool],
        *,
        upstream: bytes,
        epoch: int,
        interval: float,
    ) -> None:
        self.verifying = verifying
        self.session = session
        self.conn = conn
        self.has = has
        self.upstream = upstream
        self.epoch = epoch
        self.interval = interval
        self._batches: dict[tuple[int, bool, int], _Batch] = {}  # verified, not complete yet
        self._taken: dict[int, Intervals] = {}
        self._due: dict[int, list[_DueReceipt]] = {}  # per bin: one per taken-over run
        self._sent_at: dict[int, float] = {}
        self._evidence_kept = 0
        self.sent = 0

    def offer_verified(self, event: OfferReceived) -> None:
        """Keep what the offer's receipt needs; persist a live offer's state (the new latest)."""
        offer = event.offer
        if event.root is None or isinstance(offer, OfferedHashes):
            return
        if isinstance(offer, SkippedOffer):
            # No receipt covers it: without its hashes this node cannot tell that it holds every
            # chunk of it, and an upstream could skip a range to make it sign for chunks it never
            # had. Its state is the new latest all the same.
            self.verifying.proofs.accept(self.upstream, offer.state)
            return
        self._batches[(offer.bin, offer.live, offer.start)] = _Batch(offer.end, event.root, offer.hashes)
        if offer.state is not None:
            self.verifying.proofs.accept(self.upstream, offer.state)

    def batch_completed(self, done: CompletedBatch) -> None:
        """The batch is stored: record what of it this node holds as taken over; a receipt is due
        unless its end is not held."""
        batch = self._batches.pop((done.bin, done.live, done.start), None)
        if batch is None:
            return
        proofs = self.verifying.proofs
        taken = self._taken.get(done.bin)
        if taken is None:
            taken = self._taken[done.bin] = proofs.taken(self.upstream, self.epoch, done.bin)
        # not only the holes: an entry not wanted (outside the radius) is not held either
        missing = [
            bin_id for bin_id, address in enumerate(batch.addresses, done.start) if not self.has(address)
        ]
        first = take_over(taken, done.start, batch.end, missing)
        proofs.put_taken(self.upstream, self.epoch, done.bin, taken)
        if first is None:
            return
        new = _DueReceipt(first, batch.end, batch.root, done.live)
        due = self._due.get(done.bin)
        if due is None:
            self._due[done.bin] = [new]
            self.conn.start_soon(self._send, done.bin)
        elif not any(d.start <= new.start and new.end <= d.end for d in due):
            # the new one replaces those it covers; another run's stays due beside it
            due[:] = [d for d in due if not (new.start <= d.start and d.end <= new.end)] + [new]

    async def _send(self, bin: int) -> None:
        wait = self._sent_at.get(bin, -1e9) + self.interval - trio.current_time()
        if wait > 0:
            await trio.sleep(wait)
        self._sent_at[bin] = trio.current_time()
        for due in self._due.pop(bin):
            receipt = self.verifying.signer.receipt(
                self.upstream, bin, self.epoch, due.start, due.end, due.root
            )
            self.session.send(receipt)
            self.sent += 1
            await self.conn.send(receipt, Priority.of_stream(due.live))

    def keep_evidence(self) -> None:
        """Persist the equivocations the session found since the last call."""
        logs = self.verifying.logs
        for found in logs.equivocations[self._evidence_kept :]:
            self.verifying.proofs.record_equivocation(
                self.upstream, logs.public_key, found.first, found.second
            )
        self._evidence_kept = len(logs.equivocations)
