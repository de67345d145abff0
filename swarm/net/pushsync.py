"""Push syncing: an uploaded chunk carried hop by hop to its neighbourhood, answered by a receipt.

The mirror of retrieval (swarm/net/retrieval.py), with the same rule of whom to ask
(`swarm.net.peer_choice`) and the same hedging (`swarm.net.hedged`): a `PushDelivery` goes to the
connected peer closest to the chunk's address; a forwarding node sends it only to peers strictly
closer than itself, so every hop gets closer and nothing loops, while the uploader may also send
it to a farther peer (to reach a second storer in a small swarm), never to a storer that already
signed for the chunk, and counts a receipt from one of those again as a miss. A miss moves on to
the next peer; a silent one gets a parallel attempt after ``hedge_after``. A node that receives
a push verifies the chunk (an invalid one drops the peer), then either

- *stores* it, if it is responsible for the chunk (within its neighbourhood: `responsible`) or no
  connected peer is closer, and answers with a `PushReceipt` signed by its identity key
  (streamer/push_receipts.py: the chunk's address, its overlay, its storage radius), or
- *forwards* it the same way, hop limit lowered, and relays the receipt (or a `PushFailure`)
  back unchanged. A forwarder keeps no copy.

An uploader connected to a chunk's storers sends it in a batch instead (swarm/net/push_batches.py,
`batches`): many chunks in one frame, one receipt for them.

The origin (`push`) checks the receipt: a bad signature, another chunk or a storer outside its own
radius (a *shallow* receipt) counts as a failure and the next peer is tried. What to push, when
to retry and when the uploader may let go of a chunk is the pusher's business (swarm/reserve/pusher.py).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Iterable
from dataclasses import dataclass
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
    GoodbyeCode,
    PushBatchReceipt,
    PushDelivery,
    PushedChunk,
    PushFailure,
    PushReceipt,
    clip_reason,
)
from streamer.outbox import Priority
from streamer.push_receipts import BadReceipt, make_receipt, verify_receipt
from swarm.net.hedged import AttemptFailed, HedgePolicy, NoPeerDelivered, first_success
from swarm.net.peer_choice import (
    DEFAULT_FORWARDING,
    AttemptPlan,
    Avoidance,
    Forwarding,
    LoadBook,
    closer_known,
)
from swarm.net.push_batches import BatchPushes
from swarm.net.push_requests import PushFailed

__all__ = ["NoCloserPeer", "PushPeer", "PushStatistics", "PushSync"]

log = logging.getLogger(__name__)

MAX_PUSHES_PER_PEER = 64


class PushPeer(Protocol):
    """What push syncing uses of a connected peer."""

    @property
    def overlay(self) -> bytes: ...

    @property
    def conn(self) -> PeerConnection: ...

    async def push(self, address: bytes, data: bytes, *, hop_limit: int, timeout: float) -> PushReceipt: ...

    async def push_batch(
        self, chunks: tuple[PushedChunk, ...], *, direct: bool, timeout: float
    ) -> PushBatchReceipt: ...


class NoCloserPeer(Exception):
    """No connected peer is closer to the chunk than this node: it is the closest it knows."""


@dataclass(frozen=True)
class PushStatistics:
    received: int  # push deliveries from peers
    stored: int  # of those, stored here (a receipt signed by this node went back)
    forwarded: int  # of those, passed on to a closer peer, its receipt relayed back
    failed: int  # of those, answered with a failure
    pushed: int  # this node's own pushes that came back with a valid receipt
    rejected: int  # receipts this node refused (bad signature, another chunk, shallow)


class PushSync:
    """Pushes the node's chunks toward their neighbourhoods and serves peers' pushes."""

    def __init__(
        self,
        identity: NodeIdentity,
        network_id: int,
        *,
        peers: Callable[[], Iterable[PushPeer]],
        store: Callable[[Chunk], object],
        store_many: Callable[[list[Chunk]], object] | None = None,
        verify_many: Callable[[list[Chunk]], Awaitable[list[str | None]]] | None = None,
        held: Callable[[Chunk], bool] = lambda chunk: False,
        responsible: Callable[[bytes], bool],
        radius: Callable[[], int],
        hop_limit: int = 8,
        timeout: float = 10.0,
        attempts: int = 3,
        origin_attempts: int = 5,
        hedge_after: float = 0.25,
        avoidance: Avoidance | None = None,
        loads: LoadBook | None = None,
        forwarding: Forwarding = DEFAULT_FORWARDING,
        record: Callable[[bytes], None] = lambda address: None,
        known: Callable[[], Iterable[bytes]] = lambda: (),
        credible_within: int = 5,
    ) -> None:
        self.identity = identity
        self.network_id = network_id
        self.overlay = identity.overlay(network_id)
        self._peers = peers
        self._store = store
        self._responsible = responsible
        self._radius = radius
        self.hop_limit = hop_limit
        self.attempts = attempts  # peers a forwarding node tries at most
        self.origin_attempts = origin_attempts  # peers the uploader tries at most per push
        self.policy = HedgePolicy(timeout=timeout, hedge_after=hedge_after)
        self.avoidance = avoidance if avoidance is not None else Avoidance()
        self.loads = loads if loads is not None else LoadBook()  # requests in flight per peer
        self.forwarding = forwarding
        self._record = record  # each request this node sends on, by its address (the table's bin load)
        self._known = known  # the overlays this node knows (its address book), itself aside
        self.credible_within = credible_within  # a storer must be among the nodes we know this close
        self._serving: dict[bytes, int] = {}
        self.batches = BatchPushes(
            identity,
            network_id,
            peers=peers,
            store_many=store_many or (lambda chunks: [store(chunk) for chunk in chunks]),
            verify=verify_many,
            held=held,
            responsible=responsible,
            radius=radius,
            known=known,
            credible_within=credible_within,
            timeout=timeout,
        )
        self.received = self.stored = self.forwarded = self.failed = self.pushed = self.rejected = 0

    def statistics(self) -> PushStatistics:
        b = self.batches  # a chunk of a batch counts as a push of its own
        return PushStatistics(
            self.received + b.received,
            self.stored + b.received,
            self.forwarded,
            self.failed,
            self.pushed + b.attested,
            self.rejected + b.refused,
        )

    def own_receipt(self, address: bytes, request_id: int = 0) -> PushReceipt:
        """This node's receipt for a chunk it stores itself."""
        return make_receipt(
            self.identity,
            network_id=self.network_id,
            request_id=request_id,
            address=address,
            radius=self._radius(),
        )

    # -- the origin -----------------------------------------------------------------------------

    async def push(
        self, chunk: Chunk, *, storers: Collection[bytes] = (), near: int | None = None
    ) -> tuple[bytes, PushReceipt]:
        """Push a chunk this node stores toward its neighbourhood; return the storer's overlay and
        its receipt, from a storer not among ``storers`` (those that already signed for it).

        The first hop may be any connected peer, closest first, also one farther from the chunk
        than this node (to reach a second storer in a small swarm). A peer sharing at least
        ``near`` leading bits with the chunk (the radius a storer's receipt named: it lies in the
        same neighbourhood) is asked to store it itself, not to forward it, since forwarding
        would lead back to the storers that signed. Raises NoCloserPeer if there is no peer to
        ask, PushFailed if none stored it."""
        storer, receipt = await self._ask_peers(
            chunk, self.hop_limit, origin=None, exclude=frozenset(storers), check=True, near=near
        )
        self.pushed += 1
        return storer, receipt

    async def _ask_peers(
        self,
        chunk: Chunk,
        hop_limit: int,
        *,
        origin: bytes | None,
        exclude: frozenset[bytes],
        check: bool,
        near: int | None = None,
    ) -> tuple[bytes, PushReceipt]:
        self._record(chunk.address)
        plan = AttemptPlan(
            chunk.address,
            self.overlay,
            self.origin_attempts if origin is None else self.attempts,
            farther_ok=origin is None,
            exclude=exclude if origin is None else exclude | {origin},
            rule=self.forwarding,
            loads=self.loads,
        )

        async def attempt(peer: PushPeer, deadline: float) -> tuple[bytes, PushReceipt]:
            timeout = max(deadline - trio.current_time(), 0.001)
            try:
                direct = near is not None and proximity(peer.overlay, chunk.address) >= near
                hops = 0 if direct else hop_limit
                receipt = await peer.push(chunk.address, chunk.data, hop_limit=hops, timeout=timeout)
                storer = self._check(receipt, chunk.address, check)
            except (PushFailed, BadReceipt) as exc:
                raise AttemptFailed(str(exc), timed_out=getattr(exc, "timed_out", False)) from exc
            if storer in exclude:
                raise AttemptFailed(f"storer {storer.hex()[:12]} had already signed for it")
            return storer, receipt

        candidates = lambda: {p.overlay: p for p in self._peers() if not p.conn.closed}  # noqa: E731
        try:
            _, answer = await first_success(
                plan, candidates, attempt, policy=self.policy, avoidance=self.avoidance
            )
        except NoPeerDelivered as exc:
            if not exc.asked:
                raise NoCloserPeer(f"no connected peer to push {chunk.address.hex()} to") from None
            problem = f"chunk {chunk.address.hex()} not stored: {exc}"
            raise PushFailed(problem, timed_out=exc.timed_out) from None
        return answer

    def _check(self, receipt: PushReceipt, address: bytes, check: bool) -> bytes:
        if not check:  # a forwarder passes the receipt on; the origin judges it
            if receipt.address != address:
                raise BadReceipt(f"receipt names chunk {receipt.address.hex()}, not {address.hex()}")
            return b""
        try:
            storer = verify_receipt(receipt, network_id=self.network_id, address=address)
            self._check_neighbourhood(storer, address)
        except BadReceipt:
            self.rejected += 1
            raise
        return storer

    def _check_neighbourhood(self, storer: bytes, address: bytes) -> None:
        """The storer must be one of the ``credible_within`` nodes closest to the chunk that this node
        knows (itself included): a signature within the signer's own claimed radius is not enough."""
        closer = closer_known(address, storer, [*self._known(), self.overlay])
        if closer >= self.credible_within:
            raise BadReceipt(
                f"storer {storer.hex()[:12]} is not in the neighbourhood of {address.hex()[:12]}: "
                f"{closer} nodes this node knows are closer to it"
            )

    # -- serving peers --------------------------------------------------------------------------

    def handlers(self, peer: PushPeer) -> Handlers:
        """What this node serves ``peer``: the chunks it pushes here."""
        return {PushDelivery: partial(self.on_delivery, peer), **self.batches.handlers(peer)}

    def on_delivery(self, peer: PushPeer, msg: PushDelivery) -> None:
        busy = self._serving.get(peer.overlay, 0)
        if busy >= MAX_PUSHES_PER_PEER:
            try:
                peer.conn.send_nowait(PushFailure(msg.request_id, "overloaded"), Priority.RETRIEVAL)
            except (trio.WouldBlock, trio.ClosedResourceError):
                log.debug("could not tell %r it is over its push limit", peer)
            return
        self._serving[peer.overlay] = busy + 1
        peer.conn.start_soon(self._serve, peer, msg)

    async def _serve(self, peer: PushPeer, msg: PushDelivery) -> None:
        self.received += 1
        try:
            chunk = Chunk(msg.address, msg.data)
            try:
                chunk.verify()
            except InvalidChunk as exc:
                raise RemoteProtocolError(f"invalid pushed chunk: {exc}", GoodbyeCode.INVALID_CHUNK) from exc
            answer = await self._answer(peer, msg, chunk)
            if isinstance(answer, PushFailure):
                self.failed += 1
            await peer.conn.send(answer, Priority.RETRIEVAL)
        finally:
            self._serving[peer.overlay] -= 1
            if not self._serving[peer.overlay]:
                del self._serving[peer.overlay]

    async def _answer(self, peer: PushPeer, msg: PushDelivery, chunk: Chunk) -> PushReceipt | PushFailure:
        if not self._responsible(chunk.address) and msg.hop_limit > 0:
            try:
                _, receipt = await self._ask_peers(
                    chunk, msg.hop_limit - 1, origin=peer.overlay, exclude=frozenset(), check=False
                )
            except NoCloserPeer:
                pass  # this node is the closest it knows: it stores the chunk
            except PushFailed as exc:
                return PushFailure(msg.request_id, clip_reason(str(exc)))
            else:
                self.forwarded += 1
                return PushReceipt(
                    msg.request_id, receipt.address, receipt.public_key, receipt.radius, receipt.signature
                )
        self._store(chunk)
        self.stored += 1
        return self.own_receipt(chunk.address, msg.request_id)
