"""A slow, obviously correct BMT hasher written straight from the definition.

It exists to be compared with the production hasher in bmt.py (tests) and to measure what the
naive approach costs (benches/bmt.py), so it deliberately uses pycryptodome's public keccak API
directly and does every step the long way: pad, hash all 64 leaves, hash pairs level by level.
"""

from __future__ import annotations

from Crypto.Hash import keccak

__all__ = ["reference_bmt_address", "reference_keccak256"]

SEGMENT_SIZE = 32
SECTION_SIZE = 2 * SEGMENT_SIZE
CHUNK_PAYLOAD_SIZE = 4096


def reference_keccak256(data: bytes) -> bytes:
    """Legacy Keccak-256 (Ethereum's) through pycryptodome's documented constructor."""
    return keccak.new(digest_bits=256, data=data).digest()


def reference_bmt_address(payload: bytes, span: int | None = None) -> bytes:
    """BMT address of ``payload``: Keccak256(span as 8 bytes little-endian || BMT root)."""
    if len(payload) > CHUNK_PAYLOAD_SIZE:
        raise ValueError(f"payload is {len(payload)} bytes, over {CHUNK_PAYLOAD_SIZE}")
    if span is None:
        span = len(payload)
    if span < 0 or span >= 2**64:
        raise ValueError(f"span {span} is outside 0..2**64-1")
    padded = bytes(payload) + bytes(CHUNK_PAYLOAD_SIZE - len(payload))
    nodes = [
        reference_keccak256(padded[offset : offset + SECTION_SIZE])
        for offset in range(0, CHUNK_PAYLOAD_SIZE, SECTION_SIZE)
    ]
    while len(nodes) > 1:
        nodes = [reference_keccak256(nodes[i] + nodes[i + 1]) for i in range(0, len(nodes), 2)]
    return reference_keccak256(span.to_bytes(8, "little") + nodes[0])
