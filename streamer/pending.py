"""Requests sent on one connection, each awaiting one answer, matched by request ID.

IDs increase per connection from 1, so an answer to an ID never issued (or 0) is a protocol
violation, as is a second answer to one request; a late answer to a request that already timed
out is ignored and counted. Retrieval (`streamer.requests`) and push syncing
(`swarm.net.push_requests`) each keep one table per connection, with their own answer type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

import trio

from streamer.errors import RemoteProtocolError
from streamer.messages import GoodbyeCode

__all__ = ["OpenRequests", "Pending"]

A = TypeVar("A")


@dataclass
class Pending(Generic[A]):
    """One request: done once answered or failed."""

    done: trio.Event = field(default_factory=trio.Event)
    answer: A | None = None
    failure: str | None = None


class OpenRequests(Generic[A]):
    """The open requests of one connection; ``what`` names them in protocol errors."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._next_id = 1
        self._open: dict[int, Pending[A]] = {}
        self.sent = 0
        self.late = 0

    def __len__(self) -> int:
        return len(self._open)

    def open(self) -> tuple[int, Pending[A]]:
        """A new request: its ID and what its answer will be put in. Close it when done."""
        request_id = self._next_id
        self._next_id += 1
        pending = self._open[request_id] = Pending[A]()
        self.sent += 1
        return request_id, pending

    def close(self, request_id: int) -> None:
        del self._open[request_id]

    def answer(self, request_id: int, answer: A) -> None:
        """The peer answered ``request_id``; raises RemoteProtocolError if it was never asked."""
        pending = self._answered(request_id)
        if pending is not None:
            pending.answer = answer
            pending.done.set()

    def fail(self, request_id: int, reason: str) -> None:
        """The peer said it cannot answer ``request_id``."""
        pending = self._answered(request_id)
        if pending is not None:
            pending.failure = reason or "no reason given"
            pending.done.set()

    def fail_all(self, reason: str) -> None:
        """The connection is gone: every open request fails now."""
        for pending in self._open.values():
            if not pending.done.is_set():
                pending.failure = reason
                pending.done.set()

    def _answered(self, request_id: int) -> Pending[A] | None:
        pending = self._open.get(request_id)
        if pending is None:
            if request_id >= self._next_id or request_id == 0:
                raise RemoteProtocolError(
                    f"answer to {self.what} {request_id}, which was never sent",
                    GoodbyeCode.UNSOLICITED_DELIVERY,
                )
            self.late += 1  # it timed out before the answer came
            return None
        if pending.done.is_set():
            raise RemoteProtocolError(
                f"second answer to {self.what} {request_id}", GoodbyeCode.UNSOLICITED_DELIVERY
            )
        return pending
