"""Pins: files a user asked this node to keep, outside the reserve's accounting, never evicted.

A pin is a root reference and the addresses of every chunk of its file (the root, intermediate
and data chunks), kept in the store's state namespace as one value per root::

    b"pin/" + root  ->  addresses, 32 bytes each

A root is 32 bytes, or 64 for an encrypted file (its root's address, then its key): the chunks
it names are stored encrypted, by their 32-byte addresses.

Two pinned files may share chunks, so in memory each pinned address has a count of the pins
naming it; a chunk stays pinned until the last of them is removed. Loading the pins at open
costs one pass over these values: pinned files are few next to the store, and no per-chunk key
goes into LevelDB (its tables are kept small: localstore/storefiles.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol

from chunks.chunk import ADDRESS_SIZE

__all__ = ["PinState", "Pins"]

PREFIX = b"pin/"


class PinState(Protocol):
    """The state namespace, as pins use it (``LocalStore`` implements it)."""

    def get_state(self, key: bytes) -> bytes | None: ...

    def iter_state(self, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]: ...

    def write_state_batch(self, puts: Mapping[bytes, bytes], deletes: Iterable[bytes] = ()) -> None: ...


class Pins:
    """The pinned roots and the count of pins naming each chunk."""

    def __init__(self, state: PinState) -> None:
        self._state = state
        self._roots: dict[bytes, int] = {}  # root -> how many chunks its file has
        self._counts: Counter[bytes] = Counter()
        self.version = 0  # raised on every change (the reserve caches what it derives from pins)
        for key, value in state.iter_state(PREFIX):
            root = key[len(PREFIX) :]
            addresses = _split(value)
            self._roots[root] = len(addresses)
            self._counts.update(addresses)

    def pin(self, root: bytes, addresses: Iterable[bytes]) -> bool:
        """Pin ``root``'s file, whose chunks are ``addresses``; False if it was pinned already."""
        _check_root(root)
        if root in self._roots:
            return False
        unique = list(dict.fromkeys(addresses))
        for address in unique:
            _check(address)
        self._state.write_state_batch({PREFIX + root: b"".join(unique)})
        self._roots[root] = len(unique)
        self._counts.update(unique)
        self.version += 1
        return True

    def unpin(self, root: bytes) -> list[bytes] | None:
        """Remove the pin of ``root``; return the addresses no pin names any more (None: it was
        not pinned)."""
        _check_root(root)
        raw = self._state.get_state(PREFIX + root)
        if raw is None:
            return None
        self._state.write_state_batch({}, [PREFIX + root])
        del self._roots[root]
        released = []
        for address in _split(raw):
            self._counts[address] -= 1
            if self._counts[address] <= 0:
                del self._counts[address]
                released.append(address)
        self.version += 1
        return released

    def roots(self) -> dict[bytes, int]:
        """Every pinned root and how many chunks its file has."""
        return dict(self._roots)

    def __contains__(self, address: object) -> bool:
        return address in self._counts

    def __len__(self) -> int:
        """How many distinct chunks are pinned."""
        return len(self._counts)

    def addresses(self) -> Iterable[bytes]:
        return self._counts.keys()


def _check_root(root: bytes) -> None:
    if not isinstance(root, bytes) or len(root) not in (ADDRESS_SIZE, 2 * ADDRESS_SIZE):
        raise ValueError(f"a pinned root is {ADDRESS_SIZE} or {2 * ADDRESS_SIZE} bytes, got {root!r}")


def _check(address: bytes) -> None:
    if not isinstance(address, bytes) or len(address) != ADDRESS_SIZE:
        raise ValueError(f"an address is {ADDRESS_SIZE} bytes, got {address!r}")


def _split(raw: bytes) -> list[bytes]:
    return [raw[at : at + ADDRESS_SIZE] for at in range(0, len(raw), ADDRESS_SIZE)]
