"""A handshaken peer connection: framed messages in, a priority outbox out, bytes accounted.

The trio shell around the sans-IO codec, built by `streamer.handshake` once the greeting is
done. One reader task decodes frames, answers the connection's own messages (Ping; a Pong wakes
the `ping` it answers; a second Hello or Handshake is a violation) and hands every other message
to the node's handler; one writer task drains the outbox, most urgent first, coalescing what is
queued into one write. The handler runs inside the reader, so it must not wait on this
connection's own outbox (that could deadlock two peers whose outboxes are both full): it answers
with `send_nowait` or hands the work to a task started with `start_soon`.

A connection ends for one of three reasons, reported by `run()` as a `Disconnect`: the peer
closed it (EOF or its Goodbye), we closed it (`close`), or the peer broke the protocol (any
`RemoteProtocolError` from the codec, the handler or a connection task), in which case we send a
Goodbye naming the violation before closing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import asdict, dataclass
from typing import Any

import trio

from streamer.codec import encode
from streamer.errors import RemoteProtocolError
from streamer.framing import FrameDecoder
from streamer.greeting import CONNECTION_MESSAGES, connection_reply
from streamer.messages import (
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
from streamer.outbox import OutboxStatistics, Priority, PriorityOutbox
from streamer.pings import Pings

log = logging.getLogger(__name__)

GOODBYE_TIMEOUT = 2.0
RECEIVE_SIZE = 256 * 1024  # a TLS stream hands back every record that has arrived, up to this
MAX_WRITE = 256 * 1024  # bytes coalesced into one send_all

MessageHandler = Callable[[Message], Awaitable[None]]


class PingTimeout(Exception):
    """The peer did not answer a Ping in time."""


@dataclass(frozen=True)
class Disconnect:
    """Why a connection ended."""

    by: str  # "local" or "remote"
    code: int
    reason: str
    violation: bool = False  # the remote broke the protocol


@dataclass
class ConnectionCounters:
    """Traffic of one connection, counted as it goes; `*_at` are wall-clock times of the last
    message each way."""

    messages_in: int = 0
    messages_out: int = 0
    payload_bytes_in: int = 0
    protocol_bytes_in: int = 0
    payload_bytes_out: int = 0
    protocol_bytes_out: int = 0
    last_in_at: float | None = None
    last_out_at: float | None = None


@dataclass(frozen=True)
class ConnectionStatistics:
    """A snapshot of one connection: whose, which way, its traffic and its outbox."""

    overlay: bytes  # the peer's overlay address
    outbound: bool  # this node dialled the peer
    messages_in: int  # messages received
    messages_out: int  # messages sent
    payload_bytes_in: int  # chunk-data bytes received (`streamer.messages.payload_size`)
    protocol_bytes_in: int  # every other byte of the frames received (protocol overhead)
    payload_bytes_out: int  # chunk-data bytes sent
    protocol_bytes_out: int  # every other byte of the frames sent
    last_in_at: float | None  # wall-clock time of the last message received (None: none yet)
    last_out_at: float | None  # wall-clock time of the last write to the peer (None: none yet)
    outbox: OutboxStatistics  # what waits to be sent, per priority class


async def close_quietly(stream: trio.abc.Stream) -> None:
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
        self.stats = ConnectionCounters()
        self._stream = stream
        self._decoder = decoder or FrameDecoder()
        self._outbox: PriorityOutbox[Message] = PriorityOutbox(outbox_capacity)
        self._disconnect: Disconnect | None = None
        self._scope: trio.CancelScope | None = None
        self._nursery: trio.Nursery | None = None
        self._pending: list[tuple[Callable[..., Awaitable[Any]], tuple[Any, ...]]] = []
        self._closed = trio.Event()
        self._pings = Pings()

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

    async def ping(self, timeout: float) -> float:
        """Seconds from queueing a Ping (most urgent first) to reading the Pong that echoes it.

        Raises `PingTimeout` after ``timeout`` seconds without it, trio.ClosedResourceError if
        the connection ends first.
        """
        ping = self._pings.open()
        try:
            with trio.move_on_after(timeout):
                sent_at = trio.current_time()
                await self.send(Ping(ping.nonce))
                await ping.done.wait()
                if ping.answered_at is None:
                    raise trio.ClosedResourceError("the connection ended before the Pong came")
                return ping.answered_at - sent_at
            raise PingTimeout(f"no Pong within {timeout:g} s")
        finally:
            self._pings.close(ping)

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

    def close(
        self,
        code: int = GoodbyeCode.NORMAL,
        reason: str = "",
        *,
        violation: bool = False,
        flush: bool = False,
        farewell: Message | None = None,
    ) -> None:
        """Close from our side: drop what is queued (unless `flush`: then it goes out first), send
        ``farewell`` (if any) and a Goodbye, end `run()`.

        Idempotent; the first reason wins.
        """
        if self._disconnect is not None:
            return
        self._disconnect = Disconnect("local", int(code), reason, violation)
        if not flush:
            self._outbox.clear()
        last = Priority.HISTORICAL if flush else Priority.RETRIEVAL
        with suppress(trio.WouldBlock, trio.ClosedResourceError):
            if farewell is not None:
                self._outbox.put_nowait(farewell, last)
            self._outbox.put_nowait(Goodbye(code=code, reason=clip_reason(reason)), last)
        self._outbox.close()
        if self._scope is not None:
            self._scope.deadline = min(self._scope.deadline, trio.current_time() + GOODBYE_TIMEOUT)

    def broke_protocol(self, violation: RemoteProtocolError) -> None:
        """The peer broke the protocol: log it and close, naming the violation in our Goodbye."""
        if self._disconnect is None:
            log.warning("%r broke the protocol: %s", self, violation)
        farewell = violation.farewell if isinstance(violation.farewell, Message) else None
        self.close(violation.code, str(violation), violation=True, farewell=farewell)

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
            await close_quietly(self._stream)
            self._pings.fail_all()
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
        if isinstance(msg, Pong):
            self._pings.answer(msg.nonce, trio.current_time())
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

    def statistics(self) -> ConnectionStatistics:
        outbox = self._outbox.statistics()
        return ConnectionStatistics(self.overlay, self.outbound, **asdict(self.stats), outbox=outbox)
