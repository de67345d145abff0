"""ProofStore: what provable streams keep across restarts, per peer and bin, in the state namespace.

As a downstream, per upstream and bin: the latest state of its log this node accepted (so the
next connection proves its states against it), and the bin IDs taken over from it (what this
node's receipts cover). As an upstream, per downstream and bin: the latest receipt it sent for
each run it took over (syncer/receipts.py: one, unless it never got some chunks), with its
public key (so the receipt can be checked anywhere). And the pairs of states of one size
with different roots an upstream signed (equivocations). Once a bin is synced each of these is one
value per peer and bin: the storage does not grow with the chunks, only with the peers.

Key layout (``peer`` length-prefixed as in syncer/interval_store.py)::

    b"ps/" + len(peer) + peer + bin   ->  accepted state: bin, epoch, size, root, signature (113)
    b"pt/" + len(peer) + peer + bin   ->  epoch (8) || taken-over Intervals.to_bytes()
    b"pr/" + len(peer) + peer + bin + start (8)  ->  public key (32) || receipt: bin, epoch, start,
                                                   end, root, signature
    b"pe/" + sequence (8)             ->  upstream (32) || public key (32) || two states (113 each)

Pure: the state store is handed in (the local store implements it).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from streamer.messages import Receipt, SignedState
from syncer.interval_store import StateStore
from syncer.intervals import Intervals

__all__ = ["KeptReceipt", "ProofStore", "StateEquivocation"]

_STATE = struct.Struct(">BQQ32s64s")
_RECEIPT = struct.Struct(">BQQQ32s64s")
MAX_EVIDENCE = 256
_COUNT_KEY = b"pe-count"


@dataclass(frozen=True)
class KeptReceipt:
    downstream: bytes
    public_key: bytes
    receipt: Receipt


@dataclass(frozen=True)
class StateEquivocation:
    """Two states of one bin and size of ``upstream``'s log with different roots, both signed."""

    sequence: int
    upstream: bytes
    public_key: bytes
    first: SignedState
    second: SignedState


def encode_state(s: SignedState) -> bytes:
    return _STATE.pack(s.bin, s.epoch, s.size, s.root, s.signature)


def decode_state(raw: bytes) -> SignedState:
    return SignedState(*_STATE.unpack(raw))


class ProofStore:
    def __init__(self, state: StateStore) -> None:
        self._state = state
        raw = state.get_state(_COUNT_KEY)
        self.equivocations = int.from_bytes(raw, "big") if raw else 0

    # -- as a downstream ----------------------------------------------------------------------

    def accepted(self, upstream: bytes, epoch: int) -> dict[int, SignedState]:
        """The latest accepted state of each bin of ``upstream``'s log in ``epoch``."""
        found = {}
        for _, raw in self._state.iter_state(b"ps/" + _peer(upstream)):
            state = decode_state(raw)
            if state.epoch == epoch:
                found[state.bin] = state
        return found

    def accept(self, upstream: bytes, state: SignedState) -> None:
        self._state.put_state(b"ps/" + _peer(upstream) + bytes((state.bin,)), encode_state(state))

    def taken(self, upstream: bytes, epoch: int, bin: int) -> Intervals:
        """The bin IDs taken over from ``upstream``'s bin in ``epoch`` (empty for another epoch)."""
        raw = self._state.get_state(b"pt/" + _peer(upstream) + bytes((bin,)))
        if raw is None or int.from_bytes(raw[:8], "big") != epoch:
            return Intervals(1)
        return Intervals.from_bytes(raw[8:])

    def put_taken(self, upstream: bytes, epoch: int, bin: int, taken: Intervals) -> None:
        key = b"pt/" + _peer(upstream) + bytes((bin,))
        self._state.put_state(key, epoch.to_bytes(8, "big") + taken.to_bytes())

    def record_equivocation(
        self, upstream: bytes, public_key: bytes, first: SignedState, second: SignedState
    ) -> StateEquivocation:
        sequence = self.equivocations + 1
        value = upstream + public_key + encode_state(first) + encode_state(second)
        deletes = [_evidence_key(sequence - MAX_EVIDENCE)] if sequence > MAX_EVIDENCE else []
        self._state.write_state_batch(
            {_evidence_key(sequence): value, _COUNT_KEY: sequence.to_bytes(8, "big")}, deletes
        )
        self.equivocations = sequence
        return StateEquivocation(sequence, upstream, public_key, first, second)

    def recent_equivocations(self) -> list[StateEquivocation]:
        """The kept pairs (the last MAX_EVIDENCE), newest first."""
        found = []
        for key, value in self._state.iter_state(b"pe/"):
            first = decode_state(value[64 : 64 + _STATE.size])
            second = decode_state(value[64 + _STATE.size :])
            sequence = int.from_bytes(key[3:], "big")
            found.append(StateEquivocation(sequence, value[:32], value[32:64], first, second))
        return sorted(found, key=lambda e: e.sequence, reverse=True)

    # -- as an upstream -----------------------------------------------------------------------

    def keep_receipt(
        self, downstream: bytes, public_key: bytes, receipt: Receipt, drop: Iterable[Receipt] = ()
    ) -> None:
        """Keep ``receipt`` and forget the receipts ``drop`` of the same downstream, in one write."""
        r = receipt
        raw = public_key + _RECEIPT.pack(r.bin, r.epoch, r.start, r.end, r.root, r.signature)
        prefix = b"pr/" + _peer(downstream)
        key = prefix + bytes((r.bin,)) + r.start.to_bytes(8, "big")
        deletes = {prefix + bytes((d.bin,)) + d.start.to_bytes(8, "big") for d in drop}
        deletes.add(prefix + bytes((r.bin,)))  # one receipt per bin, before runs were kept apart
        deletes.discard(key)  # a run's new receipt replaces its last under the same key
        self._state.write_state_batch({key: raw}, deletes)

    def drop_receipts(self, downstream: bytes, drop: Iterable[Receipt]) -> None:
        prefix = b"pr/" + _peer(downstream)
        self._state.write_state_batch(
            {}, [prefix + bytes((d.bin,)) + d.start.to_bytes(8, "big") for d in drop]
        )

    def receipts_of(self, downstream: bytes, bin: int) -> list[KeptReceipt]:
        """The receipts kept of ``downstream`` for ``bin``, one per run it took over, by start."""
        return self._receipts(b"pr/" + _peer(downstream) + bytes((bin,)))

    def receipts(self) -> list[KeptReceipt]:
        """Every kept receipt, by downstream, bin and start."""
        return self._receipts(b"pr/")

    def _receipts(self, prefix: bytes) -> list[KeptReceipt]:
        found = []
        for key, raw in self._state.iter_state(prefix):
            downstream = key[4 : 4 + key[3]]
            found.append(KeptReceipt(downstream, raw[:32], Receipt(*_RECEIPT.unpack(raw[32:]))))
        return found


def _peer(peer: bytes) -> bytes:
    return bytes((len(peer),)) + peer


def _evidence_key(sequence: int) -> bytes:
    return b"pe/" + sequence.to_bytes(8, "big")
