"""The chunk: a 32-byte address and its data, of one of two kinds.

- A content chunk's data is ``span (8 bytes little-endian) || payload (0..4096)``, 8..4104 bytes,
  and its address is the BMT hash of it.
- A single-owner chunk's data is ``id || signature || span || payload``, 105..4201 bytes, and its
  address is ``keccak256(id || owner)``, the owner recovered from the signature (`chunks.soc`).

Nothing in the data says which kind it is: a chunk is valid if it is a valid content chunk *or* a
valid single-owner chunk for its address. Constructing a Chunk only checks the address's type and
length, so decoding untrusted bytes is cheap; ``verify()`` does the hashing (and, for a
single-owner chunk, the signature recovery) and is called explicitly where data crosses a trust
boundary (the store verifies every chunk it is given, retrieval every chunk it receives).
``checked()`` verifies and returns the chunk marked ``verified``, so a reader further on (the
joiner) need not hash it again: the flag is set only there, on a frozen chunk whose bytes cannot
change afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chunks.bmt import bmt_address
from chunks.invalid import InvalidChunk
from chunks.soc import MAX_SOC_DATA_SIZE, MIN_SOC_DATA_SIZE, InvalidSoc, Soc, validate_soc

__all__ = [
    "ADDRESS_SIZE",
    "CHUNK_SIZE",
    "MAX_CAC_DATA_SIZE",
    "MAX_DATA_SIZE",
    "SPAN_SIZE",
    "Chunk",
    "InvalidChunk",
]

CHUNK_SIZE = 4096
"""Largest payload of a chunk, in bytes."""
SPAN_SIZE = 8
"""Length of the little-endian span that prefixes the payload in a chunk's data."""
ADDRESS_SIZE = 32
MAX_CAC_DATA_SIZE = SPAN_SIZE + CHUNK_SIZE
"""Largest data of a content chunk: 4104 bytes."""
MAX_DATA_SIZE = MAX_SOC_DATA_SIZE
"""Largest data of any chunk, a single-owner chunk with a full payload: 4201 bytes."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """A chunk as stored and sent on the wire: a content chunk or a single-owner chunk."""

    address: bytes
    data: bytes
    verified: bool = field(default=False, compare=False, repr=False, kw_only=True)
    """True only on a chunk returned by `checked()`: its data was hashed against its address."""

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

    @classmethod
    def from_soc(cls, soc: Soc) -> Chunk:
        """The chunk of a single-owner chunk: at its address, with its full data."""
        return cls(soc.address, soc.data)

    @property
    def span(self) -> int:
        """Length of the data a content chunk stands for (the payload length for a leaf chunk).

        The first 8 bytes of the data: meaningful for a content chunk only.
        """
        if len(self.data) < SPAN_SIZE:
            raise self._too_short()
        return int.from_bytes(self.data[:SPAN_SIZE], "little")

    @property
    def payload(self) -> bytes:
        """The data after the span (of a content chunk)."""
        if len(self.data) < SPAN_SIZE:
            raise self._too_short()
        return self.data[SPAN_SIZE:]

    def verify(self) -> None:
        """Raise InvalidChunk unless the data is a valid content chunk or SOC for the address.

        Data of at most 4104 bytes is hashed as a content chunk first (the common case costs what
        it always did); only if that fails is it checked as a single-owner chunk. Longer data can
        only be a single-owner chunk (InvalidSoc, a subclass, if it is not one).
        """
        data = self.data
        size = len(data)
        if size > MAX_CAC_DATA_SIZE:
            validate_soc(self.address, data)
            return
        if size < SPAN_SIZE:
            raise self._too_short()
        actual = bmt_address(data[SPAN_SIZE:], int.from_bytes(data[:SPAN_SIZE], "little"))
        if actual == self.address:
            return
        problem = f"data hashes to {actual.hex()}, not {self.address.hex()}"
        if size < MIN_SOC_DATA_SIZE:
            raise InvalidChunk(self.address, problem)
        try:
            validate_soc(self.address, data)
        except InvalidSoc as exc:
            raise InvalidChunk(self.address, f"{problem}; as a single-owner chunk: {exc.problem}") from None

    def checked(self) -> Chunk:
        """This chunk, verified (InvalidChunk as `verify`), marked `verified` so that later
        checks of it (`swarm.files.joiner.check_chunk`) compare its address only."""
        if self.verified:
            return self
        self.verify()
        return Chunk(self.address, self.data, verified=True)

    def soc(self) -> Soc:
        """This chunk as a single-owner chunk, checked against its address; InvalidSoc if it is not."""
        return validate_soc(self.address, self.data)

    def _too_short(self) -> InvalidChunk:
        problem = f"data is {len(self.data)} bytes, shorter than the {SPAN_SIZE}-byte span"
        return InvalidChunk(self.address, problem)

    def __repr__(self) -> str:
        return f"Chunk(address={self.address.hex()}, {len(self.data)} bytes of data)"
