"""The node's postage batches, kept in its LevelDB state so that they survive a restart.

The thin shell around `swarm.postage.batches`: it makes batch ids, finds a batch's `Issuer`, and
writes what each change did (the batch record, the buckets touched, the new stamp items) in one
atomic state batch. Keys, under the store's state namespace:

- ``postage/b/{id}``: the batch as JSON (depth, amount, flags, label, utilization);
- ``postage/k/{id}{bucket u32be}``: stamps issued in that bucket (u32be);
- ``postage/s/{id}{address}``: the stamp index that chunk got (u32be).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol

from chunks import keccak256
from chunks.ethkey import Secp256k1Key
from swarm.postage.batches import Batch, Issuer, Stamp
from swarm.postage.envelope import Envelope, sign_stamp

__all__ = ["BatchBook", "NoSigner", "StateStore", "UnknownBatch"]

_BATCH, _BUCKET, _STAMP = b"postage/b/", b"postage/k/", b"postage/s/"


class StateStore(Protocol):
    """What the book needs of the node's store (``localstore.LocalStore`` has it)."""

    def iter_state(self, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]: ...

    def write_state_batch(self, puts: Mapping[bytes, bytes], deletes: Iterable[bytes] = ()) -> None: ...


class UnknownBatch(LookupError):
    """No batch of this node has that id."""

    def __init__(self, batch_id: bytes) -> None:
        super().__init__(f"batch {batch_id.hex()} not found")
        self.batch_id = batch_id


class NoSigner(LookupError):
    """The book was given no key, so it cannot sign stamps."""


class BatchBook:
    """Every batch this node made, with its accounting; loaded from ``state`` at start. ``signer``
    (the owner's key) signs stamps (`envelope`)."""

    def __init__(self, state: StateStore, owner: bytes, *, signer: Secp256k1Key | None = None) -> None:
        if signer is not None and signer.owner != owner:
            raise ValueError("the signer's owner address is not the book's owner")
        self._state = state
        self.owner = owner
        self._signer = signer
        self._issuers: dict[bytes, Issuer] = _load(state)

    def create(self, amount: int, depth: int, *, immutable: bool = True, label: str = "") -> Batch:
        """A new batch owned by this node (Bee's id: keccak256(owner || nonce))."""
        batch_id = keccak256(self.owner + secrets.token_bytes(32))
        block = max((i.batch.block_number for i in self._issuers.values()), default=0) + 1
        issuer = Issuer(Batch(batch_id, self.owner, depth, amount, immutable, label, block))
        self._issuers[batch_id] = issuer
        self._save(issuer)
        return issuer.batch

    def issuers(self) -> list[Issuer]:
        """Every batch, oldest first."""
        return sorted(self._issuers.values(), key=lambda i: i.batch.block_number)

    def issuer(self, batch_id: bytes) -> Issuer:
        try:
            return self._issuers[batch_id]
        except KeyError:
            raise UnknownBatch(batch_id) from None

    def top_up(self, batch_id: bytes, amount: int) -> Batch:
        issuer = self.issuer(batch_id)
        issuer.top_up(amount)
        self._save(issuer)
        return issuer.batch

    def dilute(self, batch_id: bytes, depth: int) -> Batch:
        issuer = self.issuer(batch_id)
        issuer.dilute(depth)
        self._save(issuer)
        return issuer.batch

    def stamp(self, batch_id: bytes, addresses: list[bytes]) -> list[Stamp]:
        """Stamp chunks with a batch (all or none; `BatchFull` if an immutable one cannot)."""
        issuer = self.issuer(batch_id)
        stamps = issuer.stamp_all(addresses)
        fresh = [s for s in stamps if s.new]
        if fresh:
            puts = {_STAMP + batch_id + s.address: s.index.to_bytes(4, "big") for s in fresh}
            for bucket in {s.bucket for s in fresh}:
                count = issuer.buckets[bucket].to_bytes(4, "big")
                puts[_BUCKET + batch_id + bucket.to_bytes(4, "big")] = count
            self._save(issuer, puts)
        return stamps

    def envelope(self, batch_id: bytes, address: bytes, timestamp_ns: int) -> Envelope:
        """Stamp one chunk (`stamp`: its first index if stamped before) and sign the stamp, as
        Bee's ``POST /envelope`` does; `NoSigner` without a key."""
        if self._signer is None:
            raise NoSigner("this batch book has no key to sign stamps with")
        (stamp,) = self.stamp(batch_id, [address])
        return sign_stamp(self._signer, batch_id, stamp, timestamp_ns)

    def _save(self, issuer: Issuer, puts: dict[bytes, bytes] | None = None) -> None:
        b = issuer.batch
        record = {
            "owner": b.owner.hex(),
            "depth": b.depth,
            "amount": str(b.amount),
            "immutable": b.immutable,
            "label": b.label,
            "block": b.block_number,
            "bucket_depth": b.bucket_depth,
            "utilization": issuer.utilization,
        }
        self._state.write_state_batch({**(puts or {}), _BATCH + b.id: json.dumps(record).encode()})


def _load(state: StateStore) -> dict[bytes, Issuer]:
    buckets: dict[bytes, dict[int, int]] = {}
    for key, value in state.iter_state(_BUCKET):
        batch_id, bucket = key[len(_BUCKET) : -4], int.from_bytes(key[-4:], "big")
        buckets.setdefault(batch_id, {})[bucket] = int.from_bytes(value, "big")
    stamped: dict[bytes, dict[bytes, int]] = {}
    for key, value in state.iter_state(_STAMP):
        batch_id, address = key[len(_STAMP) : len(_STAMP) + 32], key[len(_STAMP) + 32 :]
        stamped.setdefault(batch_id, {})[address] = int.from_bytes(value, "big")
    issuers = {}
    for key, value in state.iter_state(_BATCH):
        batch_id, r = key[len(_BATCH) :], json.loads(value)
        batch = Batch(
            batch_id,
            bytes.fromhex(r["owner"]),
            r["depth"],
            int(r["amount"]),
            r["immutable"],
            r["label"],
            r["block"],
            r["bucket_depth"],
        )
        issuers[batch_id] = Issuer(batch, buckets.get(batch_id), stamped.get(batch_id), r["utilization"])
    return issuers
