"""Batch pushes: an uploader's chunks sent in frames of up to 15 to the peers that store them,
each frame answered by one receipt.

A `PushDelivery` costs a frame, a signature and a signature check per chunk, and a task on both
sides. When the uploader is connected to a chunk's storers (as it is in a small swarm, and for
the chunks of its own neighbourhood), it sends the chunk straight to the closest peer that has
not signed for it yet, grouped with the other chunks bound for that peer: a `PushBatch`, stored
by the peer itself, never forwarded: the chunks it is responsible for or has no closer peer for
(those it would store if pushed one by one), or all of them when the peer lies within the radius a
first storer named (``direct``, as a push with hop limit 0). The peer verifies every chunk it
does not hold already (on its verifier workers if it has any; an invalid one drops the uploader,
as for a single push), stores them in one write and answers
with a `PushBatchReceipt`: one signature over the hash of the addresses it stored
(streamer/push_receipts.py), which the uploader checks once for the whole batch. A chunk is
credited to the storer only if the receipt names it within the storer's radius and the storer is
among the ``credible_within`` nodes this node knows closest to it, as for a single receipt.

What a batch does not settle (no credible peer connected, a failure, a chunk the receipt leaves
out) is left to the single, forwarding push (swarm/net/pushsync.py), which the pusher
(swarm/reserve/pusher.py) falls back on.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from functools import partial
from typing import Protocol

import trio

from chunks import Chunk, InvalidChunk
from pot import proximity
from streamer.connection import PeerConnection
from streamer.dispatch import Handlers
from streamer.errors import RemoteProtocolError
from streamer.identity import NodeIdentity
from streamer.messages import (
    MAX_PUSH_BATCH,
    GoodbyeCode,
    PushBatch,
    PushBatchReceipt,
    PushedChunk,
    PushFailure,
)
from streamer.outbox import Priority
from streamer.push_receipts import BadReceipt, make_batch_receipt, verify_batch_receipt
from swarm.net.peer_choice import closer_known, distance
from swarm.net.push_requests import PushFailed

__all__ = ["Attested", "BatchPeer", "BatchPushes", "PushRound", "ToPush"]

log = logging.getLogger(__name__)

MAX_BATCHES_PER_PEER = 8
"""Batches one peer may have this node serve at once; more are answered ``overloaded``."""

Attested = tuple[bytes, bytes, int]
"""(chunk address, storer overlay, the radius the storer signed): one chunk's receipt."""
ToPush = Sequence[tuple[Chunk, Collection[bytes], int | None]]
"""Chunks, each with the storers that signed for it so far and the smallest radius they named
(a peer that close to the chunk is asked to store it whatever its own depth, as in pushsync)."""
PushRound = Callable[[ToPush], Awaitable[list[Attested]]]


class BatchPeer(Protocol):
    """What batch pushes use of a connected peer."""

    @property
    def overlay(self) -> bytes: ...

    @property
    def conn(self) -> PeerConnection: ...

    async def push_batch(
        self, chunks: tuple[PushedChunk, ...], *, direct: bool, timeout: float
    ) -> PushBatchReceipt: ...


async def _verify_inline(chunks: list[Chunk]) -> list[str | None]:
    problems: list[str | None] = []
    for chunk in chunks:
        try:
            chunk.verify()
        except InvalidChunk as exc:
            problems.append(str(exc))
        else:
            problems.append(None)
    return problems


