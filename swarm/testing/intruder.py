"""An intruder: a raw wire client that greets a node with a fresh identity, or does not.

Shared by the tests of session and greeting floods and `benches/fuzz.py`. Identities are free to
make, so an attacker opens as many handshaken sessions as it likes, each from a new overlay;
`Intruder.session` is one of them, over the plain or the TLS channel as the target runs. It
speaks docs/protocol.md section 6 (Hello both ways, then a handshake signed over the target's
nonce and the channel binding) and then holds the connection, reading what arrives, until told
to close. `silent` opens a TCP connection that never sends a byte.
"""

from __future__ import annotations

import secrets
from contextlib import suppress

import trio

from streamer.channel import TlsCredentials, open_channel
from streamer.codec import encode
from streamer.framing import FrameDecoder
from streamer.identity import NodeIdentity, make_handshake
from streamer.messages import NONCE_SIZE, PROTOCOL_VERSION, Goodbye, Handshake, Hello, Message, Ping, Pong

__all__ = ["Intruder", "IntruderRefused", "silent"]


class IntruderRefused(Exception):
    """The target closed the greeting (with a Goodbye, or without a word)."""


class Intruder:
    """Sessions with one target from throwaway identities."""

    def __init__(
        self, host: str, port: int, *, tls: bool, network_id: int = 1, advertise: bool = False
    ) -> None:
        self.host = host
        self.port = port
        self.network_id = network_id
        self.advertise = advertise  # each identity claims a listen address (gossip relays it)
        self._credentials = TlsCredentials() if tls else None

    async def session(self, identity: NodeIdentity | None = None, *, source: str = "") -> IntruderSession:
        """A handshaken session from `identity` (a fresh one by default); IntruderRefused if the
        target turns it away. `source` binds the local end to that address (e.g. 127.0.0.2)."""
        stream = await _connect(self.host, self.port, source)
        try:
            secure, binding = await open_channel(stream, self._credentials, server_side=False)
        except Exception as exc:
            await stream.aclose()
            raise IntruderRefused(f"channel: {exc}") from exc
        session = IntruderSession(secure, identity or NodeIdentity.generate())
        listen = (self.host, 1 + secrets.randbelow(65535)) if self.advertise else ("", 0)
        try:
            await session.greet(self.network_id, binding, listen)
        except BaseException:
            await session.aclose()
            raise
        return session


class IntruderSession:
    """One connection: greet, then read what the target sends until closed."""

    def __init__(self, stream: trio.abc.Stream, identity: NodeIdentity) -> None:
        self.stream = stream
        self.identity = identity
        self.decoder = FrameDecoder()
        self.target: Handshake | None = None

    async def greet(self, network_id: int, binding: bytes, listen: tuple[str, int] = ("", 0)) -> Handshake:
        nonce = secrets.token_bytes(NONCE_SIZE)
        await self.stream.send_all(encode(Hello(nonce)))
        hello = await self.receive()
        if not isinstance(hello, Hello):
            raise IntruderRefused(f"expected the target's Hello, got {hello}")
        ours = make_handshake(
            self.identity,
            version=PROTOCOL_VERSION,
            network_id=network_id,
            epoch=1,
            host=listen[0],
            port=listen[1],
            challenge=hello.nonce,
            binding=binding,
        )
        await self.stream.send_all(encode(ours))
        theirs = await self.receive()
        if not isinstance(theirs, Handshake):
            raise IntruderRefused(f"expected the target's Handshake, got {theirs}")
        self.target = theirs
        return theirs

    async def receive(self) -> Message | None:
        """The next message; None at EOF (or a broken stream); a Goodbye raises IntruderRefused."""
        while (msg := self.decoder.next_message()) is None:
            try:
                data = await self.stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if not data:
                return None
            self.decoder.receive_data(data)
        if isinstance(msg, Goodbye):
            raise IntruderRefused(f"Goodbye {msg.code}: {msg.reason}")
        return msg

    async def ping(self, nonce: int = 1) -> None:
        """Send a Ping and read until its Pong: the target has read all we sent before."""
        await self.stream.send_all(encode(Ping(nonce)))
        while (msg := await self.receive()) != Pong(nonce):
            if msg is None:
                raise IntruderRefused("closed before it answered our Ping")

    async def drain(self) -> None:
        """Read (and drop) what the target sends until it closes the connection."""
        try:
            while await self.receive() is not None:
                pass
        except IntruderRefused:  # its Goodbye: the end
            pass

    async def aclose(self) -> None:
        with trio.move_on_after(1) as scope:
            scope.shield = True
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await self.stream.aclose()


async def _connect(host: str, port: int, source: str) -> trio.SocketStream:
    if not source:
        return await trio.open_tcp_stream(host, port)
    sock = trio.socket.socket()
    try:
        await sock.bind((source, 0))
        await sock.connect((host, port))
    except BaseException:
        sock.close()
        raise
    return trio.SocketStream(sock)


async def silent(host: str, port: int, *, source: str = "") -> trio.SocketStream:
    """A TCP connection that will never send a byte (a half-open greeting)."""
    return await _connect(host, port, source)
