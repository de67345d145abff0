"""FrameDecoder: a byte stream, split anyhow, into messages (sans-IO, as h11 reads HTTP).

A frame is ``length (u32) || type (u8) || body`` (docs/protocol.md, section 3); the bodies are
`streamer.codec`'s. The decoder checks each frame's length and type as soon as their bytes are in,
so an oversized frame or an unknown type is refused before its body is buffered.
"""

from __future__ import annotations

import struct

from streamer.codec import decode_body, is_known_type
from streamer.errors import LocalProtocolError, RemoteProtocolError
from streamer.messages import FRAME_HEADER_SIZE, MAX_FRAME_SIZE, Message

__all__ = ["FrameDecoder", "decode"]

_LENGTH = struct.Struct(">I")


def decode(frame: bytes) -> Message:
    """Decode exactly one whole frame (a convenience over :class:`FrameDecoder`)."""
    decoder = FrameDecoder()
    decoder.receive_data(frame)
    msg = decoder.next_message()
    decoder.receive_eof()
    if msg is None or decoder.buffered_bytes:
        raise RemoteProtocolError(f"expected exactly one frame in {len(frame)} bytes")
    return msg


class FrameDecoder:
    """Turns a byte stream, split anyhow, into messages.

    Feed bytes with :meth:`receive_data`, then call :meth:`next_message` until it returns ``None``
    (more data needed). Every frame's length field is checked as soon as its four bytes are in and
    its type byte as soon as that is in, so an oversized frame or an unknown type is rejected before
    its body is buffered. The buffer never holds more than one frame header plus ``max_frame_size``
    bytes plus the last chunk received; feeding more without draining is a
    :class:`LocalProtocolError`. After a :class:`RemoteProtocolError` the decoder stays failed.
    """

    def __init__(self, max_frame_size: int = MAX_FRAME_SIZE) -> None:
        if not 1 <= max_frame_size <= 0xFFFFFFFF:
            raise ValueError(f"max_frame_size must be in 1..2**32-1, got {max_frame_size}")
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._scan = 0  # offset in _buf of the first frame header not yet checked
        self._last_length = 0  # length field of the last frame checked
        self._eof = False
        self._failure: RemoteProtocolError | None = None
        self.frames_decoded = 0
        self.bytes_decoded = 0
        self.last_frame_size = 0  # wire size of the message next_message() returned last

    @property
    def buffered_bytes(self) -> int:
        return len(self._buf)

    def _check_ok(self) -> None:
        if self._failure is not None:
            raise RemoteProtocolError(f"decoder failed earlier: {self._failure}") from self._failure

    def _fail(self, exc: RemoteProtocolError) -> RemoteProtocolError:
        self._failure = exc
        return exc

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        self._check_ok()
        if self._eof:
            raise LocalProtocolError("receive_data() after receive_eof()")
        if len(self._buf) > FRAME_HEADER_SIZE + self.max_frame_size:
            raise LocalProtocolError(
                f"decoder holds {len(self._buf)} undecoded bytes; call next_message() until it "
                "returns None before feeding more data"
            )
        self._buf += data
        self._check_headers()

    def _check_headers(self) -> None:
        buf, size, limit = self._buf, len(self._buf), self.max_frame_size
        while self._scan + FRAME_HEADER_SIZE <= size:
            (length,) = _LENGTH.unpack_from(buf, self._scan)
            if length > limit:
                raise self._fail(
                    RemoteProtocolError(f"frame of {length} bytes exceeds the limit of {limit} bytes")
                )
            if length == 0:
                raise self._fail(RemoteProtocolError("frame of length 0 has no message type"))
            if self._scan + FRAME_HEADER_SIZE >= size:
                return
            type_code = buf[self._scan + FRAME_HEADER_SIZE]
            if not is_known_type(type_code):
                raise self._fail(RemoteProtocolError(f"unknown message type 0x{type_code:02x}"))
            self._scan += FRAME_HEADER_SIZE + length
            self._last_length = length

    def next_message(self) -> Message | None:
        """The next whole message, or ``None`` if more data is needed."""
        self._check_ok()
        buf = self._buf
        if len(buf) < FRAME_HEADER_SIZE:
            return None
        (length,) = _LENGTH.unpack_from(buf, 0)
        end = FRAME_HEADER_SIZE + length
        if len(buf) < end:
            return None
        type_code = buf[FRAME_HEADER_SIZE]
        with memoryview(buf) as view:  # one copy of the body (a bytearray slice would be a second)
            body = bytes(view[FRAME_HEADER_SIZE + 1 : end])
        del buf[:end]  # O(1) in CPython: bytearray drops a prefix by moving its start
        self._scan -= end
        try:
            msg = decode_body(type_code, body)
        except RemoteProtocolError as exc:
            self._failure = exc
            raise
        self.frames_decoded += 1
        self.bytes_decoded += end
        self.last_frame_size = end
        return msg

    def receive_eof(self) -> None:
        """The peer closed its side. Raises if it left a frame half sent; whole frames stay readable."""
        self._check_ok()
        self._eof = True
        size = len(self._buf)
        if self._scan == size:
            return
        if self._scan > size:  # the last frame's header is in, part of its type byte or body is not
            length = self._last_length
            got = length - (self._scan - size)
        elif size - self._scan < FRAME_HEADER_SIZE:
            got = size - self._scan
            raise self._fail(
                RemoteProtocolError(
                    f"truncated frame at EOF: got {got} of the {FRAME_HEADER_SIZE} length-header bytes, "
                    f"{FRAME_HEADER_SIZE - got} missing"
                )
            )
        else:  # header in, nothing after it
            (length,) = _LENGTH.unpack_from(self._buf, self._scan)
            got = 0
        raise self._fail(
            RemoteProtocolError(
                f"truncated frame at EOF: got {got} of {length} bytes after the length header, "
                f"{length - got} missing"
            )
        )