class BatchPushes:
    """The uploader's batches and the storer's side of them."""

    def __init__(
        self,
        identity: NodeIdentity,
        network_id: int,
        *,
        peers: Callable[[], Iterable[BatchPeer]],
        store_many: Callable[[list[Chunk]], object],
        verify: Callable[[list[Chunk]], Awaitable[list[str | None]]] | None = None,
        held: Callable[[Chunk], bool] = lambda chunk: False,
        responsible: Callable[[bytes], bool] = lambda address: True,
        radius: Callable[[], int],
        known: Callable[[], Iterable[bytes]],
        credible_within: int,
        timeout: float,
    ) -> None:
        self.identity = identity
        self.network_id = network_id
        self.overlay = identity.overlay(network_id)
        self._peers = peers
        self._store_many = store_many
        self._verify = verify or _verify_inline
        self._held = held
        self._responsible = responsible
        self._radius = radius
        self._known = known
        self.credible_within = credible_within
        self.timeout = timeout
        self._serving: dict[bytes, int] = {}
        self._sending: dict[bytes, trio.Semaphore] = {}  # our batches in flight per peer, bounded
        self.sent = self.attested = self.refused = self.received = self.held = 0

    # -- the uploader ---------------------------------------------------------------------------

    def plan(self, items: ToPush) -> dict[tuple[bytes, bool], list[Chunk]]:
        """Chunks by the peer to send them to and whether it is to store them all (``direct``):
        for each, the connected peer closest to it that has not signed for it (``storers``), if
        that peer is a credible storer; direct if it lies within ``near`` of the chunk. The others
        are left out."""
        peers = [p.overlay for p in self._peers() if not p.conn.closed]
        known = [*self._known(), self.overlay]
        groups: dict[tuple[bytes, bool], list[Chunk]] = defaultdict(list)
        for chunk, storers, near in items:
            candidates = [p for p in peers if p not in storers]
            if not candidates:
                continue
            best = min(candidates, key=lambda p: distance(p, chunk.address))
            if closer_known(chunk.address, best, known) < self.credible_within:
                direct = near is not None and proximity(best, chunk.address) >= near
                groups[best, direct].append(chunk)
        return groups

    async def push_round(self, items: ToPush) -> list[Attested]:
        """Send each chunk (with the storers that signed for it so far) in a batch to its planned
        peer, all batches at once; return the receipts that came back for them."""
        by_overlay = {p.overlay: p for p in self._peers()}
        results: list[Attested] = []
        async with trio.open_nursery() as nursery:
            for (overlay, direct), chunks in self.plan(items).items():
                for i in range(0, len(chunks), MAX_PUSH_BATCH):
                    batch = chunks[i : i + MAX_PUSH_BATCH]
                    nursery.start_soon(self._push_one_batch, by_overlay[overlay], direct, batch, results)
        return results

    async def _push_one_batch(
        self, peer: BatchPeer, direct: bool, chunks: list[Chunk], results: list[Attested]
    ) -> None:
        pushed = tuple(PushedChunk(c.address, c.data) for c in chunks)
        self.sent += 1
        limit = self._sending.setdefault(peer.overlay, trio.Semaphore(MAX_BATCHES_PER_PEER))
        try:
            async with limit:
                receipt = await peer.push_batch(pushed, direct=direct, timeout=self.timeout)
            storer, covered = verify_batch_receipt(
                receipt, network_id=self.network_id, pushed={c.address for c in chunks}
            )
        except (PushFailed, BadReceipt) as exc:
            if isinstance(exc, BadReceipt):
                self.refused += 1
            log.debug("batch of %d to %s failed: %s", len(chunks), peer.overlay.hex()[:12], exc)
            return
        if storer != peer.overlay:
            self.refused += 1
            log.debug("batch receipt from %s signed by %s", peer.overlay.hex()[:12], storer.hex()[:12])
            return
        known = [*self._known(), self.overlay]
        for address in covered:
            if closer_known(address, storer, known) < self.credible_within:
                results.append((address, storer, receipt.radius))
                self.attested += 1

    # -- serving peers --------------------------------------------------------------------------

    def _stores_here(self, address: bytes) -> bool:
        """Responsible for the chunk, or no connected peer is closer to it (pushsync's rule)."""
        if self._responsible(address):
            return True
        own = distance(self.overlay, address)
        return not any(distance(p.overlay, address) < own for p in self._peers() if not p.conn.closed)

    def handlers(self, peer: BatchPeer) -> Handlers:
        """What this node serves ``peer``: the batches it pushes here."""
        return {PushBatch: partial(self.on_batch, peer)}

    def on_batch(self, peer: BatchPeer, msg: PushBatch) -> None:
        conn = peer.conn
        busy = self._serving.get(peer.overlay, 0)
        if busy >= MAX_BATCHES_PER_PEER:
            try:
                conn.send_nowait(PushFailure(msg.request_id, "overloaded"), Priority.RETRIEVAL)
            except (trio.WouldBlock, trio.ClosedResourceError):
                log.debug("could not tell %s it is over its batch limit", peer.overlay.hex()[:12])
            return
        self._serving[peer.overlay] = busy + 1
        conn.start_soon(self._serve, peer, msg)

    async def _serve(self, peer: BatchPeer, msg: PushBatch) -> None:
        try:
            chunks = [Chunk(item.address, item.data) for item in msg.chunks]
            if not msg.direct:  # what it would forward if pushed one by one is left out
                chunks = [chunk for chunk in chunks if self._stores_here(chunk.address)]
            new = [chunk for chunk in chunks if not self._held(chunk)]  # held: verified when stored
            for chunk, problem in zip(new, await self._verify(new) if new else [], strict=True):
                if problem is not None:
                    problem = f"invalid pushed chunk {chunk.address.hex()}: {problem}"
                    raise RemoteProtocolError(problem, GoodbyeCode.INVALID_CHUNK)
            self.received += len(chunks)
            self.held += len(chunks) - len(new)
            if new:
                self._store_many(new)
            receipt = make_batch_receipt(
                self.identity,
                network_id=self.network_id,
                request_id=msg.request_id,
                addresses=[c.address for c in chunks],
                radius=self._radius(),
            )
            await peer.conn.send(receipt, Priority.RETRIEVAL)
        finally:
            self._serving[peer.overlay] -= 1
            if not self._serving[peer.overlay]:
                del self._serving[peer.overlay]
