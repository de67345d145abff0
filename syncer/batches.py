"""Offered batches on the downstream side: what to want, when a batch is complete (pure).

One `BatchTracker` serves the whole node, across every upstream peer and stream, because the
"one transfer per chunk" rule is node-wide: a chunk that is stored is not wanted; a chunk already
requested from one peer is not requested from another, but every batch that offered it waits for
it, and if the first request fails it is requested again from a peer that offered it.

A batch is complete when every chunk it offered is stored (whoever delivered it); only then may
its range be added to the synced intervals, and the tracker forgets it. Which deliveries a peer
may still send is the connection's business (`syncer.session`), not this module's.

Nothing here does I/O or knows about time: the caller feeds events in and acts on the values
returned.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from streamer.errors import RemoteProtocolError


class UnexpectedOffer(RemoteProtocolError):
    """An offer that repeats one still open, or whose range is empty."""


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


@dataclass
class _Batch:
    key: BatchKey
    end: int
    waiting: set[bytes]  # addresses of this batch not stored yet


@dataclass
class _PeerState:
    batches: set[BatchKey] = field(default_factory=set)


class BatchTracker:
    """Node-wide bookkeeping of open batches and in-flight chunk requests."""

    def __init__(self) -> None:
        self._batches: dict[BatchKey, _Batch] = {}
        self._by_peer: dict[bytes, _PeerState] = {}
        # address -> open batches waiting for it, in arrival order
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
        holes: Collection[int] = (),
    ) -> OfferDecision:
        """Register an offer and decide which of its hashes to want from `peer`; ``holes``: the
        indices of entries the peer cannot deliver (a proven offer's holes), never wanted and not
        waited for."""
        key = BatchKey(peer, bin, live, start)
        if key in self._batches:
            raise UnexpectedOffer(
                f"offer for bin {bin} ({_kind(live)}) starting at {start} repeats one still open"
            )
        if start > end:
            raise UnexpectedOffer(f"offer range [{start}, {end}] is empty")
        waiting: set[bytes] = set()
        wanted = []
        for index, address in enumerate(hashes):
            if index in holes or address in waiting or is_stored(address):
                continue
            waiting.add(address)
            self._waiters.setdefault(address, []).append(key)
            if address not in self._requested:
                self._requested[address] = peer
                wanted.append(index)
        batch = _Batch(key, end, waiting)
        if not waiting:
            return OfferDecision(wanted, self._complete(batch))
        self._batches[key] = batch
        self._by_peer.setdefault(peer, _PeerState()).batches.add(key)
        return OfferDecision(wanted, None)

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
            if not batch.waiting:
                self._forget(key)
                completed.append(self._complete(batch))
        return completed

    def request_failed(self, address: bytes, peer: bytes) -> Rerequest | None:
        """The request for `address` to `peer` failed: pick another peer that offered it."""
        if self._requested.get(address) == peer:
            del self._requested[address]
        return self._reassign(address, exclude=peer)

    def peer_gone(self, peer: bytes) -> list[Rerequest]:
        """Forget every batch of a disconnected peer; re-request what others still wait for."""
        state = self._by_peer.get(peer)
        for key in sorted(state.batches) if state else []:
            batch = self._batches[key]
            self._forget(key)
            for address in batch.waiting:
                waiters = self._waiters.get(address)
                if waiters is not None:
                    waiters[:] = [k for k in waiters if k != key]
                    if not waiters:
                        del self._waiters[address]
        orphaned = sorted(address for address, asked in self._requested.items() if asked == peer)
        rerequests = []
        for address in orphaned:
            del self._requested[address]
            again = self._reassign(address, exclude=peer)
            if again is not None:
                rerequests.append(again)
        return rerequests

    # -- queries -----------------------------------------------------------------------------

    def incomplete(self, peer: bytes, bin: int, live: bool) -> int:
        """How many batches of this stream are not complete yet (for downstream flow control)."""
        state = self._by_peer.get(peer)
        if state is None:
            return 0
        return sum(1 for key in state.batches if key.bin == bin and key.live == live)

    def open_batches(self, peer: bytes) -> int:
        """Batches of `peer` that are not complete yet."""
        state = self._by_peer.get(peer)
        return 0 if state is None else len(state.batches)

    def requested_from(self, address: bytes) -> bytes | None:
        return self._requested.get(address)

    def __len__(self) -> int:
        return len(self._batches)

    # -- internals ---------------------------------------------------------------------------

    @staticmethod
    def _complete(batch: _Batch) -> CompletedBatch:
        key = batch.key
        return CompletedBatch(peer=key.peer, bin=key.bin, live=key.live, start=key.start, end=batch.end)

    def _forget(self, key: BatchKey) -> None:
        del self._batches[key]
        state = self._by_peer[key.peer]
        state.batches.discard(key)
        if not state.batches:
            del self._by_peer[key.peer]

    def _reassign(self, address: bytes, exclude: bytes) -> Rerequest | None:
        if address in self._requested:
            return None
        for key in self._waiters.get(address, ()):
            if key.peer != exclude:
                self._requested[address] = key.peer
                return Rerequest(address=address, peer=key.peer)
        return None


def _kind(live: bool) -> str:
    return "live" if live else "historical"
