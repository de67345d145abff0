"""Retrieve requests we sent on one connection, matched to their answers by request ID.

IDs increase per connection, so an answer to an ID we never issued is a protocol violation,
while a late answer to one that already timed out is simply ignored. The caller verifies the
delivered data against the address it asked for (this layer does not know chunks).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from streamer.connection import PeerConnection
from streamer.errors import RemoteProtocolError
from streamer.messages import GoodbyeCode, RetrieveDelivery, RetrieveFailure, RetrieveRequest
from streamer.outbox import Priority

NO_ANSWER = "no answer in time"  # the failure reason that means "timed out", passed back along a path


class RetrieveFailed(Exception):
    """The peer answered that it cannot deliver, did not answer in time, or went away.

    `reason` is the peer's own words (or ours); `timed_out` says no answer came in time.
    """

    def __init__(self, message: str, reason: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.timed_out = timed_out


@dataclass
class _Pending:
    address: bytes
    done: trio.Event = field(default_factory=trio.Event)
    data: bytes | None = None
    failure: str | None = None


class RequestTable:
    """Open retrieve requests of one connection."""

    def __init__(self) -> None:
        self._next_id = 1
        self._open: dict[int, _Pending] = {}
        self.sent = 0
        self.late = 0

    def __len__(self) -> int:
        return len(self._open)

    async def retrieve(
        self, conn: PeerConnection, address: bytes, *, hop_limit: int, timeout: float
    ) -> bytes:
        """Ask `conn`'s peer for the chunk at `address`; returns the chunk data it sent."""
        request_id = self._next_id
        self._next_id += 1
        pending = _Pending(address)
        self._open[request_id] = pending
        self.sent += 1
        try:
            with trio.move_on_after(timeout) as scope:
                await conn.send(RetrieveRequest(request_id, address, hop_limit), Priority.RETRIEVAL)
                await pending.done.wait()
        except trio.ClosedResourceError:
            raise RetrieveFailed(f"peer {conn.overlay.hex()[:12]} disconnected", "disconnected") from None
        finally:
            del self._open[request_id]
        if scope.cancelled_caught:
            raise RetrieveFailed(
                f"no answer from peer {conn.overlay.hex()[:12]} within {timeout:g}s",
                NO_ANSWER,
                timed_out=True,
            )
        if pending.failure is not None:
            raise RetrieveFailed(
                f"peer {conn.overlay.hex()[:12]} cannot deliver: {pending.failure}",
                pending.failure,
                timed_out=pending.failure == NO_ANSWER,
            )
        assert pending.data is not None
        return pending.data

    def on_delivery(self, msg: RetrieveDelivery) -> None:
        pending = self._answered(msg.request_id)
        if pending is not None:
            pending.data = msg.data
            pending.done.set()

    def on_failure(self, msg: RetrieveFailure) -> None:
        pending = self._answered(msg.request_id)
        if pending is not None:
            pending.failure = msg.reason or "no reason given"
            pending.done.set()

    def fail_all(self, reason: str) -> None:
        """The connection is gone: every open request fails now."""
        for pending in self._open.values():
            if not pending.done.is_set():
                pending.failure = reason
                pending.done.set()

    def _answered(self, request_id: int) -> _Pending | None:
        pending = self._open.get(request_id)
        if pending is None:
            if request_id >= self._next_id or request_id == 0:
                raise RemoteProtocolError(
                    f"answer to retrieve request {request_id}, which was never sent",
                    GoodbyeCode.UNSOLICITED_DELIVERY,
                )
            self.late += 1  # it timed out before the answer came
            return None
        if pending.done.is_set():
            raise RemoteProtocolError(
                f"second answer to retrieve request {request_id}", GoodbyeCode.UNSOLICITED_DELIVERY
            )
        return pending
