"""Building a node's reserve services from the node's parts: the reserve's worker
(eviction and the storage radius), push syncing with receipts, the pusher of uploaded chunks, the
offer leases that keep offered chunks from eviction, and uploads (tags, pins, receipts).

Each service gets only the narrow functions it needs; the node passes them in `ReserveInputs`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any, ParamSpec, TypeVar

import trio

from chunks import Chunk
from kademlia import PeerTable
from localstore.pins import Pins
from localstore.reserve import Reserve
from localstore.store import LocalStore
from pot import proximity
from streamer.identity import NodeIdentity
from swarm.config import NodeConfig
from swarm.net.peer_choice import Avoidance, Forwarding, LoadBook
from swarm.net.pushsync import PushPeer, PushSync
from swarm.reserve.offer_leases import OfferLeases
from swarm.reserve.pusher import Pusher
from swarm.reserve.settled_depth import SettledDepth
from swarm.reserve.uploads import Uploads
from swarm.reserve.worker import ReserveWorker

__all__ = ["ReserveInputs", "ReserveServices", "build_reserve_services"]

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True)
class ReserveInputs:
    """What the reserve's services need of the rest of the node."""

    config: NodeConfig
    identity: NodeIdentity
    overlay: bytes
    store: LocalStore
    reserve: Reserve
    pins: Pins
    table: PeerTable
    peers: Callable[[], Iterable[PushPeer]]  # the connected peers, for push syncing's next hops
    fully_synced: Callable[[], bool]  # historical syncing is done (the radius may go down)
    radius_changed: Callable[[int], None]
    store_synced: Callable[[list[Chunk]], int]  # a pushed chunk, verified, into the store
    verify_chunks: Callable[[list[Chunk]], Awaitable[list[str | None]]]  # on the verifier workers
    held: Callable[[Chunk], bool]  # the store holds this very chunk (same data)
    store_uploaded: Callable[..., int]  # an upload's chunks into the store (``verified=``)
    retrieve: Callable[[bytes], Awaitable[Chunk]]
    avoidance: Avoidance  # peers that left requests unanswered, shared with retrieval
    loads: LoadBook  # requests in flight per peer, shared with retrieval
    forwarding: Forwarding  # how equally close next hops share requests
    record: Callable[[bytes], None]  # a request sent on toward an address (the table's bin load)
    upload_work: Callable[[], None] = lambda: None  # an upload's chunks stored, pushed or pushed here


@dataclass(frozen=True)
class ReserveServices:
    offer_leases: OfferLeases
    worker: ReserveWorker
    pushsync: PushSync
    pusher: Pusher
    uploads: Uploads


def build_reserve_services(given: ReserveInputs) -> ReserveServices:
    config, table = given.config, given.table
    settled = SettledDepth(config.neighbourhood_size)
    offer_leases = OfferLeases()
    given.reserve.add_guard(offer_leases)
    worker = ReserveWorker(
        given.reserve,
        depth=lambda: settled.observe(table.connected_count(), table.depth(), trio.current_time()),
        historical_done=given.fully_synced,
        radius_changed=given.radius_changed,
        batch=config.evict_batch,
    )

    def responsible(address: bytes) -> bool:
        """Whether the chunk lies in this node's neighbourhood (no push needed to reach it)."""
        return proximity(given.overlay, address) >= table.depth()

    def store_pushed(chunks: list[Chunk]) -> int:
        given.upload_work()
        return given.store_synced(chunks)

    def store_uploaded(chunks: list[Chunk], **kwargs: Any) -> int:
        given.upload_work()
        return given.store_uploaded(chunks, **kwargs)

    pushsync = PushSync(
        given.identity,
        config.network_id,
        peers=given.peers,
        store=lambda chunk: store_pushed([chunk]),
        store_many=store_pushed,
        verify_many=given.verify_chunks,
        held=given.held,
        responsible=responsible,
        radius=lambda: given.reserve.radius,
        hop_limit=config.hop_limit,
        timeout=config.retrieve_timeout,
        hedge_after=config.hedge_after,
        avoidance=given.avoidance,
        loads=given.loads,
        forwarding=given.forwarding,
        record=given.record,
        known=table.known_peers,
        credible_within=config.neighbourhood_size + 2,
    )
    pusher = Pusher(
        given.store,
        overlay=given.overlay,
        get_chunk=given.store.get,
        push=working(pushsync.push, given.upload_work),
        push_batch=working(pushsync.batches.push_round, given.upload_work),
        responsible=responsible,
        has_peers=lambda: any(True for _ in given.peers()),
        own_radius=lambda: given.reserve.radius,
        released=worker.wake,
        workers=config.push_workers,
    )
    given.reserve.add_holder(pusher)
    uploads = Uploads(
        pusher,
        given.pins,
        store_chunks=store_uploaded,
        store_checked=partial(store_uploaded, verified=False),
        get_chunk=given.retrieve,
        protected_changed=worker.wake,
        receipt_timeout=config.receipt_timeout,
    )
    return ReserveServices(offer_leases, worker, pushsync, pusher, uploads)


def working(push: Callable[P, Awaitable[T]], upload_work: Callable[[], None]) -> Callable[P, Awaitable[T]]:
    """``push``, noting upload work as it starts and as it ends (its answer may take a while)."""

    async def pushing(*args: P.args, **kwargs: P.kwargs) -> T:
        upload_work()
        try:
            return await push(*args, **kwargs)
        finally:
            upload_work()

    return pushing
