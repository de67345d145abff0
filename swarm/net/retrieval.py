"""Retrieval: getting a chunk this node does not hold, and serving peers' requests, hop by hop.

Whom to ask is `swarm.net.peer_choice`'s rule: the closest connected peer not yet asked for this
request (among equally close ones the least loaded), then the next, up to a bounded number of
attempts; a forwarding node asks only peers strictly closer to the chunk than itself (never the
peer that asked), so no request loops, while the node's own requests may also ask farther peers
(in a small swarm the holder is often farther from a chunk than the node asking). A miss moves on
to the next peer at once; an attempt silent for ``hedge_after`` gets a parallel one, and the
first good answer wins (`swarm.net.hedged`). A peer that left a request unanswered is tried last
for a while. Nothing waits past the request's deadline. The data that comes back is verified
(BMT) at every hop, and a peer that sends invalid data is dropped. Chunks that come back are not
stored but kept in a bounded in-memory LRU cache (`localstore.cache`) that answers later requests
for them without the network; concurrent requests for one chunk share a single trip.
Retrieval traffic uses the outbox's most urgent class.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

import trio

from chunks import Chunk, InvalidChunk
from localstore import ChunkDamaged, ChunkNotFound
from localstore.cache import DEFAULT_CACHE_BYTES, ChunkCache
from streamer.connection import PeerConnection
from streamer.dispatch import Handlers
from streamer.errors import RemoteProtocolError
from streamer.messages import GoodbyeCode, RetrieveDelivery, RetrieveFailure, RetrieveRequest, clip_reason
from streamer.outbox import Priority
from streamer.requests import NO_ANSWER, OpenRetrieve, RetrieveFailed
from swarm.net.hedged import AttemptFailed, HedgePolicy, NoPeerDelivered, first_success
from swarm.net.peer_choice import DEFAULT_FORWARDING, AttemptPlan, Avoidance, Forwarding, LoadBook

log = logging.getLogger(__name__)

MAX_SERVING_PER_PEER = 64
HEDGE_AFTER = 0.25
"""Seconds an attempt may stay silent before the next peer is asked in parallel. Measured with
benches.retrieval (8 nodes, 2 cores): a healthy retrieval answers within 0.13 s (p95 0.10-0.12 s),
a hung peer costs the delay plus about 0.05 s; 0.25 s is twice the slowest healthy answer, so a
slow but healthy attempt is seldom doubled."""


class RetrievalPeer(Protocol):
    """What retrieval uses of a connected peer."""

    @property
    def overlay(self) -> bytes: ...

    @property
    def conn(self) -> PeerConnection: ...

    async def retrieve(self, address: bytes, *, hop_limit: int, timeout: float | None = None) -> bytes: ...

    def start_retrieve(self, address: bytes, *, hop_limit: int) -> OpenRetrieve | None: ...


@dataclass(frozen=True)
class RetrievalStatistics:
    served: int  # peers' requests answered from this node's store or cache
    forwarded: int  # peers' requests answered by asking closer peers
    failed: int  # peers' requests answered with a failure
    fetched: int  # this node's own requests answered by the network
    joined: int  # requests that shared another's trip instead of asking peers
    cache_hits: int
    cache_misses: int
    cache_chunks: int
    cache_bytes: int


class ChunkUnavailable(Exception):
    """No peer could deliver the chunk: nobody closer has it, or no answer came in time."""

    def __init__(self, address: bytes, reason: str, timed_out: bool = False) -> None:
        super().__init__(f"chunk {address.hex()} unavailable: {reason}")
        self.address = address
        self.reason = reason
        self.timed_out = timed_out


@dataclass
class _Flight:
    """One request for a chunk under way, and what came of it."""

    hop_limit: int
    done: trio.Event = field(default_factory=trio.Event)
    chunk: Chunk | None = None
    error: ChunkUnavailable | None = None


class Retrieval:
    """Gets chunks for the node's users and answers (or forwards) peers' requests."""

    def __init__(
        self,
        overlay: bytes,
        store_get: Callable[[bytes], Chunk],
        peers: Callable[[], Iterable[RetrievalPeer]],
        *,
        hop_limit: int = 8,
        timeout: float = 10.0,
        attempts: int = 3,
        origin_attempts: int = 5,
        hedge_after: float = HEDGE_AFTER,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        avoidance: Avoidance | None = None,
        loads: LoadBook | None = None,
        forwarding: Forwarding = DEFAULT_FORWARDING,
        record: Callable[[bytes], None] = lambda address: None,
    ) -> None:
        self.overlay = overlay
        self._store_get = store_get
        self._peers = peers
        self.cache = ChunkCache(cache_bytes)
        self._flights: dict[tuple[bytes, bool], _Flight] = {}  # by address and whether our own
        self.hop_limit = hop_limit
        self.attempts = attempts  # peers a forwarding node asks at most
        self.origin_attempts = origin_attempts  # peers this node asks at most for its own users
        self.policy = HedgePolicy(timeout=timeout, hedge_after=hedge_after)
        self.avoidance = avoidance if avoidance is not None else Avoidance()
        self.loads = loads if loads is not None else LoadBook()  # requests in flight per peer
        self.forwarding = forwarding
        self._record = record  # each request sent on, by address (the bin load of the table)
        self._serving: dict[bytes, int] = {}
        self._open_ids: dict[bytes, set[int]] = {}  # per peer: request IDs being answered
        self.served = 0
        self.forwarded = 0
        self.failed = 0
        self.fetched = 0
        self.joined = 0  # requests that shared another's flight instead of asking peers

    # -- for the node's own users -------------------------------------------------------------

    async def get(self, address: bytes) -> Chunk:
        """The chunk at `address`: from the local store or the cache, else from the network."""
        chunk = self._local(address)
        if chunk is not None:
            return chunk
        chunk = await self.forward(address, hop_limit=self.hop_limit, origin=None)
        self.fetched += 1
        return chunk

    async def get_from_network(self, address: bytes) -> Chunk:
        """The chunk at `address` as peers answer, whether or not this node holds it."""
        return await self.forward(address, hop_limit=self.hop_limit, origin=None)

    def _local(self, address: bytes) -> Chunk | None:
        """What this node can answer without asking anyone: its store, then its cache."""
        try:
            return self._store_get(address)
        except ChunkNotFound:
            pass
        except ChunkDamaged as exc:
            log.error("%s; dropped from the store, asking the network", exc)
        return self.cache.get(address)

    # -- for peers ----------------------------------------------------------------------------

    def statistics(self) -> RetrievalStatistics:
        cache = self.cache
        return RetrievalStatistics(
            self.served,
            self.forwarded,
            self.failed,
            self.fetched,
            self.joined,
            cache.hits,
            cache.misses,
            len(cache),
            cache.bytes,
        )

    def handlers(self, peer: RetrievalPeer) -> Handlers:
        """What this node serves ``peer``: its retrieve requests."""
        return {RetrieveRequest: partial(self.on_request, peer)}

    def on_request(self, peer: RetrievalPeer, msg: RetrieveRequest) -> None:
        open_ids = self._open_ids.setdefault(peer.overlay, set())
        if msg.request_id in open_ids:
            raise RemoteProtocolError(f"retrieve request {msg.request_id} reused while still open")
        busy = self._serving.get(peer.overlay, 0)
        if busy >= MAX_SERVING_PER_PEER:
            try:
                peer.conn.send_nowait(RetrieveFailure(msg.request_id, "overloaded"), Priority.RETRIEVAL)
            except (trio.WouldBlock, trio.ClosedResourceError):
                log.debug("could not tell %r it is over its request limit", peer)
            return
        self._serving[peer.overlay] = busy + 1
        open_ids.add(msg.request_id)
        peer.conn.start_soon(self._serve, peer, msg)

    async def _serve(self, peer: RetrievalPeer, msg: RetrieveRequest) -> None:
        try:
            found = self._local(msg.address)
            if found is None:
                if msg.hop_limit == 0:
                    answer: RetrieveDelivery | RetrieveFailure = RetrieveFailure(msg.request_id, "not found")
                else:
                    try:
                        chunk = await self.forward(
                            msg.address, hop_limit=msg.hop_limit - 1, origin=peer.overlay
                        )
                    except ChunkUnavailable as exc:
                        answer = RetrieveFailure(msg.request_id, clip_reason(exc.reason))
                    else:
                        self.forwarded += 1
                        answer = RetrieveDelivery(msg.request_id, chunk.data)
            else:
                self.served += 1
                answer = RetrieveDelivery(msg.request_id, found.data)
            if isinstance(answer, RetrieveFailure):
                self.failed += 1
            await peer.conn.send(answer, Priority.RETRIEVAL)
        finally:
            self._open_ids[peer.overlay].discard(msg.request_id)
            self._serving[peer.overlay] -= 1
            if not self._serving[peer.overlay]:
                del self._serving[peer.overlay]
                del self._open_ids[peer.overlay]

    # -- forwarding ---------------------------------------------------------------------------

    async def forward(self, address: bytes, *, hop_limit: int, origin: bytes | None) -> Chunk:
        """The chunk from the network, sharing a request already under way for it.

        ``origin`` is the peer that asked (None: this node's own user). A second request for a
        chunk joins the first one's outcome instead of sending its own, if the first may go at
        least as many hops and is of the same kind: a peer's request only joins another peer's,
        whose attempts all go to peers closer than this node (the node's own requests may ask
        farther peers, and one of them could be the peer asking: the two would wait on each
        other). If the first request is cancelled, a waiting one tries again itself.
        """
        key = (address, origin is None)
        while True:
            flight = self._flights.get(key)
            if flight is None or flight.hop_limit < hop_limit:
                break
            self.joined += 1
            await flight.done.wait()
            if flight.chunk is not None:
                return flight.chunk
            if flight.error is not None:
                raise flight.error
        flight = self._flights[key] = _Flight(hop_limit)  # later requests join this one
        try:
            flight.chunk = await self._ask_peers(address, hop_limit=hop_limit, origin=origin)
            return flight.chunk
        except ChunkUnavailable as exc:
            flight.error = exc
            raise
        finally:
            if self._flights.get(key) is flight:
                del self._flights[key]
            flight.done.set()

    async def _ask_peers(self, address: bytes, *, hop_limit: int, origin: bytes | None) -> Chunk:
        """Ask peers as `peer_choice` says, hedged (`swarm.net.hedged`); verify what comes back."""
        own_request = origin is None
        self._record(address)
        plan = AttemptPlan(
            address,
            self.overlay,
            self.origin_attempts if own_request else self.attempts,
            farther_ok=own_request,
            exclude=frozenset() if origin is None else frozenset({origin}),
            rule=self.forwarding,
            loads=self.loads,
        )

        async def attempt(peer: RetrievalPeer, deadline: float) -> Chunk:
            timeout = max(deadline - trio.current_time(), 0.001)
            try:
                data = await peer.retrieve(address, hop_limit=hop_limit, timeout=timeout)
            except RetrieveFailed as exc:
                raise AttemptFailed(str(exc), timed_out=exc.timed_out) from exc
            return self._checked(peer, address, data)

        def start(peer: RetrievalPeer) -> _Started | None:
            try:
                request = peer.start_retrieve(address, hop_limit=hop_limit)
            except RetrieveFailed as exc:
                raise AttemptFailed(str(exc), timed_out=exc.timed_out) from exc
            return None if request is None else _Started(self, peer, address, request)

        try:
            _, chunk = await first_success(
                plan, self._candidates, attempt, policy=self.policy, avoidance=self.avoidance, start=start
            )
        except NoPeerDelivered as exc:
            if not exc.asked:
                where = "no connected peer" if own_request else "no connected peer is closer to it"
                raise ChunkUnavailable(address, f"not found ({where})") from None
            if exc.timed_out:
                raise ChunkUnavailable(address, NO_ANSWER, timed_out=True) from None
            asked = f"asked {exc.asked} peer{'s' * (exc.asked > 1)}"
            raise ChunkUnavailable(address, f"not found ({asked})") from None
        self.cache.put(chunk)
        return chunk

    def _checked(self, peer: RetrievalPeer, address: bytes, data: bytes) -> Chunk:
        """The delivered chunk, verified; a peer that sent an invalid one is dropped."""
        try:
            return Chunk(address, data).checked()
        except InvalidChunk as exc:
            reason = f"invalid chunk in a retrieve delivery: {exc}"
            peer.conn.close(GoodbyeCode.INVALID_CHUNK, reason, violation=True)
            raise AttemptFailed(f"peer {peer.overlay.hex()[:12]} sent an invalid chunk") from exc

    def _candidates(self) -> dict[bytes, RetrievalPeer]:
        return {peer.overlay: peer for peer in self._peers() if not peer.conn.closed}


class _Started:
    """A retrieve request already sent to `peer` (`swarm.net.hedged.Started`): its answer,
    verified."""

    def __init__(
        self, retrieval: Retrieval, peer: RetrievalPeer, address: bytes, request: OpenRetrieve
    ) -> None:
        self._retrieval, self._peer, self._address, self._request = retrieval, peer, address, request

    async def outcome(self) -> Chunk:
        try:
            data = await self._request.answer()
        except RetrieveFailed as exc:
            raise AttemptFailed(str(exc), timed_out=exc.timed_out) from exc
        return self._retrieval._checked(self._peer, self._address, data)

    def close(self) -> None:
        self._request.close()
