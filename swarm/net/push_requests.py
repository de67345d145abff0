"""Push deliveries we sent on one connection, matched to their receipts or failures by request ID.

The mirror of `streamer.requests.RequestTable` for push syncing; matching and its rules are
`streamer.pending`'s. The caller checks what a receipt proves (streamer/push_receipts.py).
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from streamer.connection import PeerConnection
from streamer.dispatch import Handlers
from streamer.messages import PushBatch, PushBatchReceipt, PushDelivery, PushedChunk, PushFailure, PushReceipt
from streamer.outbox import Priority
from streamer.pending import OpenRequests

__all__ = ["PushFailed", "PushRequests"]


class PushFailed(Exception):
    """The peer answered that it could not get the chunk stored, did not answer, or went away."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class PushRequests:
    """Open push deliveries of one connection."""

    def __init__(self) -> None:
        self._requests = OpenRequests[PushReceipt | PushBatchReceipt]("push delivery")

    def __len__(self) -> int:
        return len(self._requests)

    @property
    def late(self) -> int:
        """Answers that came after their delivery timed out."""
        return self._requests.late

    async def push(
        self, conn: PeerConnection, address: bytes, data: bytes, *, hop_limit: int, timeout: float
    ) -> PushReceipt:
        """Send the chunk to ``conn``'s peer; return the receipt that comes back."""
        answer = await self._ask(conn, lambda rid: PushDelivery(rid, address, hop_limit, data), timeout)
        if not isinstance(answer, PushReceipt):
            raise PushFailed(f"peer {conn.overlay.hex()[:12]} answered a push with a batch receipt")
        return answer

    async def push_batch(
        self, conn: PeerConnection, chunks: tuple[PushedChunk, ...], *, direct: bool, timeout: float
    ) -> PushBatchReceipt:
        """Send ``chunks`` for ``conn``'s peer to store itself; return its one receipt for them."""
        answer = await self._ask(conn, lambda rid: PushBatch(rid, direct, chunks), timeout)
        if not isinstance(answer, PushBatchReceipt):
            raise PushFailed(f"peer {conn.overlay.hex()[:12]} answered a batch with a single receipt")
        return answer

    async def _ask(
        self, conn: PeerConnection, make: Callable[[int], PushDelivery | PushBatch], timeout: float
    ) -> PushReceipt | PushBatchReceipt:
        request_id, pending = self._requests.open()
        peer = conn.overlay.hex()[:12]
        try:
            with trio.move_on_after(timeout) as scope:
                await conn.send(make(request_id), Priority.LIVE)
                await pending.done.wait()
        except trio.ClosedResourceError:
            raise PushFailed(f"peer {peer} disconnected") from None
        finally:
            self._requests.close(request_id)
        if scope.cancelled_caught:
            raise PushFailed(f"no receipt from peer {peer} within {timeout:g}s", timed_out=True)
        if pending.failure is not None:
            raise PushFailed(f"peer {peer} could not store it: {pending.failure}")
        assert pending.answer is not None
        return pending.answer

    def handlers(self) -> Handlers:
        """The answers to our pushes."""
        return {PushReceipt: self.on_receipt, PushBatchReceipt: self.on_receipt, PushFailure: self.on_failure}

    def on_receipt(self, msg: PushReceipt | PushBatchReceipt) -> None:
        self._requests.answer(msg.request_id, msg)

    def on_failure(self, msg: PushFailure) -> None:
        self._requests.fail(msg.request_id, msg.reason)

    def fail_all(self, reason: str) -> None:
        self._requests.fail_all(reason)
