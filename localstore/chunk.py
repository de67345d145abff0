"""The chunk: a 32-byte address and its data, ``span (8 bytes little-endian) || payload``.

Constructing a Chunk only checks the address's type and length, so decoding untrusted bytes is
cheap; ``verify()`` does the BMT check and is called explicitly where data crosses a trust
boundary (the store verifies every chunk it is given).
"""

from __future__ import annotations

from dataclasses import dataclass

from localstore.bmt import bmt_address

__all__ = ["ADDRESS_SIZE", "CHUNK_SIZE", "SPAN_SIZE", "Chunk", "InvalidChunk"]

CHUNK_SIZE = 4096
"""Largest payload of a chunk, in bytes."""
SPAN_SIZE = 8
"""Length of the little-endian span that prefixes the payload in a chunk's data."""
ADDRESS_SIZE = 32


class InvalidChunk(ValueError):
    """A chunk whose data is malformed or does not hash to its address."""

    def __init__(self, address: bytes, problem: str) -> None:
        super().__init__(f"invalid chunk {address.hex()}: {problem}")
        self.address = address
        self.problem = problem


@dataclass(frozen=True, slots=True)
class Chunk:
    """A chunk as stored and sent on the wire. Data is ``span || payload``."""

    address: bytes
    data: bytes

    def __post_init__(self) -> None:
        if not isinstance(self.address, bytes):
            raise TypeError(f"chunk address must be bytes, not {type(self.address).__name__}")
        if not isinstance(self.data, bytes):
            raise TypeError(f"chunk data must be bytes, not {type(self.data).__name__}")
        if len(self.address) != ADDRESS_SIZE:
            raise InvalidChunk(self.address, f"address is {len(self.address)} bytes, not {ADDRESS_SIZE}")

    @classmethod
    def from_payload(cls, payload: bytes, span: int | None = None) -> Chunk:
        """The chunk carrying ``payload``; ``span`` defaults to the payload length.

        Give a larger span for intermediate chunks (payload = child addresses, span = subtree
        size). Raises ValueError if the payload is over 4096 bytes or the span out of range.
        """
        payload = bytes(payload)
        if span is None:
            span = len(payload)
        address = bmt_address(payload, span)
        return cls(address, span.to_bytes(SPAN_SIZE, "little") + payload)

    @property
    def span(self) -> int:
        """Length of the data this chunk stands for (the payload length for a leaf chunk)."""
        if len(self.data) < SPAN_SIZE:
            raise self._too_short()
        return int.from_bytes(self.data[:SPAN_SIZE], "little")

    @property
    def payload(self) -> bytes:
        """The data after the span."""
        if len(self.data) < SPAN_SIZE:
            raise self._too_short()
        return self.data[SPAN_SIZE:]

    def verify(self) -> None:
        """Raise InvalidChunk unless the data is well-formed and hashes to the address."""
        data = self.data
        if len(data) < SPAN_SIZE:
            raise self._too_short()
        if len(data) - SPAN_SIZE > CHUNK_SIZE:
            raise InvalidChunk(
                self.address, f"payload is {len(data) - SPAN_SIZE} bytes, over the {CHUNK_SIZE}-byte limit"
            )
        actual = bmt_address(data[SPAN_SIZE:], int.from_bytes(data[:SPAN_SIZE], "little"))
        if actual != self.address:
            raise InvalidChunk(self.address, f"data hashes to {actual.hex()}, not {self.address.hex()}")

    def _too_short(self) -> InvalidChunk:
        problem = f"data is {len(self.data)} bytes, shorter than the {SPAN_SIZE}-byte span"
        return InvalidChunk(self.address, problem)

    def __repr__(self) -> str:
        return f"Chunk(address={self.address.hex()}, {len(self.data)} bytes of data)"
