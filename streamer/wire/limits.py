"""Sizes and limits that several sub-protocols share (docs/protocol.md); each sub-protocol's own
limits are in its module."""

from __future__ import annotations

from pot import MAX_PO

FRAME_HEADER_SIZE = 4
MAX_FRAME_SIZE = 65536
"""Largest allowed value of a frame's length field (type byte + body)."""

ADDRESS_SIZE = 32
PUBLIC_KEY_SIZE = 32
SIGNATURE_SIZE = 64
HASH_SIZE = 32
SPAN_SIZE = 8
MAX_PAYLOAD_SIZE = 4096
MIN_CHUNK_DATA_SIZE = SPAN_SIZE
SOC_HEADER_SIZE = 32 + 65
"""A single-owner chunk's id and signature, before its ``span || payload``."""
MAX_CHUNK_DATA_SIZE = SOC_HEADER_SIZE + SPAN_SIZE + MAX_PAYLOAD_SIZE
"""Largest chunk data on the wire: a single-owner chunk with a full payload (4201 bytes); a
content chunk's data is at most 4104."""
MAX_BIN = MAX_PO
BIN_COUNT = MAX_BIN + 1
MAX_HOST_SIZE = 255
MAX_REASON_SIZE = 1024
