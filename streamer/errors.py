"""Errors of the wire protocol, named after who broke it (the h11 convention).

- :class:`RemoteProtocolError`: the peer sent bytes that are not a valid frame or message. The
  connection should say ``Goodbye(PROTOCOL_ERROR)`` (or just close) and drop the peer.
- :class:`LocalProtocolError`: this process misused the codec (encoded something that is not a
  message, fed data after EOF, never drained the decoder). A bug on our side, never the peer's.
- :class:`MessageError`: a message was constructed with an invalid field. Raised by the message
  dataclasses themselves; the decoder turns it into a :class:`RemoteProtocolError` (chained) when
  the invalid field came off the wire.
"""

from __future__ import annotations


class ProtocolError(Exception):
    """Base class of wire protocol errors."""


class RemoteProtocolError(ProtocolError):
    """The remote peer violated the wire protocol; the message says how.

    ``code`` is the Goodbye code to close the connection with (PROTOCOL_ERROR, 1, unless a more
    specific one applies, e.g. INVALID_CHUNK or UNSOLICITED_DELIVERY).

    ``farewell``, if given, is a message to send just before that Goodbye (a `RolledBack` tells
    an upstream which of its signed states its cursors contradict).
    """

    def __init__(self, message: str, code: int = 1, *, farewell: object | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.farewell = farewell


class LocalProtocolError(ProtocolError):
    """We tried to do something the wire protocol does not allow; a bug in the caller."""


class MessageError(ValueError):
    """A message field is invalid; the message names the message class and the field."""
