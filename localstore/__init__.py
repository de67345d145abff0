"""The chunk store of one node: slot file, per-bin pull index, address index, LevelDB state; the
reserve and pins. The chunk model it stores is the package `chunks`.

Only the errors and the statistics' value types are imported here; the store itself is
`localstore.store.LocalStore` (it brings plyvel and trio, which a module that only reads a
store's statistics or catches its errors does not need).
"""

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

__all__ = [
    "ChunkDamaged",
    "ChunkNotFound",
    "OverlayMismatch",
    "StoreClosed",
    "StoreCorrupt",
    "StoreError",
    "StoreLocked",
    "StoreStatistics",
    "UnsupportedStoreVersion",
]
