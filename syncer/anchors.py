"""StateAnchors: the upstream's signed states a verifying downstream's streams start from.

Verifying provable streams (docs/protocol.md 8.6), a `sync` takes no offer before the session
holds the upstream's signed state its stream is anchored to: a live stream's at ``start - 1``
(with its frontier), a historical one's at ``end``. `anchor` asks for it with a `StateRequest`,
one per bin at a time, and waits for the reply, which the client's reader hands over
(`answered`) once the session has judged it. Without ``logs`` (not verifying) there is nothing to
anchor to.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from streamer.errors import RemoteProtocolError
from streamer.messages import Message
from streamer.outbox import Priority
from syncer.session import DownstreamSession
from syncer.session_events import StateAccepted, StateSuperseded

__all__ = ["StateAnchors", "StateEvent"]

StateEvent = StateAccepted | StateSuperseded
Send = Callable[[Message, Priority], Awaitable[None]]


class StateAnchors:
    """Asks the upstream for the states the session needs, and waits for them."""

    def __init__(self, session: DownstreamSession, send: Send, timeout: float) -> None:
        self.session = session
        self._send = send
        self.timeout = timeout
        self._locks: dict[int, trio.Lock] = {}
        self._waiters: dict[int, trio.MemorySendChannel[StateEvent]] = {}

    async def anchor(self, bin: int, size: int, live: bool) -> None:
        """Make sure the session holds the upstream's state of ``bin`` at ``size`` (and, for a
        live stream, its frontier), asking for it if need be."""
        logs = self.session.logs
        if logs is None:
            return
        lock = self._locks.setdefault(bin, trio.Lock())
        async with lock:
            while not logs.holds(bin, size, frontier=live):
                await self._ask(bin, size)

    def answered(self, event: StateEvent) -> None:
        """The session judged a state reply. We asked (the session checked), but the sync that
        asked may have been cancelled since (its bin stopped: a depth change, a restart): the
        state is kept all the same, and nobody waits."""
        waiter = self._waiters.get(event.state.bin)
        if waiter is not None:
            waiter.send_nowait(event)

    async def _ask(self, bin: int, size: int) -> StateEvent:
        """Ask for the state of ``bin`` at ``size`` and wait for the answer; if a request of a
        sync cancelled meanwhile still waits for its reply (one per bin), wait for that reply
        instead (the caller asks again if it is not the state it needs)."""
        logs = self.session.logs
        send, receive = trio.open_memory_channel[StateEvent](1)
        self._waiters[bin] = send
        try:
            if logs is None or not logs.asking(bin):
                await self._send(self.session.request_state(bin, size), Priority.RETRIEVAL)
            with trio.move_on_after(self.timeout):
                return await receive.receive()
            raise RemoteProtocolError(f"no state of bin {bin} at {size} within {self.timeout:g}s")
        finally:
            del self._waiters[bin]
