"""Equivocations: two signed contents at one single-owner chunk address, kept as evidence.

A single-owner chunk's address names its owner and id, not its content, so the owner can sign two
different contents under one id (a feed update rewritten, a message changed after the fact). The
store keeps the first one it got; when another valid one arrives, `EquivocationLog` keeps both
signed chunks: the pair proves that the owner signed both, and anyone can check it offline
(`chunks.soc.equivocation`). The log is persisted in the store's key-value state, bounded to
the most recent `MAX_KEPT` pairs; the count covers all of them.

Key layout: ``b"eq/" + u64be(sequence)`` -> ``address || u16be(len(first)) || first || second``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from syncer.interval_store import StateStore

__all__ = ["MAX_KEPT", "Equivocation", "EquivocationLog"]

MAX_KEPT = 256
_PREFIX = b"eq/"
_COUNT_KEY = b"eq-count"


@dataclass(frozen=True)
class Equivocation:
    """The first chunk data stored at `address`, a second one signed by the same owner, and when."""

    sequence: int
    address: bytes
    first: bytes
    second: bytes


class EquivocationLog:
    """The equivocations this node has seen (the last MAX_KEPT kept), persisted."""

    def __init__(self, state: StateStore, *, clock: Callable[[], float] = time.time) -> None:
        self._state = state
        raw = state.get_state(_COUNT_KEY)
        self.count = int.from_bytes(raw, "big") if raw else 0
        self.last_at: float | None = None
        self._clock = clock

    def record(self, address: bytes, first: bytes, second: bytes) -> Equivocation:
        sequence = self.count + 1
        value = address + len(first).to_bytes(2, "big") + first + second
        deletes = [_key(sequence - MAX_KEPT)] if sequence > MAX_KEPT else []
        self._state.write_state_batch(
            {_key(sequence): value, _COUNT_KEY: sequence.to_bytes(8, "big")}, deletes
        )
        self.count = sequence
        self.last_at = self._clock()
        return Equivocation(sequence, address, first, second)

    def recent(self, limit: int = MAX_KEPT) -> list[Equivocation]:
        """The kept pairs, newest first."""
        found = []
        for key, value in self._state.iter_state(_PREFIX):
            address, size = value[:32], int.from_bytes(value[32:34], "big")
            first, second = value[34 : 34 + size], value[34 + size :]
            found.append(Equivocation(int.from_bytes(key[len(_PREFIX) :], "big"), address, first, second))
        found.sort(key=lambda e: e.sequence, reverse=True)
        return found[:limit]


def _key(sequence: int) -> bytes:
    return _PREFIX + sequence.to_bytes(8, "big")
