"""TlsStream: TLS 1.3 over a trio stream, decrypting every record that has arrived in one call.

trio's `SSLStream` hands back at most one TLS record (16 KiB of data) per `receive_some`, each
through its general retry loop and a trip through the scheduler: a node pulling 20,000 chunks read
82 MB in about 5,000 such calls, and its socket in 64 KiB pieces. This stream serves the one
pattern a `PeerConnection` has: the handshake first, then one task reading and one writing.
`receive_some` reads up to `TRANSPORT_RECEIVE` bytes from the transport and returns the data of
every whole record in them (up to ``max_bytes``); `send_all` encrypts and sends under one lock.
The TLS itself is the standard library's `ssl.SSLObject` over memory BIOs, as in `SSLStream`: the
same OpenSSL, the same records on the wire, so a node speaks with peers using either stream.

Errors follow `SSLStream`'s (with ``https_compatible=False``): a TLS failure, or the transport
ending without the peer's close_notify, raises `trio.BrokenResourceError` (its cause the `ssl`
error); the peer's close_notify reads as end of file (``b""``); use after `aclose` raises
`trio.ClosedResourceError`.

As `SSLStream` does, the listener keeps back what its last handshake step writes (TLS 1.3 session
tickets) until its first `send_all`: sent at once, they could fill a transport that the dialler
does not read while it sends its own first message (a lock-step pipe deadlocks on it).
"""

from __future__ import annotations

import ssl
from contextlib import suppress

import trio

__all__ = ["CLOSE_TIMEOUT", "TRANSPORT_RECEIVE", "TlsStream"]

TRANSPORT_RECEIVE = 256 * 1024
"""Bytes asked of the transport per read: 16 TLS records of full size."""
DEFAULT_RECEIVE = 256 * 1024
"""Data bytes `receive_some` returns at most when not told."""
CLOSE_TIMEOUT = 1.0
"""Seconds `aclose` spends at most sending our close_notify (a peer not reading may never take it)."""


class TlsStream(trio.abc.Stream):
    """A TLS connection over ``transport``; call `do_handshake` before anything else."""

    def __init__(self, transport: trio.abc.Stream, context: ssl.SSLContext, *, server_side: bool) -> None:
        self.transport_stream = transport
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_side=server_side)
        self._send_lock = trio.StrictFIFOLock()
        self._receiving = False
        self._handshaken = False
        self._delayed = b""  # written by the listener's last handshake step, sent with its first data
        self._broken = False
        self._failure: BaseException | None = None  # met after some good data, raised next
        self._closed = False

    def peer_certificate(self) -> bytes | None:
        """The certificate the peer showed (DER), None if it showed none."""
        return self._tls.getpeercert(binary_form=True)

    def _check(self) -> None:
        if self._closed:
            raise trio.ClosedResourceError("the TLS stream is closed")
        if self._broken:
            raise trio.BrokenResourceError("the TLS stream broke earlier")
        if not self._handshaken:
            raise RuntimeError("TlsStream used before do_handshake")

    def _broke(self, exc: BaseException) -> trio.BrokenResourceError:
        self._broken = True
        error = trio.BrokenResourceError(f"TLS failed: {exc}")
        error.__cause__ = exc
        return error

    async def do_handshake(self) -> None:
        """Run the TLS handshake; raises `trio.BrokenResourceError` if it fails."""
        if self._handshaken:
            await trio.lowlevel.checkpoint()
            return
        while True:
            try:
                self._tls.do_handshake()
            except ssl.SSLWantReadError:
                pass
            except (ssl.SSLError, ssl.CertificateError) as exc:
                raise self._broke(exc) from exc
            else:
                break
            await self._send_pending()
            await self._fill()
        self._handshaken = True
        if self._tls.server_side:  # the listener's tickets wait for its first send
            self._delayed = self._outgoing.read()
        else:  # the dialler's Finished
            await self._send_pending()

    async def _fill(self) -> None:
        """Read once from the transport into the incoming BIO."""
        try:
            data = await self.transport_stream.receive_some(TRANSPORT_RECEIVE)
        except trio.BrokenResourceError:
            self._broken = True
            raise
        if data:
            self._incoming.write(data)
        else:
            self._incoming.write_eof()

    async def _send_pending(self) -> None:
        """Send what the TLS object has written, in the order written (under the send lock)."""
        async with self._send_lock:
            await self._send_locked()

    async def _send_locked(self) -> None:
        data = self._outgoing.read()
        if self._delayed:
            data, self._delayed = self._delayed + data, b""
        if data:
            try:
                await self.transport_stream.send_all(data)
            except BaseException:
                self._broken = True  # some unknown part of a record went out
                raise

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        """The data of the records that have arrived (at least one byte), ``b""`` at close_notify."""
        self._check()
        if self._receiving:
            raise trio.BusyResourceError("another task is already receiving on this TLS stream")
        limit = DEFAULT_RECEIVE if max_bytes is None else max_bytes
        if limit < 1:
            raise ValueError("max_bytes must be >= 1")
        if self._failure is not None:
            raise self._broke(self._failure) from self._failure
        self._receiving = True
        try:
            waited = False
            while True:
                parts = self._decrypt(limit)
                if self._outgoing.pending:  # something the records asked us to answer
                    await self._send_pending()
                    waited = True
                if parts is not None:
                    if not waited:
                        await trio.lowlevel.checkpoint()
                    return parts[0] if len(parts) == 1 else b"".join(parts)
                await self._fill()
                waited = True
        finally:
            self._receiving = False

    def _decrypt(self, limit: int) -> list[bytes] | None:
        """The data of the whole records in the incoming BIO (up to ``limit`` bytes); None if
        there is none yet, ``[b""]`` at the peer's close_notify."""
        parts: list[bytes] = []
        size = 0
        tls = self._tls
        try:
            while size < limit:
                data = tls.read(limit - size)
                if not data:  # close_notify
                    return parts or [b""]
                parts.append(data)
                size += len(data)
        except ssl.SSLWantReadError:
            pass
        except (ssl.SSLError, ssl.CertificateError) as exc:
            if not parts:
                raise self._broke(exc) from exc
            self._failure = exc  # the data before it is good: the next call raises it
        return parts or None

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Encrypt ``data`` and send it, after anything written before it."""
        self._check()
        async with self._send_lock:
            self._check()
            try:
                self._tls.write(data)
            except (ssl.SSLError, ssl.CertificateError) as exc:
                raise self._broke(exc) from exc
            await self._send_locked()

    async def wait_send_all_might_not_block(self) -> None:
        self._check()
        async with self._send_lock:
            await self.transport_stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        """Send our close_notify (within `CLOSE_TIMEOUT`, if the stream is sound) and close the
        transport. Idempotent."""
        if self._closed:
            await trio.lowlevel.checkpoint()
            return
        self._closed = True
        try:
            if self._handshaken and not self._broken and not self._send_lock.locked():
                with suppress(ssl.SSLError):  # WantRead: the peer's close_notify is not awaited
                    self._tls.unwrap()
                with (
                    trio.move_on_after(CLOSE_TIMEOUT),
                    suppress(trio.BrokenResourceError, trio.ClosedResourceError),
                ):
                    await self._send_pending()
        finally:
            await self.transport_stream.aclose()
