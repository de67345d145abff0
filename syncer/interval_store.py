"""IntervalStore: synced intervals per (upstream peer, bin), and each upstream's store epoch.

Kept in a key-value state namespace (:class:`StateStore`, which the local store implements), so
syncing resumes after a restart without re-transfer. Pure: no I/O of its own; the state store is
handed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol

from pot import MAX_PO, proximity
from syncer.intervals import MAX_ID, Intervals

__all__ = ["CorruptState", "IntervalStore", "StateStore"]


class StateStore(Protocol):
    """A key-value state namespace (``localstore.store.LocalStore`` implements it)."""

    def get_state(self, key: bytes) -> bytes | None: ...

    def put_state(self, key: bytes, value: bytes) -> None: ...

    def delete_state(self, key: bytes) -> None: ...

    def iter_state(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Yield ``(key, value)`` for every key starting with ``prefix``, full keys, ascending."""
        ...

    def write_state_batch(self, puts: Mapping[bytes, bytes], deletes: Iterable[bytes] = ()) -> None:
        """Apply all puts and deletes atomically."""
        ...


class CorruptState(ValueError):
    """A stored interval set or epoch does not decode."""

    def __init__(self, peer: bytes, bin: int | None, reason: str) -> None:
        where = f"peer {peer.hex()}" + (f" bin {bin}" if bin is not None else "")
        super().__init__(f"corrupt sync state for {where}: {reason}")
        self.peer = peer
        self.bin = bin


