"""The greeting on a fresh stream: the trio shell around `HandshakeMachine` (streamer.greeting).

`handshake()` sends what the machine says to send and feeds it what arrives, within a time limit,
and returns the established `PeerConnection`; on failure it says why in a Goodbye (when we
refused) and raises `HandshakeFailed` naming who refused.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from contextlib import suppress
from typing import NoReturn

import trio

from streamer.channel import ChannelError, TlsCredentials, open_channel
from streamer.codec import encode
from streamer.connection import GOODBYE_TIMEOUT, RECEIVE_SIZE, PeerConnection, close_quietly
from streamer.errors import RemoteProtocolError
from streamer.framing import FrameDecoder
from streamer.greeting import HandshakeMachine, HandshakeRefused
from streamer.identity import HandshakeError
from streamer.messages import (
    NONCE_SIZE,
    PROTOCOL_VERSION,
    Goodbye,
    GoodbyeCode,
    Handshake,
    Message,
    clip_reason,
)
from streamer.tls import TlsStream

__all__ = ["HANDSHAKE_TIMEOUT", "HandshakeFailed", "handshake"]

HANDSHAKE_TIMEOUT = 10.0


class _Silent(Exception):
    """Nothing arrived within the silence limit."""


class HandshakeFailed(Exception):
    """The handshake did not complete; `by` says which side refused ("local" or "remote")."""

    def __init__(self, reason: str, code: int, by: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code
        self.by = by


async def handshake(
    stream: trio.abc.Stream,
    make_local: Callable[[bytes, bytes], Handshake],
    *,
    network_id: int,
    version: int = PROTOCOL_VERSION,
    outbound: bool,
    timeout: float = HANDSHAKE_TIMEOUT,
    outbox_capacity: int = 64,
    credentials: TlsCredentials | None = None,
    silence: float | None = None,
) -> PeerConnection:
    """Open the channel and greet and verify a peer on it; returns the connection, ready to `run`.

    With `credentials` the channel is TLS (the listener serves it, the dialler checks no
    certificate); without, plain. The rules are the `HandshakeMachine`'s: each side sends a
    `Hello` with a fresh random nonce, then its `Handshake`, built by `make_local` and signed over
    the other side's nonce and the channel binding, so a handshake recorded on one connection, or
    relayed from another channel, is worthless on this one. On failure the stream is closed (after
    a Goodbye saying why, if we refused) and `HandshakeFailed` is raised.

    With `silence`, a peer that sends not a byte within that many seconds is given up on then
    (an honest one opens with its ClientHello or its Hello at once), not after `timeout`.
    """
    decoder = FrameDecoder()
    nonce = secrets.token_bytes(NONCE_SIZE)
    raw = stream
    try:
        with trio.fail_after(timeout):
            with trio.CancelScope() as quiet:
                if silence is not None:
                    quiet.deadline = trio.current_time() + silence
                    stream = _Heard(stream, quiet)
                stream, binding = await open_channel(stream, credentials, server_side=not outbound)
                machine = HandshakeMachine(
                    nonce, make_local, network_id=network_id, version=version, binding=binding
                )
                await _exchange(stream, machine, decoder)
            if quiet.cancelled_caught:
                raise _Silent
    except _Silent:
        await close_quietly(raw)
        reason = f"nothing sent within {silence:g}s"
        raise HandshakeFailed(reason, GoodbyeCode.BAD_HANDSHAKE, "remote") from None
    except _FAILURES as exc:
        await _fail(stream, exc, timeout)
    if isinstance(stream, _Heard):
        stream = raw  # the plain channel: no need to watch it any more
    elif isinstance(stream, TlsStream) and isinstance(stream.transport_stream, _Heard):
        stream.transport_stream = raw  # nor under TLS: one layer less on every read and write
    assert machine.local is not None and machine.remote is not None
    return PeerConnection(
        stream,
        machine.remote,
        machine.local,
        outbound=outbound,
        decoder=decoder,
        outbox_capacity=outbox_capacity,
    )


class _Heard(trio.abc.Stream):
    """A stream that lifts the silence deadline (`quiet`) once its first bytes arrive."""

    def __init__(self, stream: trio.abc.Stream, quiet: trio.CancelScope) -> None:
        self.stream = stream
        self._quiet: trio.CancelScope | None = quiet

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        data = await self.stream.receive_some(max_bytes)
        if data and self._quiet is not None:
            self._quiet.deadline, self._quiet = math.inf, None
        return data

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self.stream.aclose()


_FAILURES = (
    ChannelError,
    HandshakeError,
    RemoteProtocolError,
    trio.TooSlowError,
    HandshakeRefused,
    EOFError,
    trio.BrokenResourceError,
    trio.ClosedResourceError,
)


async def _fail(stream: trio.abc.Stream, exc: BaseException, timeout: float) -> NoReturn:
    """Close the stream (after a Goodbye saying why, if we refused) and raise the
    `HandshakeFailed` that says what went wrong on which side."""
    if isinstance(exc, ChannelError):
        await close_quietly(stream)
        raise HandshakeFailed(str(exc), GoodbyeCode.BAD_HANDSHAKE, "local") from exc
    if isinstance(exc, HandshakeError):
        await _refuse(stream, exc.code, str(exc))
        raise HandshakeFailed(str(exc), int(exc.code), by="local") from exc
    if isinstance(exc, RemoteProtocolError):
        await _refuse(stream, exc.code, f"bad handshake: {exc}")
        raise HandshakeFailed(f"bad handshake: {exc}", exc.code, by="local") from exc
    if isinstance(exc, trio.TooSlowError):
        reason = f"no handshake within {timeout:g}s"
        await _refuse(stream, GoodbyeCode.BAD_HANDSHAKE, reason)
        raise HandshakeFailed(reason, GoodbyeCode.BAD_HANDSHAKE, "local") from None
    await close_quietly(stream)
    if isinstance(exc, HandshakeRefused):
        raise HandshakeFailed(str(exc), exc.code, "remote") from exc
    if isinstance(exc, EOFError):
        reason = "peer closed the connection during the handshake"
        raise HandshakeFailed(reason, GoodbyeCode.NORMAL, "remote") from None
    reason = f"connection lost during handshake: {exc or type(exc).__name__}"
    raise HandshakeFailed(reason, GoodbyeCode.NORMAL, "remote") from exc


async def _exchange(stream: trio.abc.Stream, machine: HandshakeMachine, decoder: FrameDecoder) -> None:
    """Feed the machine what arrives and send what it answers. Sending runs in its own task, so
    it never waits for reading: two peers that both write first could block each other."""
    outgoing, to_send = trio.open_memory_channel[Message](2)
    errors: list[Exception] = []  # raised after the nursery, unwrapped from any exception group

    async def sender() -> None:
        try:
            async for msg in to_send:
                await stream.send_all(encode(msg))
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            errors.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender)
        with outgoing:
            outgoing.send_nowait(machine.start())
            try:
                while not machine.done:
                    reply = machine.receive(await _next_message(stream, decoder))
                    if reply is not None:
                        outgoing.send_nowait(reply)
            except Exception as exc:
                errors.insert(0, exc)  # the reader's error explains more than the sender's
                # what is queued (our Handshake) still goes out, briefly, before the Goodbye
                nursery.cancel_scope.deadline = trio.current_time() + GOODBYE_TIMEOUT
    if errors:
        raise errors[0]


async def _next_message(stream: trio.abc.Stream, decoder: FrameDecoder) -> Message:
    """The next whole message off the stream; EOFError if the peer closed it first."""
    while True:
        msg = decoder.next_message()
        if msg is not None:
            return msg
        data = await stream.receive_some(RECEIVE_SIZE)
        if not data:
            decoder.receive_eof()
            raise EOFError
        decoder.receive_data(data)


async def _refuse(stream: trio.abc.Stream, code: int, reason: str) -> None:
    """Best effort: tell the peer why, then close."""
    with trio.move_on_after(GOODBYE_TIMEOUT), suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await stream.send_all(encode(Goodbye(code=code, reason=clip_reason(reason))))
    await close_quietly(stream)
