"""Chunks, BMT hashing and the chunk store: slot file, per-bin pull index, address index, LevelDB state."""

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
from localstore.store import BINS, MAX_BIN, LocalStore, StoreStatistics

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