class IntervalStore:
    """Synced intervals per (upstream peer, bin) and each upstream's store epoch.

    Key layout (the peer is length-prefixed so that no peer's keys are a prefix of another's)::

        b"iv/" + len(peer) (1 byte) + peer + bin (1 byte)  ->  Intervals.to_bytes()
        b"ep/" + len(peer) (1 byte) + peer                 ->  epoch, 8-byte big-endian

    If an upstream's epoch changes its store was wiped, its bin IDs restarted, and every interval
    kept for it is void: :meth:`check_epoch` drops them.
    """

    _IV = b"iv/"
    _EP = b"ep/"

    def __init__(self, store: StateStore) -> None:
        self._store = store

    def get(self, peer: bytes, bin: int) -> Intervals:
        """The stored intervals of ``peer``'s ``bin``, or a fresh empty ``Intervals(1)``."""
        raw = self._store.get_state(self._iv_key(peer, bin))
        if raw is None:
            return Intervals(1)
        return _decode(peer, bin, raw)

    def put(self, peer: bytes, bin: int, intervals: Intervals) -> None:
        """Store ``intervals`` for ``peer``'s ``bin``, replacing what was there."""
        self._store.put_state(self._iv_key(peer, bin), intervals.to_bytes())

    def bins(self, peer: bytes) -> dict[int, Intervals]:
        """Every stored bin of ``peer``."""
        prefix = self._IV + _peer_part(peer)
        result: dict[int, Intervals] = {}
        for key, raw in self._store.iter_state(prefix):
            rest = key[len(prefix) :]
            if len(rest) != 1 or rest[0] > MAX_PO:
                raise CorruptState(peer, None, f"unexpected interval key {key.hex()}")
            result[rest[0]] = _decode(peer, rest[0], raw)
        return result

    def peers(self) -> list[bytes]:
        """Every peer with stored intervals or a recorded epoch, ascending."""
        found: set[bytes] = set()
        for prefix, suffix_len in ((self._IV, 1), (self._EP, 0)):
            for key, _ in self._store.iter_state(prefix):
                # Keys not in the documented layout are skipped here; bins() reports them.
                size = key[len(prefix)] if len(key) > len(prefix) else 0
                if size and len(key) == len(prefix) + 1 + size + suffix_len:
                    found.add(key[len(prefix) + 1 : len(prefix) + 1 + size])
        return sorted(found)

    def reset(self, peer: bytes) -> None:
        """Drop every bin of ``peer`` and its recorded epoch, in one atomic batch."""
        self._store.write_state_batch({}, [*self._iv_keys(peer), self._ep_key(peer)])

    def epoch(self, peer: bytes) -> int | None:
        """The recorded store epoch of upstream ``peer``, None if none was recorded."""
        raw = self._store.get_state(self._ep_key(peer))
        if raw is None:
            return None
        if len(raw) != 8:
            raise CorruptState(peer, None, f"stored epoch is {len(raw)} bytes, expected 8")
        return int.from_bytes(raw, "big")

    def set_epoch(self, peer: bytes, epoch: int) -> None:
        """Record ``peer``'s store epoch (keeping its intervals)."""
        self._store.put_state(self._ep_key(peer), _epoch_bytes(epoch))

    def check_epoch(self, peer: bytes, epoch: int) -> bool:
        """Record ``peer``'s epoch; True if it differs from the one recorded before.

        On a change every interval of ``peer`` is dropped and the new epoch recorded, in one
        atomic batch, so a crash cannot leave old intervals under the new epoch.
        """
        value = _epoch_bytes(epoch)
        recorded = self.epoch(peer)
        if recorded == epoch:
            return False
        if recorded is None:
            self._store.put_state(self._ep_key(peer), value)
            return False
        self._store.write_state_batch({self._ep_key(peer): value}, self._iv_keys(peer))
        return True

    def forget_lost(self, own: bytes, lost: Iterable[tuple[int, bytes | None]]) -> int:
        """This node (overlay ``own``) lost chunks at a power cut, given as (bin in its own store,
        address if known): clear every peer's intervals of the bins they may have been synced
        in, so they are offered, and wanted, again. Returns how many (peer, bin) were cleared."""
        lost = list(lost)
        cleared = 0
        for peer in self.peers():
            bins: set[int] = set()
            for bin, address in lost:
                bins |= _upstream_bins(own, peer, bin, address)
            for bin, intervals in self.bins(peer).items():
                if bin in bins and intervals.ranges:
                    self.put(peer, bin, Intervals(1))
                    cleared += 1
        return cleared

    def _iv_keys(self, peer: bytes) -> list[bytes]:
        return [key for key, _ in self._store.iter_state(self._IV + _peer_part(peer))]

    @classmethod
    def _iv_key(cls, peer: bytes, bin: int) -> bytes:
        if not isinstance(bin, int) or not 0 <= bin <= MAX_PO:
            raise ValueError(f"bin {bin!r} is outside 0..{MAX_PO}")
        return cls._IV + _peer_part(peer) + bytes([bin])

    @classmethod
    def _ep_key(cls, peer: bytes) -> bytes:
        return cls._EP + _peer_part(peer)


def _upstream_bins(own: bytes, peer: bytes, bin: int, address: bytes | None) -> set[int]:
    """The bins of ``peer``'s pull index a chunk in our ``bin`` can be in (exactly one if its
    address is known). It shares ``bin`` bits with us, ``peer`` shares ``p`` bits: if ``p >
    bin`` the chunk parts from the peer where it parts from us; if ``p < bin`` where the peer
    parts from us; if equal both part from us at once, and it is closer to the peer than that."""
    if address is not None:
        return {min(proximity(address, peer), MAX_PO)}
    p = min(proximity(own, peer), MAX_PO)
    if p != bin:
        return {min(p, bin)}
    return set(range(bin, MAX_PO + 1))


def _peer_part(peer: bytes) -> bytes:
    if not isinstance(peer, bytes | bytearray) or not 1 <= len(peer) <= 255:
        raise ValueError(f"peer must be 1..255 bytes, got {peer!r}")
    return bytes([len(peer)]) + bytes(peer)


def _epoch_bytes(epoch: int) -> bytes:
    if not 0 <= epoch <= MAX_ID:
        raise ValueError(f"epoch {epoch} is outside 0..{MAX_ID}")
    return epoch.to_bytes(8, "big")


def _decode(peer: bytes, bin: int, raw: bytes) -> Intervals:
    try:
        return Intervals.from_bytes(raw)
    except ValueError as exc:
        raise CorruptState(peer, bin, str(exc)) from exc
