"""Errors of the chunk store, each raised where its cause is known."""

from __future__ import annotations

__all__ = [
    "MOVE_AWAY",
    "ChunkDamaged",
    "ChunkNotFound",
    "OverlayMismatch",
    "StoreClosed",
    "StoreCorrupt",
    "StoreError",
    "StoreLocked",
    "UnsupportedStoreVersion",
]


MOVE_AWAY = (
    "move the directory away and the node starts an empty store and syncs again"
    "; its identity is kept outside the store"
)
"""What to do about a store that cannot be recovered; ends the one-line refusals."""


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
            hint = f" (an older format: {MOVE_AWAY})"
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
    """A chunk is indexed but its slot in the chunk file holds something else, or damaged bytes.

    What a power cut can leave (the index reached the disk, the slot did not), bit rot, or an
    edit of the file. The store drops the chunk (it reads as missing from then on, to be
    fetched or synced again); the rest of the store is unaffected.
    """

    def __init__(self, path: str, address: bytes, slot: int, problem: str) -> None:
        super().__init__(
            f"store {path}: slot {slot} of the chunk file should hold chunk {address.hex()} but {problem}"
        )
        self.path = path
        self.address = address
        self.slot = slot
        self.problem = problem


class StoreClosed(StoreError):
    """An operation was attempted on a closed store (or a wait was cut short by close)."""


class ChunkNotFound(KeyError):
    """No chunk with this address is stored."""

    def __init__(self, address: bytes) -> None:
        super().__init__(address)
        self.address = address

    def __str__(self) -> str:
        return f"chunk {self.address.hex()} not found"
