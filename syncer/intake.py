"""ChunkIntake: the one door through which chunks enter the local store.

Synced deliveries, chunks fetched again by a direct request and uploads all come in here:
verified (inline, or in batches on the verifier's worker processes), stored, and reported to the
transfers, so that every batch waiting for a chunk learns that it arrived, whoever brought it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from localstore import Chunk
from syncer.verifier import ChunkVerifier, Verdicts

__all__ = ["ChunkIntake", "ChunkSink"]


class ChunkSink(Protocol):
    """The store, as the intake uses it."""

    def put_many(self, chunks: list[Chunk], *, verified: bool = False) -> int: ...

    def has(self, address: bytes) -> bool: ...


class ChunkIntake:
    """Verify, store, tell the transfers."""

    def __init__(
        self,
        store: ChunkSink,
        *,
        verifier: ChunkVerifier | None = None,
        stored: Callable[[Iterable[bytes]], None] = lambda addresses: None,
    ) -> None:
        self._store = store
        self.verifier = verifier or ChunkVerifier()  # without workers: verifies inline
        self._stored = stored

    def has(self, address: bytes) -> bool:
        return self._store.has(address)

    def store(self, chunk: Chunk) -> bool:
        """Verify and store one chunk; True if it was new. `InvalidChunk` stores nothing."""
        return self.store_many([chunk]) == 1

    def store_many(self, chunks: list[Chunk], *, verified: bool = False) -> int:
        """Store chunks with one write; returns how many were new.

        ``verified=True``: their addresses were computed from their data here (uploads) or checked
        by `verify` already, so they are not hashed again. Otherwise every chunk is verified and
        an invalid one raises `InvalidChunk` before anything is stored.
        """
        new = self._store.put_many(chunks, verified=verified)
        self._stored(chunk.address for chunk in chunks)
        return new

    async def verify(self, chunks: list[Chunk]) -> Verdicts:
        """Start verifying a batch (on a worker if there is one); await `wait()` for the verdicts."""
        return await self.verifier.submit(chunks)
