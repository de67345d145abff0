"""One connected peer: its connection, the services that speak on it, and message dispatch.

A `Peer` is built by the node for each connection from the services it needs, never from the
node itself: the upstream server (what we offer), the pull-sync client (what we pull), the
table of retrieve requests we sent, and two handlers the node hands it for the messages that
concern the whole node (a peer's retrieve requests, its gossip). The connection answers its own
messages (Ping, a stray Hello or Handshake) before they get here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import trio

from streamer.connection import Disconnect, PeerConnection
from streamer.messages import (
    ChunkDelivery,
    CursorsReply,
    CursorsRequest,
    FeedPush,
    LiveHave,
    LiveInterest,
    LivePause,
    Message,
    OfferedHashes,
    Peers,
    ProvenOffer,
    PushDelivery,
    PushFailure,
    PushReceipt,
    Receipt,
    RetrieveDelivery,
    RetrieveFailure,
    RetrieveRequest,
    StateReply,
    StateRequest,
    Subscribe,
    TopicPush,
    Unsubscribe,
    Unsubscribed,
    WantedHashes,
)
from streamer.requests import RequestTable
from swarm.net.push_requests import PushRequests
from syncer.pullsync import PullSyncClient
from syncer.upstream import Upstream

log = logging.getLogger(__name__)

_FROM_UPSTREAM = (ChunkDelivery, OfferedHashes, ProvenOffer, StateReply, CursorsReply, Unsubscribed)


LiveMessage = LiveInterest | LivePause | LiveHave | FeedPush | TopicPush


class Peer:
    """A live peer: connection, upstream server, pull-sync client, retrieve requests."""

    def __init__(
        self,
        conn: PeerConnection,
        po: int,
        *,
        upstream: Upstream,
        client: PullSyncClient,
        requests: RequestTable,
        on_retrieve_request: Callable[[Peer, RetrieveRequest], None],
        on_peers: Callable[[Peer, Peers], None],
        on_live: Callable[[Peer, LiveInterest | LivePause | FeedPush | TopicPush], None] = lambda peer, msg: (
            None
        ),
        retrieve_timeout: float,
        on_push_delivery: Callable[[Peer, PushDelivery], None] | None = None,
    ) -> None:
        self.conn = conn
        self.overlay = conn.overlay
        self.po = po
        self.upstream = upstream
        self.client = client
        self.requests = requests
        self.retrieve_timeout = retrieve_timeout
        self.pushes = PushRequests()
        push_delivery = on_push_delivery or (lambda peer, msg: None)
        self._routes: dict[type, Callable[[Any], None]] = {
            CursorsRequest: upstream.on_cursors_request,
            Subscribe: upstream.on_subscribe,
            Unsubscribe: upstream.on_unsubscribe,
            WantedHashes: upstream.on_want,
            StateRequest: upstream.on_state_request,  # provable streams (issue 16)
            Receipt: upstream.on_receipt,
            RetrieveRequest: lambda msg: on_retrieve_request(self, msg),
            RetrieveDelivery: self.requests.on_delivery,
            RetrieveFailure: self.requests.on_failure,
            Peers: lambda msg: on_peers(self, msg),
            PushDelivery: lambda msg: push_delivery(self, msg),
            PushReceipt: self.pushes.on_receipt,
            PushFailure: self.pushes.on_failure,
            LiveInterest: lambda msg: on_live(self, msg),  # live propagation (swarm.live)
            FeedPush: lambda msg: on_live(self, msg),
            TopicPush: lambda msg: on_live(self, msg),
            LivePause: lambda msg: on_live(self, msg),
            LiveHave: lambda msg: on_live(self, msg),
        }

    def __repr__(self) -> str:
        return f"<Peer {self.overlay.hex()[:12]} po={self.po}>"

    async def run(self) -> Disconnect:
        """Run the connection until it ends, and return why.

        The chunks the peer delivered are verified and stored (`DeliveryIntake`) by a task that
        outlives the connection by as long as it takes to finish the ones that had arrived.
        """
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.client.deliveries.run)
            try:
                return await self.conn.run(self.dispatch)
            finally:
                self.client.deliveries.close()

    async def dispatch(self, msg: Message) -> None:
        """Route one incoming message; runs inside the connection's reader, so never blocks,
        except that a delivery waits while the client's intake is full (backpressure)."""
        if isinstance(msg, _FROM_UPSTREAM):
            await self.client.receive(msg)
        else:
            self._routes[type(msg)](msg)

    async def retrieve(self, address: bytes, *, hop_limit: int, timeout: float | None = None) -> bytes:
        """Ask this peer for a chunk; hop limit 0 asks for its own store only."""
        return await self.requests.retrieve(
            self.conn, address, hop_limit=hop_limit, timeout=timeout or self.retrieve_timeout
        )

    async def push(self, address: bytes, data: bytes, *, hop_limit: int, timeout: float) -> PushReceipt:
        """Push a chunk to this peer (swarm/net/pushsync.py); returns the receipt that comes back."""
        return await self.pushes.push(self.conn, address, data, hop_limit=hop_limit, timeout=timeout)

    def closed(self, reason: str) -> None:
        """The connection is gone: fail what we asked of it, release what it was pulling."""
        self.requests.fail_all(reason)
        self.pushes.fail_all(reason)
        self.client.close()
