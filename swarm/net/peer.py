"""One connected peer: its connection, the services that speak on it, and message dispatch.

A `Peer` is built by the node for each connection from the services it needs, never from the
node itself: the upstream server (what we offer), the pull-sync client (what we pull) and the
table of retrieve requests we sent. Which service each incoming message goes to is registered
by message class (`handle`): swarm/peer_wiring.py registers what each service says it handles,
the per-connection ones (`Upstream.handlers()`) and the node's (`Retrieval.handlers(peer)`),
so a new sub-protocol adds a registration, not a parameter. The connection answers its own
messages (Ping, a stray Hello or Handshake) before they get here.
"""

from __future__ import annotations

import logging

import trio

from streamer.connection import Disconnect, PeerConnection
from streamer.dispatch import Dispatch, Handlers
from streamer.messages import Message, PushBatchReceipt, PushedChunk, PushReceipt
from streamer.requests import OpenRetrieve, RequestTable
from swarm.net.push_requests import PushRequests
from syncer.pullsync import PullSyncClient
from syncer.upstream import Upstream

log = logging.getLogger(__name__)


class Peer:
    """A live peer: connection, upstream server, pull-sync client, retrieve and push requests,
    and the handler of each message class it sends us."""

    def __init__(
        self,
        conn: PeerConnection,
        po: int,
        *,
        upstream: Upstream,
        client: PullSyncClient,
        requests: RequestTable,
        retrieve_timeout: float,
    ) -> None:
        self.conn = conn
        self.overlay = conn.overlay
        self.po = po
        self.upstream = upstream
        self.client = client
        self.requests = requests
        self.retrieve_timeout = retrieve_timeout
        self.pushes = PushRequests()
        self._dispatch = Dispatch()

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

    def handle(self, handlers: Handlers) -> None:
        """Send the messages of these classes to these handlers (one handler per class)."""
        self._dispatch.handle(handlers)

    async def dispatch(self, msg: Message) -> None:
        """Route one incoming message; runs inside the connection's reader, so never blocks,
        except that a delivery waits while the client's intake is full (backpressure)."""
        await self._dispatch(msg)

    async def retrieve(self, address: bytes, *, hop_limit: int, timeout: float | None = None) -> bytes:
        """Ask this peer for a chunk; hop limit 0 asks for its own store only."""
        return await self.requests.retrieve(
            self.conn, address, hop_limit=hop_limit, timeout=timeout or self.retrieve_timeout
        )

    def start_retrieve(self, address: bytes, *, hop_limit: int) -> OpenRetrieve | None:
        """Ask this peer for a chunk without waiting for the answer (`RequestTable.start`)."""
        return self.requests.start(self.conn, address, hop_limit=hop_limit)

    async def ping(self, timeout: float) -> float:
        """A round trip over this connection, in seconds (`PeerConnection.ping`)."""
        return await self.conn.ping(timeout)

    async def push(self, address: bytes, data: bytes, *, hop_limit: int, timeout: float) -> PushReceipt:
        """Push a chunk to this peer (swarm/net/pushsync.py); returns the receipt that comes back."""
        return await self.pushes.push(self.conn, address, data, hop_limit=hop_limit, timeout=timeout)

    async def push_batch(
        self, chunks: tuple[PushedChunk, ...], *, direct: bool, timeout: float
    ) -> PushBatchReceipt:
        """Push chunks for this peer to store itself (swarm/net/push_batches.py); one receipt back."""
        return await self.pushes.push_batch(self.conn, chunks, direct=direct, timeout=timeout)

    def closed(self, reason: str) -> None:
        """The connection is gone: fail what we asked of it, release what it was pulling."""
        self.requests.fail_all(reason)
        self.pushes.fail_all(reason)
        self.client.close()
