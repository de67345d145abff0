"""Every wire message, collected from the sub-protocol modules: the classes dispatch and the codec
go by, the type-code registry, and the chunk data each message carries.

A new sub-protocol is a module of declarations added to :data:`PROTOCOLS`.
"""

from __future__ import annotations

import enum
import re
from typing import cast

from streamer.wire import connection, gossip, live, provable, pullsync, pushsync, retrieval
from streamer.wire.declare import Message, declared_in

PROTOCOLS = (connection, pullsync, provable, retrieval, pushsync, gossip, live)

MESSAGE_CLASSES: tuple[type[Message], ...] = tuple(cls for module in PROTOCOLS for cls in declared_in(module))


def _type_codes(classes: tuple[type[Message], ...]) -> type[enum.IntEnum]:
    by_code: dict[int, str] = {}
    for cls in classes:
        if cls.TYPE in by_code:
            raise ValueError(f"{cls.__name__} and {by_code[cls.TYPE]} share type code 0x{cls.TYPE:02x}")
        by_code[cls.TYPE] = cls.__name__
    members = [
        (re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper(), code) for code, name in sorted(by_code.items())
    ]
    return cast(type[enum.IntEnum], enum.IntEnum("MessageType", members, module=__name__))


MessageType = _type_codes(MESSAGE_CLASSES)
"""Wire type codes (the byte after a frame's length field), named after their messages."""

_PAYLOAD = {cls: cls._layout.payload for cls in MESSAGE_CLASSES if cls._layout.payload}
_COUNTS_PAYLOAD = frozenset(cls for cls in MESSAGE_CLASSES if hasattr(cls, "payload_size"))
"""Messages that carry several chunks and count their data themselves (`payload_size`)."""


def payload_size(msg: Message) -> int:
    """Chunk-data bytes ``msg`` carries (the rest of its frame is protocol overhead)."""
    field = _PAYLOAD.get(type(msg))
    if field is not None:
        return len(getattr(msg, field))
    if type(msg) in _COUNTS_PAYLOAD:
        return int(msg.payload_size())  # type: ignore[attr-defined]
    return 0
