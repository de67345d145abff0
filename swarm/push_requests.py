"""Push deliveries we sent on one connection, matched to their receipts or failures by request ID.

The mirror of `streamer.requests.RequestTable` for push syncing: IDs increase per connection, an
answer to an ID never issued is a protocol violation, a late answer to one that timed out is
ignored. The caller checks what a receipt proves (streamer/push_receipts.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from streamer.connection import PeerConnection
from streamer.errors import RemoteProtocolError
from streamer.messages import GoodbyeCode, PushDelivery, PushFailure, PushReceipt
from streamer.outbox import Priority

__all__ = ["PushFailed", "PushRequests"]


class PushFailed(Exception):
    """The peer answered that it could not get the chunk stored, did not answer, or went away."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


@dataclass
class _Pending:
    address: bytes
    done: trio.Event = field(default_factory=trio.Event)
    receipt: PushReceipt | None = None
    failure: str | None = None


class PushRequests:
    """Open push deliveries of one connection."""

    def __init__(self) -> None:
        self._next_id = 1
        self._open: dict[int, _Pending] = {}
        self.late = 0

    def __len__(self) -> int:
        return len(self._open)

    async def push(
        self, conn: PeerConnection, address: bytes, data: bytes, *, hop_limit: int, timeout: float
    ) -> PushReceipt:
        """Send the chunk to ``conn``'s peer; return the receipt that comes back."""
        request_id = self._next_id
        self._next_id += 1
        pending = self._open[request_id] = _Pending(address)
        peer = conn.overlay.hex()[:12]
        try:
            with trio.move_on_after(timeout) as scope:
                await conn.send(PushDelivery(request_id, address, hop_limit, data), Priority.LIVE)
                await pending.done.wait()
        except trio.ClosedResourceError:
            raise PushFailed(f"peer {peer} disconnected") from None
        finally:
            del self._open[request_id]
        if scope.cancelled_caught:
            raise PushFailed(f"no receipt from peer {peer} within {timeout:g}s", timed_out=True)
        if pending.failure is not None:
            raise PushFailed(f"peer {peer} could not store it: {pending.failure}")
        assert pending.receipt is not None
        return pending.receipt

    def on_receipt(self, msg: PushReceipt) -> None:
        pending = self._answered(msg.request_id)
        if pending is not None:
            pending.receipt = msg
            pending.done.set()

    def on_failure(self, msg: PushFailure) -> None:
        pending = self._answered(msg.request_id)
        if pending is not None:
            pending.failure = msg.reason or "no reason given"
            pending.done.set()

    def fail_all(self, reason: str) -> None:
        for pending in self._open.values():
            if not pending.done.is_set():
                pending.failure = reason
                pending.done.set()

    def _answered(self, request_id: int) -> _Pending | None:
        pending = self._open.get(request_id)
        if pending is None:
            if request_id >= self._next_id or request_id == 0:
                raise RemoteProtocolError(
                    f"answer to push delivery {request_id}, which was never sent",
                    GoodbyeCode.UNSOLICITED_DELIVERY,
                )
            self.late += 1
            return None
        if pending.done.is_set():
            raise RemoteProtocolError(
                f"second answer to push delivery {request_id}", GoodbyeCode.UNSOLICITED_DELIVERY
            )
        return pending
