"""Chunks, BMT hashing and the chunk store: slot file, per-bin pull index, address index, LevelDB state."""

from typing import TYPE_CHECKING

from localstore.bmt import KECCAK_BACKEND, bmt_address, keccak256
from localstore.chunk import CHUNK_SIZE, SPAN_SIZE, Chunk, InvalidChunk
from localstore.errors import (
    ChunkDamaged,
    ChunkNotFound,
    OverlayMismatch,
    StoreClosed,
    StoreCorrupt,
    StoreError,
    StoreLocked,
    UnsupportedStoreVersion,
)
from localstore.storestats import StoreStatistics

if TYPE_CHECKING:
    from localstore.store import LocalStore
    from localstore.storefiles import BINS, MAX_BIN

_FROM_STOREFILES = frozenset({"BINS", "MAX_BIN"})


def __getattr__(name: str) -> object:
    # The store (plyvel, trio) is imported on first use, so that a process that only hashes
    # chunks, a verifier worker, starts quicker and about 10 MB smaller.
    if name == "LocalStore":
        from localstore.store import LocalStore

        return LocalStore
    if name in _FROM_STOREFILES:
        from localstore import storefiles

        return getattr(storefiles, name)
    raise AttributeError(f"module 'localstore' has no attribute {name!r}")

__all__ = [
    "BINS",
    "CHUNK_SIZE",
    "KECCAK_BACKEND",
    "MAX_BIN",
    "SPAN_SIZE",
    "Chunk",
    "ChunkDamaged",
    "ChunkNotFound",
    "InvalidChunk",
    "LocalStore",
    "OverlayMismatch",
    "StoreClosed",
    "StoreCorrupt",
    "StoreError",
    "StoreLocked",
    "StoreStatistics",
    "UnsupportedStoreVersion",
    "bmt_address",
    "keccak256",
]
