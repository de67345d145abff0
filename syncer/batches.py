"""Offered batches on the downstream side: what to want, when a batch is complete (pure).

One `BatchTracker` serves the whole node, across every upstream peer and stream, because the
"one transfer per chunk" rule is node-wide: a chunk that is stored is not wanted; a chunk already
requested from one peer is not requested from another, but every batch that offered it waits for
it, and if the first request fails it is requested again from a peer that offered it.

A batch is complete when every chunk it offered is stored (whoever delivered it); only then may
its range be added to the synced intervals. It is forgotten once it is complete *and* its peer
has delivered everything we wanted from it, so a late but honest delivery is never mistaken for
an unsolicited one.

Nothing here does I/O or knows about time: the trio shell feeds events in and acts on the values
returned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


class SyncViolation(Exception):
    """The remote peer broke the sync protocol (an unknown offer, an unsolicited delivery ...)."""


class UnsolicitedDelivery(SyncViolation):
    """A delivery of something we did not want from that peer."""


class UnexpectedOffer(SyncViolation):
    """An offer that repeats one still open, or is malformed for its stream."""


@dataclass(frozen=True, order=True)
class BatchKey:
    """Identifies one offer: the upstream, its stream (bin, live) and the offer's first bin ID."""

    peer: bytes
    bin: int
    live: bool
    start: int


@dataclass(frozen=True, order=True)
class CompletedBatch:
    """A batch whose every chunk is stored: `[start, end]` of `peer`'s `bin` is now synced."""

    peer: bytes
    bin: int
    live: bool
    start: int
    end: int


@dataclass(frozen=True)
class OfferDecision:
    """The answer to an offer: the indices to want, and the batch if it is already complete."""

    wanted: list[int]
    completed: CompletedBatch | None


@dataclass(frozen=True)
class Rerequest:
    """Ask `peer` (which offered `address` too) for the chunk again, by a direct request."""

    address: bytes
    peer: bytes


@dataclass(frozen=True)
class PeerGone:
    """What dropping a peer left behind."""

    missing: int
    rerequests: list[Rerequest]


@dataclass
class _Batch:
    key: BatchKey
    end: int
    wanted: dict[int, bytes]  # index -> address we still expect this peer to deliver
    waiting: set[bytes]  # addresses of this batch not stored yet
    completed: bool = False


@dataclass
class _PeerState:
    batches: set[BatchKey] = field(default_factory=set)


