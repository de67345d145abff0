"""A handshaken peer connection: framed messages in, a priority outbox out, bytes accounted.

The trio shell around the sans-IO codec and the greeting (`streamer.handshake`). One reader
task decodes frames, answers the connection's own messages (Ping; a second Hello or Handshake
is a violation) and hands every other message to the node's handler; one writer task drains
the outbox, most urgent first, coalescing what is queued into one write. The handler runs
inside the reader, so it must not wait on this connection's own outbox (that could deadlock two
peers whose outboxes are both full): it answers with `send_nowait` or hands the work to a task
started with `start_soon`.

A connection ends for one of three reasons, reported by `run()` as a `Disconnect`: the peer
closed it (EOF or its Goodbye), we closed it (`close`), or the peer broke the protocol (any
`RemoteProtocolError` from the codec, the handler or a connection task), in which case we send a
Goodbye naming the violation before closing.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import trio

from streamer.codec import FrameDecoder, encode
from streamer.errors import RemoteProtocolError
from streamer.handshake import CONNECTION_MESSAGES, HandshakeMachine, HandshakeRefused, connection_reply
from streamer.identity import HandshakeError
from streamer.messages import (
    NONCE_SIZE,
    PROTOCOL_VERSION,
    Goodbye,
    GoodbyeCode,
    Handshake,
    Hello,
    Message,
    Ping,
    Pong,
    clip_reason,
    payload_size,
)
from streamer.outbox import Priority, PriorityOutbox

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT = 10.0
GOODBYE_TIMEOUT = 2.0
RECEIVE_SIZE = 65536
MAX_WRITE = 256 * 1024  # bytes coalesced into one send_all

MessageHandler = Callable[[Message], Awaitable[None]]


class HandshakeFailed(Exception):
    """The handshake did not complete; `by` says which side refused ("local" or "remote")."""

    def __init__(self, reason: str, code: int, by: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code
        self.by = by


@dataclass(frozen=True)
class Disconnect:
    """Why a connection ended."""

    by: str  # "local" or "remote"
    code: int
    reason: str
    violation: bool = False  # the remote broke the protocol


@dataclass
class ConnectionStatistics:
    """Traffic of one connection; `*_at` are wall-clock times of the last message each way."""

    messages_in: int = 0
    messages_out: int = 0
    payload_bytes_in: int = 0
    protocol_bytes_in: int = 0
    payload_bytes_out: int = 0
    protocol_bytes_out: int = 0
    last_in_at: float | None = None
    last_out_at: float | None = None


async def handshake(
    stream: trio.abc.Stream,
    make_local: Callable[[bytes], Handshake],
    *,
    network_id: int,
    version: int = PROTOCOL_VERSION,
    outbound: bool,
    timeout: float = HANDSHAKE_TIMEOUT,
    outbox_capacity: int = 64,
) -> PeerConnection:
    """Greet and verify a peer on a fresh stream; returns the connection, ready to `run`.

    The rules are the `HandshakeMachine`'s: each side sends a `Hello` with a fresh random nonce,
    then its `Handshake`, built by `make_local` and signed over the other side's nonce, so a
    handshake recorded on one connection is worthless on another. On failure the stream is closed
    (after a Goodbye saying why, if we refused) and `HandshakeFailed` is raised.
    """
    decoder = FrameDecoder()
    machine = HandshakeMachine(
        secrets.token_bytes(NONCE_SIZE), make_local, network_id=network_id, version=version
    )
    try:
        with trio.fail_after(timeout):
            await _exchange(stream, machine, decoder)
    except HandshakeError as exc:
        await _refuse(stream, exc.code, str(exc))
        raise HandshakeFailed(str(exc), int(exc.code), by="local") from exc
    except RemoteProtocolError as exc:
        await _refuse(stream, exc.code, f"bad handshake: {exc}")
        raise HandshakeFailed(f"bad handshake: {exc}", exc.code, by="local") from exc
    except trio.TooSlowError:
        reason = f"no handshake within {timeout:g}s"
        await _refuse(stream, GoodbyeCode.BAD_HANDSHAKE, reason)
        raise HandshakeFailed(reason, GoodbyeCode.BAD_HANDSHAKE, "local") from None
    except HandshakeRefused as exc:
        await _close_quietly(stream)
        raise HandshakeFailed(str(exc), exc.code, "remote") from exc
    except EOFError:
        await _close_quietly(stream)
        raise HandshakeFailed(
            "peer closed the connection during the handshake", GoodbyeCode.NORMAL, "remote"
        ) from None
    except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        await _close_quietly(stream)
        reason = f"connection lost during handshake: {exc}"
        raise HandshakeFailed(reason, GoodbyeCode.NORMAL, "remote") from exc
    assert machine.local is not None and machine.remote is not None
    return PeerConnection(
        stream,
        machine.remote,
        machine.local,
        outbound=outbound,
        decoder=decoder,
        outbox_capacity=outbox_capacity,
    )


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
    await _close_quietly(stream)


async def _close_quietly(stream: trio.abc.Stream) -> None:
    with trio.CancelScope(shield=True), suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await stream.aclose()


_TASK_ENDINGS = (RemoteProtocolError, trio.ClosedResourceError, trio.BrokenResourceError)


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (possibly nested) exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


class PeerConnection:
    """One live, handshaken connection to a peer."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        remote: Handshake,
        local: Handshake,
        *,
        outbound: bool,
        decoder: FrameDecoder | None = None,
        outbox_capacity: int = 64,
    ) -> None:
        self.remote = remote
        self.local = local
        self.outbound = outbound
        self.stats = ConnectionStatistics()
        self._stream = stream
        self._decoder = decoder or FrameDecoder()
        self._outbox: PriorityOutbox[Message] = PriorityOutbox(outbox_capacity)
        self._disconnect: Disconnect | None = None
        self._scope: trio.CancelScope | None = None
        self._nursery: trio.Nursery | None = None
        self._pending: list[tuple[Callable[..., Awaitable[Any]], tuple[Any, ...]]] = []
        self._closed = trio.Event()

    @property
    def overlay(self) -> bytes:
        return self.remote.overlay

    @property
    def closed(self) -> bool:
        return self._disconnect is not None

    def __repr__(self) -> str:
        direction = "out" if self.outbound else "in"
        return f"<PeerConnection {self.overlay.hex()[:12]} {direction}>"

    # -- sending -----------------------------------------------------------------------------

    async def send(self, msg: Message, priority: Priority = Priority.RETRIEVAL) -> None:
        """Queue `msg`, waiting while its priority class is full (backpressure).

        Raises trio.ClosedResourceError once the connection is closing.
        """
        await self._outbox.put(msg, priority)

    def send_nowait(self, msg: Message, priority: Priority = Priority.RETRIEVAL) -> None:
        """Queue `msg` or raise trio.WouldBlock (class full) / trio.ClosedResourceError."""
        self._outbox.put_nowait(msg, priority)

    # -- lifetime ----------------------------------------------------------------------------

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run a task for as long as the connection lives; a RemoteProtocolError in it drops the peer.

        Called before `run()`, the task starts when `run()` does.
        """
        if self._disconnect is not None:
            return  # closing: nothing new starts
        if self._nursery is None:
            self._pending.append((fn, args))
            return
        with suppress(RuntimeError):  # the nursery is already winding down
            self._nursery.start_soon(self._guarded, fn, *args)

    async def _guarded(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        try:
            await fn(*args)
        except BaseException as exc:
            leaves = _leaves(exc)
            violation = next((e for e in leaves if isinstance(e, RemoteProtocolError)), None)
            if violation is not None:
                self.broke_protocol(violation)
            if any(not isinstance(e, (*_TASK_ENDINGS, trio.Cancelled)) for e in leaves):
                raise  # a bug: let it surface
            if any(isinstance(e, trio.Cancelled) for e in leaves):
                if isinstance(exc, BaseExceptionGroup):
                    cancelled, _ = exc.split(trio.Cancelled)
                    assert cancelled is not None
                    raise cancelled from None
                raise
            # otherwise: a violation (handled above) or the connection closing under the task

    def close(self, code: int = GoodbyeCode.NORMAL, reason: str = "", *, violation: bool = False) -> None:
        """Close from our side: drop what is queued, send a Goodbye, end `run()`.

        Idempotent; the first reason wins.
        """
        if self._disconnect is not None:
            return
        self._disconnect = Disconnect("local", int(code), reason, violation)
        self._outbox.clear()
        with suppress(trio.WouldBlock, trio.ClosedResourceError):
            self._outbox.put_nowait(Goodbye(code=code, reason=clip_reason(reason)), Priority.RETRIEVAL)
        self._outbox.close()
        if self._scope is not None:
            self._scope.deadline = min(self._scope.deadline, trio.current_time() + GOODBYE_TIMEOUT)

    def broke_protocol(self, violation: RemoteProtocolError) -> None:
        """The peer broke the protocol: log it and close, naming the violation in our Goodbye."""
        if self._disconnect is None:
            log.warning("%r broke the protocol: %s", self, violation)
        self.close(violation.code, str(violation), violation=True)

    async def wait_closed(self) -> Disconnect:
        await self._closed.wait()
        assert self._disconnect is not None
        return self._disconnect

    async def run(self, handler: MessageHandler) -> Disconnect:
        """Read and write until the connection ends; returns why it ended."""
        try:
            async with trio.open_nursery() as nursery:
                self._scope = nursery.cancel_scope
                self._nursery = nursery
                if self._disconnect is not None:  # closed before it started
                    self._scope.deadline = trio.current_time() + GOODBYE_TIMEOUT
                nursery.start_soon(self._write_loop)
                nursery.start_soon(self._read_loop, handler)
                pending, self._pending = self._pending, []
                for fn, args in pending:
                    nursery.start_soon(self._guarded, fn, *args)
        finally:
            self._nursery = None
            if self._disconnect is None:
                self._disconnect = Disconnect("local", GoodbyeCode.SHUTDOWN, "cancelled")
            self._outbox.close()
            self._outbox.clear()
            await _close_quietly(self._stream)
            self._closed.set()
        return self._disconnect

    def _ended(self, disconnect: Disconnect) -> None:
        if self._disconnect is None:
            self._disconnect = disconnect
        self._outbox.close()
        if self._scope is not None:
            self._scope.cancel()

    async def _read_loop(self, handler: MessageHandler) -> None:
        decoder, stats = self._decoder, self.stats
        try:
            while self._disconnect is None:
                msg = decoder.next_message()
                if msg is None:
                    data = await self._stream.receive_some(RECEIVE_SIZE)
                    if not data:
                        decoder.receive_eof()
                        self._ended(Disconnect("remote", GoodbyeCode.NORMAL, "peer closed the connection"))
                        return
                    decoder.receive_data(data)
                    continue
                size = decoder.last_frame_size
                payload = payload_size(msg)
                stats.messages_in += 1
                stats.payload_bytes_in += payload
                stats.protocol_bytes_in += size - payload
                stats.last_in_at = time.time()
                if isinstance(msg, Goodbye):
                    self._ended(Disconnect("remote", int(msg.code), msg.reason))
                    return
                if isinstance(msg, CONNECTION_MESSAGES):
                    self._answer(msg)
                else:
                    await handler(msg)
        except RemoteProtocolError as exc:
            self.broke_protocol(exc)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self._ended(
                Disconnect("remote", GoodbyeCode.NORMAL, f"connection lost: {exc or type(exc).__name__}")
            )

    def _answer(self, msg: Hello | Handshake | Ping | Pong) -> None:
        reply = connection_reply(msg)
        if reply is not None:
            try:
                self.send_nowait(reply)
            except trio.WouldBlock:
                raise RemoteProtocolError("ping flood", GoodbyeCode.OVERLOADED) from None
            except trio.ClosedResourceError:
                pass  # closing anyway

    async def _write_loop(self) -> None:
        outbox, stats = self._outbox, self.stats
        try:
            while True:
                try:
                    msg = await outbox.get()
                except trio.EndOfChannel:
                    break
                frames = []
                size = 0
                while True:
                    frame = encode(msg)
                    frames.append(frame)
                    size += len(frame)
                    payload = payload_size(msg)
                    stats.messages_out += 1
                    stats.payload_bytes_out += payload
                    stats.protocol_bytes_out += len(frame) - payload
                    if size >= MAX_WRITE:
                        break
                    try:
                        msg = outbox.get_nowait()
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                await self._stream.send_all(frames[0] if len(frames) == 1 else b"".join(frames))
                stats.last_out_at = time.time()
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self._ended(
                Disconnect("remote", GoodbyeCode.NORMAL, f"connection lost: {exc or type(exc).__name__}")
            )
            return
        # the outbox was closed and drained: our Goodbye (if any) is out
        if self._scope is not None:
            self._scope.cancel()

    def statistics(self) -> dict[str, Any]:
        return {
            "overlay": self.overlay.hex(),
            "outbound": self.outbound,
            **vars(self.stats),
            "outbox": vars(self._outbox.statistics()),
        }
