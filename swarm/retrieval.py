"""Retrieval: serving chunk requests from peers, and fetching chunks this node does not hold."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from localstore import Chunk, ChunkNotFound, InvalidChunk
from streamer.messages import RetrieveDelivery, RetrieveFailure, RetrieveRequest
from streamer.outbox import Priority

if TYPE_CHECKING:
    from swarm.node import Node
    from swarm.peer import Peer

log = logging.getLogger(__name__)

MAX_SERVING_PER_PEER = 64


class ChunkUnavailable(Exception):
    """No peer could deliver the chunk (not found, or no answer in time)."""

    def __init__(self, address: bytes, reason: str, timed_out: bool = False) -> None:
        super().__init__(f"chunk {address.hex()} unavailable: {reason}")
        self.address = address
        self.reason = reason
        self.timed_out = timed_out


class Retrieval:
    """Answers retrieve requests from the local store; gets chunks for the node's own users."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self._serving: dict[bytes, int] = {}
        self.served = 0
        self.failed = 0

    def on_request(self, peer: Peer, msg: RetrieveRequest) -> None:
        busy = self._serving.get(peer.overlay, 0)
        if busy >= MAX_SERVING_PER_PEER:
            self._answer_nowait(peer, RetrieveFailure(msg.request_id, "overloaded"))
            return
        self._serving[peer.overlay] = busy + 1
        peer.conn.start_soon(self._serve, peer, msg)

    async def _serve(self, peer: Peer, msg: RetrieveRequest) -> None:
        try:
            try:
                chunk = self.node.store.get(msg.address)
            except ChunkNotFound:
                self.failed += 1
                await peer.conn.send(RetrieveFailure(msg.request_id, "not found"), Priority.RETRIEVAL)
                return
            self.served += 1
            await peer.conn.send(RetrieveDelivery(msg.request_id, chunk.data), Priority.RETRIEVAL)
        finally:
            self._serving[peer.overlay] -= 1
            if not self._serving[peer.overlay]:
                del self._serving[peer.overlay]

    def _answer_nowait(self, peer: Peer, msg: RetrieveFailure) -> None:
        try:
            peer.conn.send_nowait(msg, Priority.RETRIEVAL)
        except (trio.WouldBlock, trio.ClosedResourceError):
            log.debug("could not tell %r it is over its request limit", peer)

    async def get(self, address: bytes) -> Chunk:
        """The chunk at `address`, from the local store or, failing that, from peers."""
        try:
            return self.node.store.get(address)
        except ChunkNotFound:
            pass
        return await self.fetch(address)

    async def fetch(self, address: bytes) -> Chunk:
        """Ask connected peers (closest first) for a chunk; verify and store what comes back."""
        errors = []
        for peer in self.node.peers_by_proximity(address):
            try:
                data = await peer.fetch_local(address)
            except Exception as exc:  # RetrieveFailed and the connection going away alike
                errors.append(f"{peer.overlay.hex()[:12]}: {exc}")
                continue
            chunk = Chunk(address, data)
            try:
                self.node.puller.store_chunk(chunk)
            except InvalidChunk as exc:
                errors.append(f"{peer.overlay.hex()[:12]} sent invalid data: {exc}")
                peer.conn.close(5, f"invalid chunk in retrieve delivery: {exc}", violation=True)
                continue
            return chunk
        raise ChunkUnavailable(address, "; ".join(errors) or "no connected peers")
