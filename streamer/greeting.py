"""The greeting and the rules of connection-level messages, as pure functions of messages.

`HandshakeMachine` is one side of the greeting (docs/protocol.md, section 6): send `Hello` with a
fresh nonce; when the peer's `Hello` arrives, answer with our `Handshake` signed over its nonce;
when the peer's `Handshake` arrives, check it against our nonce. It takes messages and returns
the messages to send; the trio shell in `streamer.handshake` does the reading and writing.

After the greeting, `connection_reply` judges the connection's own messages: a `Ping` is
answered with a `Pong`, a `Pong` needs nothing, and a second `Hello` or `Handshake` is a
violation. Everything else belongs to the services above.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from streamer.errors import LocalProtocolError, RemoteProtocolError
from streamer.identity import HandshakeError, verify_handshake
from streamer.messages import (
    CHANNEL_BINDING_SIZE,
    PLAIN_BINDING,
    PROTOCOL_VERSION,
    Goodbye,
    GoodbyeCode,
    Handshake,
    Hello,
    Message,
    Ping,
    Pong,
)

__all__ = [
    "CONNECTION_MESSAGES",
    "HandshakeMachine",
    "HandshakeRefused",
    "connection_reply",
]

CONNECTION_MESSAGES = (Hello, Handshake, Ping, Pong)
"""Messages the connection itself answers once it is established."""


class HandshakeRefused(Exception):
    """The peer ended the greeting with a Goodbye (it refused us)."""

    def __init__(self, goodbye: Goodbye) -> None:
        super().__init__(f"peer refused the handshake: {goodbye.reason or 'no reason given'}")
        self.code = int(goodbye.code)


class _State(Enum):
    AWAIT_HELLO = "awaiting the peer's Hello"
    AWAIT_HANDSHAKE = "awaiting the peer's Handshake"
    DONE = "done"


class HandshakeMachine:
    """One side of the greeting. `make_local(challenge, binding)` builds our handshake, signed
    over the peer's Hello nonce and the channel binding both sides see (`streamer.channel`; 32
    zero bytes on a plain channel)."""

    def __init__(
        self,
        nonce: bytes,
        make_local: Callable[[bytes, bytes], Handshake],
        *,
        network_id: int,
        version: int = PROTOCOL_VERSION,
        binding: bytes = PLAIN_BINDING,
    ) -> None:
        if len(binding) != CHANNEL_BINDING_SIZE:
            raise LocalProtocolError(f"a channel binding is {CHANNEL_BINDING_SIZE} bytes, not {len(binding)}")
        self.nonce = nonce
        self.binding = binding
        self.network_id = network_id
        self.version = version
        self._make_local = make_local
        self._state = _State.AWAIT_HELLO
        self.local: Handshake | None = None
        self.remote: Handshake | None = None

    @property
    def done(self) -> bool:
        return self._state is _State.DONE

    def start(self) -> Hello:
        """The first message to send, at once, without waiting for the peer's."""
        return Hello(self.nonce)

    def receive(self, msg: Message) -> Handshake | None:
        """Take the peer's next message; returns our Handshake when it is time to send it.

        Raises `HandshakeError` (with the Goodbye code to send) for an unacceptable handshake,
        `RemoteProtocolError` for a message out of place, `HandshakeRefused` for a Goodbye.
        """
        if isinstance(msg, Goodbye):
            raise HandshakeRefused(msg)
        if self._state is _State.AWAIT_HELLO:
            return self._hello(msg)
        if self._state is _State.AWAIT_HANDSHAKE:
            self._handshake(msg)
            return None
        raise LocalProtocolError("the handshake is over; connection_reply judges what follows")

    def _hello(self, msg: Message) -> Handshake:
        if isinstance(msg, Handshake):
            # Version 1 had no Hello; a peer that skips it cannot verify our handshake.
            raise HandshakeError(
                f"peer sent a Handshake without a Hello first: it speaks protocol version "
                f"{msg.version}, this node speaks {self.version}",
                GoodbyeCode.VERSION_MISMATCH,
            )
        if not isinstance(msg, Hello):
            raise RemoteProtocolError(f"expected Hello, got {type(msg).__name__}")
        self.local = self._make_local(msg.nonce, self.binding)
        self._state = _State.AWAIT_HANDSHAKE
        return self.local

    def _handshake(self, msg: Message) -> None:
        if not isinstance(msg, Handshake):
            raise RemoteProtocolError(f"expected Handshake, got {type(msg).__name__}")
        assert self.local is not None
        if msg.overlay == self.local.overlay:
            raise HandshakeError("connected to ourselves", GoodbyeCode.DUPLICATE_CONNECTION)
        verify_handshake(
            msg, network_id=self.network_id, version=self.version, challenge=self.nonce, binding=self.binding
        )
        self.remote = msg
        self._state = _State.DONE


def connection_reply(msg: Hello | Handshake | Ping | Pong) -> Pong | None:
    """What an established connection answers to one of its own messages (CONNECTION_MESSAGES)."""
    if isinstance(msg, Ping):
        return Pong(msg.nonce)
    if isinstance(msg, Pong):
        return None
    if isinstance(msg, Hello):
        raise RemoteProtocolError("Hello on an established connection (the handshake is over)")
    raise RemoteProtocolError("second handshake on an established connection")
