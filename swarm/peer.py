"""One connected peer: its connection and the services that speak on it, and message dispatch."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio

from streamer.connection import Disconnect, PeerConnection
from streamer.errors import RemoteProtocolError
from streamer.messages import (
    ChunkDelivery,
    CursorsReply,
    CursorsRequest,
    GoodbyeCode,
    Handshake,
    Hello,
    Message,
    OfferedHashes,
    Peers,
    Ping,
    Pong,
    RetrieveDelivery,
    RetrieveFailure,
    RetrieveRequest,
    Subscribe,
    Unsubscribe,
    Unsubscribed,
    WantedHashes,
)
from streamer.requests import RequestTable
from syncer.peer_puller import PeerPuller
from syncer.upstream import Upstream

if TYPE_CHECKING:
    from swarm.node import Node

log = logging.getLogger(__name__)


class Peer:
    """A live peer: connection, upstream server, puller, retrieve requests; routes its messages."""

    def __init__(self, node: Node, conn: PeerConnection, po: int) -> None:
        self.node = node
        self.conn = conn
        self.overlay = conn.overlay
        self.po = po
        self.requests = RequestTable()
        self.upstream = Upstream(conn, node.store, live_idle=node.config.live_idle)
        self.puller: PeerPuller = node.puller.attach(
            conn, po, policy=node.sync_policy, depth=node.depth, fetch=self.fetch_local
        )
        self._routes: dict[type, Callable[[Any], None]] = {
            CursorsRequest: self.upstream.on_cursors_request,
            Subscribe: self.upstream.on_subscribe,
            Unsubscribe: self.upstream.on_unsubscribe,
            Unsubscribed: self.puller.on_unsubscribed,
            WantedHashes: self.upstream.on_want,
            CursorsReply: self.puller.on_cursors_reply,
            OfferedHashes: self.puller.on_offer,
            RetrieveRequest: self._on_retrieve_request,
            RetrieveDelivery: self.requests.on_delivery,
            RetrieveFailure: self.requests.on_failure,
            Ping: self._on_ping,
            Pong: _ignore,
            Peers: self._on_peers,
            Handshake: _second_handshake,
            Hello: _hello_after_handshake,
        }

    def __repr__(self) -> str:
        return f"<Peer {self.overlay.hex()[:12]} po={self.po}>"

    async def run(self) -> Disconnect:
        """Run the connection until it ends, and return why.

        The chunks the peer delivered are verified and stored (`DeliveryIntake`) by a task that
        outlives the connection by as long as it takes to finish the ones that had arrived.
        """
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.puller.deliveries.run)
            try:
                return await self.conn.run(self.dispatch)
            finally:
                self.puller.deliveries.close()

    async def dispatch(self, msg: Message) -> None:
        """Route one incoming message; runs inside the connection's reader, so never blocks,
        except that a delivery waits while the puller's intake is full (backpressure)."""
        if type(msg) is ChunkDelivery:
            await self.puller.on_delivery(msg)
        else:
            self._routes[type(msg)](msg)

    async def fetch_local(self, address: bytes) -> bytes:
        """Ask this peer for a chunk from its own store (hop limit 0): the sync fallback."""
        return await self.requests.retrieve(
            self.conn, address, hop_limit=0, timeout=self.node.config.retrieve_timeout
        )

    def _on_retrieve_request(self, msg: RetrieveRequest) -> None:
        self.node.retrieval.on_request(self, msg)

    def _on_ping(self, msg: Ping) -> None:
        try:
            self.conn.send_nowait(Pong(msg.nonce))
        except trio.WouldBlock:
            raise RemoteProtocolError("ping flood", GoodbyeCode.OVERLOADED) from None

    def _on_peers(self, msg: Peers) -> None:
        self.node.on_peer_records(self, msg)

    def closed(self, reason: str) -> None:
        self.requests.fail_all(reason)


def _ignore(msg: Message) -> None:
    return None


def _hello_after_handshake(msg: Message) -> None:
    raise RemoteProtocolError("Hello on an established connection (the handshake is over)")


def _second_handshake(msg: Message) -> None:
    raise RemoteProtocolError("second handshake on an established connection")
