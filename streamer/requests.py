"""Retrieve requests we sent on one connection, matched to their answers by request ID.

Matching and its rules are `streamer.pending`'s. The caller verifies the delivered data against
the address it asked for (this layer does not know chunks).
"""

from __future__ import annotations

import trio

from streamer.connection import PeerConnection
from streamer.dispatch import Handlers
from streamer.messages import RetrieveDelivery, RetrieveFailure, RetrieveRequest
from streamer.outbox import Priority
from streamer.pending import OpenRequests, Pending

NO_ANSWER = "no answer in time"  # the failure reason that means "timed out", passed back along a path


class RetrieveFailed(Exception):
    """The peer answered that it cannot deliver, did not answer in time, or went away.

    `reason` is the peer's own words (or ours); `timed_out` says no answer came in time.
    """

    def __init__(self, message: str, reason: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.timed_out = timed_out


class RequestTable:
    """Open retrieve requests of one connection."""

    def __init__(self) -> None:
        self._requests = OpenRequests[bytes]("retrieve request")

    def __len__(self) -> int:
        return len(self._requests)

    @property
    def sent(self) -> int:
        return self._requests.sent

    @property
    def late(self) -> int:
        """Answers that came after their request timed out."""
        return self._requests.late

    async def retrieve(
        self, conn: PeerConnection, address: bytes, *, hop_limit: int, timeout: float
    ) -> bytes:
        """Ask `conn`'s peer for the chunk at `address`; returns the chunk data it sent."""
        request_id, pending = self._requests.open()
        try:
            with trio.move_on_after(timeout) as scope:
                await conn.send(RetrieveRequest(request_id, address, hop_limit), Priority.RETRIEVAL)
                await pending.done.wait()
        except trio.ClosedResourceError:
            raise _disconnected(conn) from None
        finally:
            self._requests.close(request_id)
        if scope.cancelled_caught:
            raise RetrieveFailed(
                f"no answer from peer {conn.overlay.hex()[:12]} within {timeout:g}s",
                NO_ANSWER,
                timed_out=True,
            )
        return _outcome(conn, pending)

    def start(self, conn: PeerConnection, address: bytes, *, hop_limit: int) -> OpenRetrieve | None:
        """Send a request for the chunk at `address` without waiting for its answer (`retrieve`
        in two steps, so a caller can wait for the answer a while, do something else and wait
        again); None if the connection's retrieval class is full (`retrieve` waits for room).
        Raises `RetrieveFailed` if the connection is closing."""
        request_id, pending = self._requests.open()
        try:
            conn.send_nowait(RetrieveRequest(request_id, address, hop_limit), Priority.RETRIEVAL)
        except trio.WouldBlock:
            self._requests.close(request_id)
            self._requests.sent -= 1  # never sent
            return None
        except trio.ClosedResourceError:
            self._requests.close(request_id)
            raise _disconnected(conn) from None
        return OpenRetrieve(self._requests, conn, request_id, pending)

    def handlers(self) -> Handlers:
        """The answers to our requests; `fail_all` ends the open ones when the connection goes."""
        return {RetrieveDelivery: self.on_delivery, RetrieveFailure: self.on_failure}

    def on_delivery(self, msg: RetrieveDelivery) -> None:
        self._requests.answer(msg.request_id, msg.data)

    def on_failure(self, msg: RetrieveFailure) -> None:
        self._requests.fail(msg.request_id, msg.reason)

    def fail_all(self, reason: str) -> None:
        """The connection is gone: every open request fails now."""
        self._requests.fail_all(reason)


class OpenRetrieve:
    """A retrieve request sent by `RequestTable.start`: await `answer` (again after a
    cancellation, if need be), and `close` it once its answer is taken or no longer wanted."""

    def __init__(
        self, requests: OpenRequests[bytes], conn: PeerConnection, request_id: int, pending: Pending[bytes]
    ) -> None:
        self._requests = requests
        self._conn = conn
        self._request_id: int | None = request_id
        self._pending = pending

    async def answer(self) -> bytes:
        """The chunk data the peer sent; `RetrieveFailed` if it cannot deliver or went away."""
        await self._pending.done.wait()
        return _outcome(self._conn, self._pending)

    def close(self) -> None:
        if self._request_id is not None:
            self._requests.close(self._request_id)
            self._request_id = None


def _disconnected(conn: PeerConnection) -> RetrieveFailed:
    return RetrieveFailed(f"peer {conn.overlay.hex()[:12]} disconnected", "disconnected")


def _outcome(conn: PeerConnection, pending: Pending[bytes]) -> bytes:
    """The data of an answered request, or its failure raised as `RetrieveFailed`."""
    if pending.failure is not None:
        raise RetrieveFailed(
            f"peer {conn.overlay.hex()[:12]} cannot deliver: {pending.failure}",
            pending.failure,
            timed_out=pending.failure == NO_ANSWER,
        )
    assert pending.answer is not None
    return pending.answer
