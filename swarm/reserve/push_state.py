"""What the pusher keeps per pending chunk, and how the storers that signed are kept on disk (in
the state namespace under ``b"push/" + address``, so a restart goes on where it was).

A chunk of a single-receipt upload (``Swarm-Receipts: 1``) needs one storer's receipt instead of
two; its value ends with one byte more (``SINGLE``) after the 32-byte overlays of its storers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "PENDING_PREFIX",
    "SINGLE",
    "PendingChunk",
    "PendingState",
    "needed_from",
    "storers_from",
    "storers_value",
]

PENDING_PREFIX = b"push/"
SINGLE = b"\x01"
"""The last byte of a pending chunk's value when one receipt is enough."""


class PendingState(Protocol):
    """The state namespace, as the pusher uses it (``LocalStore`` implements it)."""

    def iter_state(self, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]: ...

    def write_state_batch(self, puts: Mapping[bytes, bytes], deletes: Iterable[bytes] = ()) -> None: ...


@dataclass
class PendingChunk:
    """An uploaded chunk waiting until it is durable."""

    tag: int
    attempts: int = 0
    error: str = ""
    storers: set[bytes] = field(default_factory=set)  # overlays that signed a receipt for it
    near: int | None = None  # the smallest radius a storer's receipt named (not kept on disk)
    needed: int = 2  # receipts it waits for: 2 (durable, the default) or 1 (``Swarm-Receipts: 1``)

    @property
    def value(self) -> bytes:
        """What is kept on disk: the storers, and whether one receipt is enough."""
        return storers_value(self.storers) + (SINGLE if self.needed == 1 else b"")


def storers_value(storers: set[bytes]) -> bytes:
    return b"".join(sorted(storers))


def storers_from(value: bytes) -> set[bytes]:
    return {value[i : i + 32] for i in range(0, len(value) - 31, 32)}


def needed_from(value: bytes) -> int:
    """Receipts a pending chunk kept as ``value`` waits for."""
    return 1 if len(value) % 32 == len(SINGLE) else 2