class BatchTracker:
    """Node-wide bookkeeping of open batches and in-flight chunk requests."""

    def __init__(self) -> None:
        self._batches: dict[BatchKey, _Batch] = {}
        self._by_peer: dict[bytes, _PeerState] = {}
        # address -> batches (open or not yet forgotten) that are waiting for it, in arrival order
        self._waiters: dict[bytes, list[BatchKey]] = {}
        # address -> the peer it has been requested from (at most one at a time)
        self._requested: dict[bytes, bytes] = {}

    # -- events ------------------------------------------------------------------------------

    def offer(
        self,
        peer: bytes,
        bin: int,
        live: bool,
        start: int,
        end: int,
        hashes: Sequence[bytes],
        is_stored: Callable[[bytes], bool],
    ) -> OfferDecision:
        """Register an offer and decide which of its hashes to want from `peer`."""
        key = BatchKey(peer, bin, live, start)
        if key in self._batches:
            raise UnexpectedOffer(
                f"offer for bin {bin} ({_kind(live)}) starting at {start} repeats one still open"
            )
        if start > end:
            raise UnexpectedOffer(f"offer range [{start}, {end}] is empty")
        batch = _Batch(key=key, end=end, wanted={}, waiting=set())
        for index, address in enumerate(hashes):
            if address in batch.waiting or is_stored(address):
                continue
            batch.waiting.add(address)
            self._waiters.setdefault(address, []).append(key)
            if address not in self._requested:
                self._requested[address] = peer
                batch.wanted[index] = address
        self._batches[key] = batch
        self._by_peer.setdefault(peer, _PeerState()).batches.add(key)
        completed = None
        if not batch.waiting:
            completed = self._complete(batch)
        return OfferDecision(wanted=sorted(batch.wanted), completed=completed)

    def delivery(self, peer: bytes, bin: int, live: bool, start: int, index: int) -> bytes:
        """Check a delivery against what we wanted; returns the address the data must hash to.

        Each wanted index may be delivered once; anything else raises `UnsolicitedDelivery`.
        """
        batch = self._batches.get(BatchKey(peer, bin, live, start))
        if batch is None:
            raise UnsolicitedDelivery(
                f"delivery for bin {bin} ({_kind(live)}) offer {start} index {index}: no such open offer"
            )
        address = batch.wanted.pop(index, None)
        if address is None:
            raise UnsolicitedDelivery(
                f"delivery for bin {bin} ({_kind(live)}) offer {start} index {index}: not wanted"
            )
        # The request stays registered until the chunk is stored: if this data turns out to be
        # invalid, dropping the peer re-requests the chunk for everyone else waiting on it.
        self._forget_if_done(batch)
        return address

    def delivery_failed(self, peer: bytes, bin: int, live: bool, start: int, index: int) -> None:
        """A wanted chunk arrived but could not be stored (it was invalid): stop expecting it."""
        batch = self._batches.get(BatchKey(peer, bin, live, start))
        if batch is not None:
            batch.wanted.pop(index, None)

    def stored(self, address: bytes) -> list[CompletedBatch]:
        """A chunk is now in the local store (from any source); returns the batches it completed."""
        self._requested.pop(address, None)
        keys = self._waiters.pop(address, None)
        if not keys:
            return []
        completed: list[CompletedBatch] = []
        for key in keys:
            batch = self._batches.get(key)
            if batch is None:
                continue
            batch.waiting.discard(address)
            if not batch.waiting and not batch.completed:
                completed.append(self._complete(batch))
        return completed

    def request_failed(self, address: bytes, peer: bytes) -> Rerequest | None:
        """A direct request for `address` to `peer` failed: pick another peer that offered it."""
        if self._requested.get(address) == peer:
            del self._requested[address]
        return self._reassign(address, exclude=peer)

    def peer_gone(self, peer: bytes) -> PeerGone:
        """Forget every batch of a disconnected peer; re-request what others still wait for."""
        state = self._by_peer.pop(peer, None)
        missing = 0
        orphaned: set[bytes] = set()
        for key in sorted(state.batches) if state else []:
            batch = self._batches.pop(key)
            missing += len(batch.wanted)
            orphaned.update(batch.wanted.values())
            for address in batch.waiting:
                waiters = self._waiters.get(address)
                if waiters is not None:
                    waiters[:] = [k for k in waiters if k != key]
                    if not waiters:
                        del self._waiters[address]
        for address, asked in list(self._requested.items()):
            if asked == peer:
                del self._requested[address]
                orphaned.add(address)
        rerequests = []
        for address in sorted(orphaned):
            again = self._reassign(address, exclude=peer)
            if again is not None:
                rerequests.append(again)
        return PeerGone(missing=missing, rerequests=rerequests)

    def note_request(self, address: bytes, peer: bytes) -> bool:
        """Record a direct request for `address` to `peer`; False if one is already in flight."""
        if address in self._requested:
            return False
        self._requested[address] = peer
        return True

    # -- queries -----------------------------------------------------------------------------

    def incomplete(self, peer: bytes, bin: int, live: bool) -> int:
        """How many batches of this stream are not complete yet (for downstream flow control)."""
        state = self._by_peer.get(peer)
        if state is None:
            return 0
        return sum(
            1
            for key in state.batches
            if key.bin == bin and key.live == live and not self._batches[key].completed
        )

    def open_batches(self, peer: bytes) -> int:
        """Batches of `peer` that are not complete yet."""
        state = self._by_peer.get(peer)
        if state is None:
            return 0
        return sum(1 for key in state.batches if not self._batches[key].completed)

    def outstanding(self, peer: bytes) -> int:
        """Chunks wanted from `peer` and not delivered yet."""
        state = self._by_peer.get(peer)
        if state is None:
            return 0
        return sum(len(self._batches[key].wanted) for key in state.batches)

    def requested_from(self, address: bytes) -> bytes | None:
        return self._requested.get(address)

    def __len__(self) -> int:
        return len(self._batches)

    # -- internals ---------------------------------------------------------------------------

    def _complete(self, batch: _Batch) -> CompletedBatch:
        batch.completed = True
        key = batch.key
        done = CompletedBatch(peer=key.peer, bin=key.bin, live=key.live, start=key.start, end=batch.end)
        self._forget_if_done(batch)
        return done

    def _forget_if_done(self, batch: _Batch) -> None:
        if batch.completed and not batch.wanted:
            key = batch.key
            del self._batches[key]
            state = self._by_peer.get(key.peer)
            if state is not None:
                state.batches.discard(key)
                if not state.batches:
                    del self._by_peer[key.peer]

    def _reassign(self, address: bytes, exclude: bytes) -> Rerequest | None:
        if address in self._requested:
            return None
        for key in self._waiters.get(address, ()):
            if key.peer != exclude and key in self._batches:
                self._requested[address] = key.peer
                return Rerequest(address=address, peer=key.peer)
        return None


def _kind(live: bool) -> str:
    return "live" if live else "historical"
