"""What recovery at open dropped, kept in the LevelDB until the node has reopened sync for it.

A power cut can keep the LevelDB batch that recorded a synced interval and lose the tail of the
files holding the chunks it covered. Recovery drops those chunks (localstore/recovery.py), but
the node's peers are not asked for them again while its intervals say they were synced: one
chunk of 600 stayed gone for good. So the store records what it dropped, the chunk's bin (of
this store) and its address where the pull index still names it, durably and before anything
else happens; the node resets the intervals that may cover them (syncer/interval_store.py) and
only then clears the record, so a crash in between loses nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

import plyvel

__all__ = ["META_LOST", "LostChunk", "clear_lost", "read_lost", "record_lost"]

META_LOST = b"m" + b"lost"
_ITEM = 34  # bin u8, address known u8, address (zeros if not)

#: A chunk recovery dropped: its bin in this store, and its address if the pull index named it.
LostChunk = tuple[int, bytes | None]


def record_lost(db: plyvel.DB, lost: Iterable[LostChunk]) -> None:
    """Add ``lost`` to the record (after what an earlier open left uncleared), durably."""
    items = b"".join(bytes([bin, address is not None]) + (address or bytes(32)) for bin, address in lost)
    if items:
        db.put(META_LOST, (db.get(META_LOST) or b"") + items, sync=True)


def read_lost(db: plyvel.DB) -> list[LostChunk]:
    raw = db.get(META_LOST) or b""
    return [
        (raw[i], raw[i + 2 : i + _ITEM] if raw[i + 1] else None)
        for i in range(0, len(raw) - len(raw) % _ITEM, _ITEM)
    ]


def clear_lost(db: plyvel.DB) -> None:
    db.delete(META_LOST, sync=True)
