"""ChunkIntake: the one door through which chunks enter the local store.

Synced deliveries, chunks fetched again by a direct request and uploads all come in here:
verified (inline, or in batches on the verifier's worker processes), stored, and reported to the
transfers, so that every batch waiting for a chunk learns that it arrived, whoever brought it.

A chunk at an address already stored keeps the stored one. If both are single-owner chunks of
one owner wrapping different content, that is an equivocation: the pair is kept as evidence
(`syncer.evidence`), counted and logged, never silently dropped and never overwritten.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from chunks import Chunk
from chunks.soc import equivocation
from localstore import ChunkDamaged, ChunkNotFound
from syncer.evidence import EquivocationLog
from syncer.verifier import ChunkVerifier, Verdicts

log = logging.getLogger(__name__)

__all__ = ["ChunkIntake", "ChunkSink"]


class ChunkSink(Protocol):
    """The store, as the intake uses it."""

    def put_many(self, chunks: list[Chunk], *, verified: bool = False) -> int: ...

    def has(self, address: bytes) -> bool: ...

    def get(self, address: bytes) -> Chunk: ...

    def cursors(self) -> list[int]: ...


class ChunkIntake:
    """Verify, store, tell the transfers."""

    def __init__(
        self,
        store: ChunkSink,
        *,
        verifier: ChunkVerifier | None = None,
        stored: Callable[[Iterable[bytes]], None] = lambda addresses: None,
        evidence: EquivocationLog | None = None,
        within_radius: Callable[[bytes], bool] = lambda address: True,
    ) -> None:
        self._store = store
        self.verifier = verifier or ChunkVerifier()  # without workers: verifies inline
        self._stored = stored
        self.evidence = evidence
        self._within_radius = within_radius

    def has(self, address: bytes) -> bool:
        return self._store.has(address)

    def cursors(self) -> list[int]:
        """The store's highest bin ID of each bin: what a store of chunks moves tells the bin IDs
        they got (syncer/given.py)."""
        return self._store.cursors()

    def unwanted(self, address: bytes) -> bool:
        """Not to be pulled: stored already, or outside the storage radius (the reserve would
        evict it again: localstore/reserve.py)."""
        return not self._within_radius(address) or self._store.has(address)

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
        if new < len(chunks) and self.evidence is not None:
            self._check_repeats(chunks)
        self._stored(chunk.address for chunk in chunks)
        return new

    def _check_repeats(self, chunks: list[Chunk]) -> None:
        """Chunks that were stored already: same data, or an equivocation to keep."""
        assert self.evidence is not None
        for chunk in chunks:
            try:
                stored = self._store.get(chunk.address).data
            except (ChunkNotFound, ChunkDamaged):
                continue
            if stored == chunk.data:
                continue
            pair = equivocation(chunk.address, stored, chunk.data)
            if pair is not None:
                record = self.evidence.record(chunk.address, stored, chunk.data)
                log.warning(
                    "equivocation #%d: owner %s signed two contents at %s; kept the first, "
                    "both kept as evidence",
                    record.sequence,
                    pair[0].owner.hex(),
                    chunk.address.hex(),
                )

    async def verify(self, chunks: list[Chunk]) -> Verdicts:
        """Start verifying a batch (on a worker if there is one); await `wait()` for the verdicts."""
        return await self.verifier.submit(chunks)
