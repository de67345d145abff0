"""The store's key-value *state namespace*: small values other parts keep beside the chunks.

A base of LocalStore (localstore/store.py): the state lives in the store's LevelDB under the
``KEY_STATE`` prefix (localstore/storefiles.py), so that a node's small records (pins, feeds,
sync progress) share the store's directory and its atomic batches, apart from the chunk code.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import plyvel

from localstore.storefiles import KEY_STATE


class StateNamespace:
    """get/put/delete/iterate state keys, and write several atomically."""

    def _live(self) -> plyvel.DB:
        raise NotImplementedError

    def get_state(self, key: bytes) -> bytes | None:
        """The state value stored under ``key``, or None."""
        value: bytes | None = self._live().get(KEY_STATE + key)
        return value

    def put_state(self, key: bytes, value: bytes) -> None:
        self._live().put(KEY_STATE + key, value)

    def delete_state(self, key: bytes) -> None:
        self._live().delete(KEY_STATE + key)

    def iter_state(self, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        """Yield ``(key, value)`` for state keys starting with ``prefix``, in key order."""
        entries = self._live().iterator(prefix=KEY_STATE + prefix)
        return ((key[1:], value) for key, value in entries)

    def write_state_batch(self, puts: Mapping[bytes, bytes], deletes: Iterable[bytes] = ()) -> None:
        """Apply several state puts and deletes atomically. A key may not be in both."""
        deletes = list(deletes)
        both = set(deletes).intersection(puts)
        if both:
            raise ValueError(f"state keys both put and deleted: {sorted(k.hex() for k in both)}")
        batch = self._live().write_batch()
        for key in deletes:
            batch.delete(KEY_STATE + key)
        for key, value in puts.items():
            batch.put(KEY_STATE + key, value)
        batch.write()
