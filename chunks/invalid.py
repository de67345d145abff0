"""InvalidChunk: chunk data that is malformed or does not belong to its address.

A module of its own so that both chunk kinds (content chunks in `chunks.chunk`, single-owner
chunks in `chunks.soc`) raise it, and their subclasses, without importing each other.
"""

from __future__ import annotations

__all__ = ["InvalidChunk"]


class InvalidChunk(ValueError):
    """A chunk whose data is malformed or does not hash to its address."""

    def __init__(self, address: bytes, problem: str) -> None:
        super().__init__(f"invalid chunk {address.hex()}: {problem}")
        self.address = address
        self.problem = problem
