"""Routing a connection's incoming messages to the services that handle them, by message class.

Each service says what it handles as a mapping from message class to handler (for example
``Upstream.handlers()``, ``Retrieval.handlers(peer)``), and whoever wires a connection registers
those (swarm/peer_wiring.py), so a new sub-protocol adds a registration, not a parameter.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

from streamer.errors import RemoteProtocolError
from streamer.wire.declare import Message

Handler: TypeAlias = Callable[[Any], Awaitable[None] | None]
"""Takes one message. It runs in the connection's reader, so it must not block; it may return an
awaitable, which the reader waits for before it reads on (backpressure)."""

Handlers: TypeAlias = Mapping[type[Message], Handler]


class Dispatch:
    """The handler of each message class one connection takes."""

    def __init__(self) -> None:
        self._handlers: dict[type[Message], Handler] = {}

    def handle(self, handlers: Handlers) -> None:
        """Send messages of these classes to these handlers; a class has one handler."""
        taken = [cls.__name__ for cls in handlers if cls in self._handlers]
        if taken:
            raise ValueError(f"already handled: {', '.join(taken)}")
        self._handlers.update(handlers)

    def handles(self, cls: type[Message]) -> bool:
        return cls in self._handlers

    async def __call__(self, msg: Message) -> None:
        """Hand ``msg`` to its handler; a message no one handles breaks the protocol."""
        handler = self._handlers.get(type(msg))
        if handler is None:
            raise RemoteProtocolError(f"unexpected {type(msg).__name__}: not taken on this connection")
        pending = handler(msg)
        if pending is not None:
            await pending
