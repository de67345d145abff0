"""Frame codec of the streamer wire protocol, sans-IO.

:func:`encode` turns a message into one frame and :func:`decode_body` reads one frame's body;
`streamer.framing.FrameDecoder` takes bytes as they arrive (any split) and hands back messages.
None of them touches a socket. A frame is::

    u32 BE length L (= 1 + body size, 1..max_frame_size) | u8 type | body (L - 1 bytes)

Each body's writer and reader come with its message's declaration (streamer/wire/, derived
from its fields or, for a few irregular bodies, written by hand); the layouts are written down
in docs/protocol.md.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from streamer.errors import LocalProtocolError, MessageError, RemoteProtocolError
from streamer.wire.body import BodyReader
from streamer.wire.declare import Message
from streamer.wire.limits import MAX_FRAME_SIZE
from streamer.wire.registry import MESSAGE_CLASSES

_HEADER = struct.Struct(">IB")  # length, type

_WRITERS: dict[type[Any], Callable[[Any], bytes]] = {cls: cls._layout.write for cls in MESSAGE_CLASSES}
_READERS: dict[int, tuple[str, Callable[[BodyReader], Message]]] = {
    cls.TYPE: (cls.__name__, cls._layout.read) for cls in MESSAGE_CLASSES
}


def encode(msg: Message) -> bytes:
    """The whole frame (length, type, body) for ``msg``."""
    writer = _WRITERS.get(type(msg))
    if writer is None:
        raise LocalProtocolError(f"cannot encode {type(msg).__name__!r}: not a streamer message")
    try:
        body = writer(msg)
    except (struct.error, UnicodeEncodeError, TypeError) as exc:  # only if fields were forced past validation
        raise LocalProtocolError(f"cannot encode {type(msg).__name__}: {exc}") from exc
    length = 1 + len(body)
    if length > MAX_FRAME_SIZE:
        raise LocalProtocolError(
            f"cannot encode {type(msg).__name__}: frame length {length} exceeds "
            f"MAX_FRAME_SIZE {MAX_FRAME_SIZE}"
        )
    return _HEADER.pack(length, msg.TYPE) + body


def is_known_type(type_code: int) -> bool:
    """Whether a frame's type byte names a message this implementation reads."""
    return type_code in _READERS


def decode_body(type_code: int, body: bytes) -> Message:
    """The message a frame of ``type_code`` carries in ``body``; RemoteProtocolError if malformed."""
    entry = _READERS.get(type_code)
    if entry is None:
        raise RemoteProtocolError(f"unknown message type 0x{type_code:02x}")
    name, read = entry
    reader = BodyReader(name, body)
    try:
        msg = read(reader)
    except MessageError as exc:
        raise RemoteProtocolError(f"invalid {name} from peer: {exc}") from exc
    reader.done()
    return msg
