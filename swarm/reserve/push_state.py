"""What the pusher keeps per pending chunk, and how the storers that signed are kept on disk (in
the state namespace under ``b"push/" + address``, so a restart goes on where it was)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["PENDING_PREFIX", "PendingChunk", "PendingState", "storers_from", "storers_value"]

PENDING_PREFIX = b"push/"


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


def storers_value(storers: set[bytes]) -> bytes:
    return b"".join(sorted(storers))


def storers_from(value: bytes) -> set[bytes]:
    return {value[i : i + 32] for i in range(0, len(value) - 31, 32)}
