"""StoreStatistics: a snapshot of the store's counters, as LocalStore.statistics() gives it.

A plain value apart from the store (no plyvel, no trio), so that /metrics and the tests can
name and compare it without opening a store.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StoreStatistics:
    """A snapshot of the store's counters."""

    chunks: int
    cursors: tuple[int, ...]
    epoch: int
    dropped: int = 0
    """Damaged chunks dropped since the store was opened (by opening's recovery and by reads)."""
    evicted: int = 0
    """Chunks evicted since the store was opened."""
    slots: int = 0
    """The chunk file's length in slots."""
    free_slots: int = 0
    """Slots given back by evicted chunks and not taken again yet."""
