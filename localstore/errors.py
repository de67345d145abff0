"""Errors of the chunk store, each raised where its cause is known."""

from __future__ import annotations

__all__ = [
    "ChunkDamaged",
    "ChunkNotFound",
    "OverlayMismatch",
    "StoreClosed",
    "StoreCorrupt",
    "StoreError",
    "StoreLocked",
    "UnsupportedStoreVersion",
]


class StoreError(Exception):
    """Base class of the store's own failures (not of InvalidChunk or ChunkNotFound)."""


class StoreLocked(StoreError):
    """The store directory is already open, by another process or another LocalStore."""

    def __init__(self, path: str, detail: str = "") -> None:
        suffix = f" ({detail})" if detail else ""
        super().__init__(f"store {path} is already open by another process or LocalStore{suffix}")
        self.path = path


class StoreCorrupt(StoreError):
    """The directory is not a usable store: corrupt, foreign, or not a LevelDB at all."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"store {path} is unusable: {problem}")
        self.path = path
        self.problem = problem


class UnsupportedStoreVersion(StoreError):
    """The store was written in a format version this code does not know."""

    def __init__(self, path: str, found: object, supported: int) -> None:
        hint = ""
        if isinstance(found, int) and found < supported:
            hint = (
                " (an older format: move the directory away and the node starts an empty store"
                " and syncs again; its identity is kept outside the store)"
            )
        super().__init__(
            f"store {path} has format version {found!r}; this code reads version {supported} only{hint}"
        )
        self.path = path
        self.found = found


class OverlayMismatch(StoreError):
    """The store belongs to a node with another overlay address."""

    def __init__(self, path: str, stored: bytes, given: bytes) -> None:
        super().__init__(
            f"store {path} belongs to the node with overlay {stored.hex()}, not {given.hex()}; "
            "use that node's overlay or another directory"
        )
        self.path = path
        self.stored = stored
        self.given = given


class ChunkDamaged(StoreError):
    """A chunk is indexed but its slot in the chunk file holds something else.

    What a power cut can leave (the index reached the disk, the slot did not) or an edit of the
    file. The chunk is treated as missing by its readers; the rest of the store is unaffected.
    """

    def __init__(self, path: str, address: bytes, slot: int, found: bytes) -> None:
        super().__init__(
            f"store {path}: slot {slot} of the chunk file should hold chunk {address.hex()} "
            f"but holds {found.hex() or 'nothing'}"
        )
        self.path = path
        self.address = address
        self.slot = slot


class StoreClosed(StoreError):
    """An operation was attempted on a closed store (or a wait was cut short by close)."""


class ChunkNotFound(KeyError):
    """No chunk with this address is stored."""

    def __init__(self, address: bytes) -> None:
        super().__init__(address)
        self.address = address

    def __str__(self) -> str:
        return f"chunk {self.address.hex()} not found"
