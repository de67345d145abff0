"""The accounting of one postage batch (Bee's stamp issuer), pure: values in, values out.

A batch of depth ``d`` may stamp ``2**d`` chunks, spread over ``2**bucket_depth`` buckets
(``bucket_depth`` = 16 as in Bee): a chunk's bucket is the first 16 bits of its address, and each
bucket holds at most ``2**(d - 16)`` stamps. A chunk stamped twice with the same batch keeps its
first stamp index (Bee's stamp store), so re-uploading costs nothing. When a bucket is full an
*immutable* batch refuses (`BatchFull`, Bee's "batch is overissued"); a *mutable* one wraps, the
bucket's next stamp reusing index 0 (newer stamps then replace older ones in the reserve).
``utilization`` is Bee's: the highest count any bucket reached.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

__all__ = [
    "BUCKET_DEPTH",
    "MAX_DEPTH",
    "MIN_DEPTH",
    "Batch",
    "BatchFull",
    "InvalidBatch",
    "Issuer",
    "Stamp",
    "bucket_of",
]

BUCKET_DEPTH = 16
"""Bits of a chunk address that name its bucket (Bee's ``bucketDepth``)."""
MIN_DEPTH = BUCKET_DEPTH + 1
"""The shallowest batch Bee creates (17: two stamps per bucket)."""
MAX_DEPTH = 255
"""Bee takes the depth as one byte."""


class BatchFull(Exception):
    """An immutable batch has no stamp left in the bucket of a chunk."""

    def __init__(self, batch_id: bytes, bucket: int, capacity: int) -> None:
        super().__init__(
            f"batch is overissued: bucket {bucket} of batch {batch_id.hex()} holds its {capacity} stamps"
        )
        self.batch_id = batch_id
        self.bucket = bucket


class InvalidBatch(ValueError):
    """A batch cannot be made or changed as asked (a depth out of range, a negative amount)."""


@dataclass(frozen=True)
class Batch:
    """What a batch is, as ``/stamps`` and ``/batches`` show it."""

    id: bytes
    owner: bytes
    depth: int
    amount: int
    """Per-chunk balance in PLUR (Bee's ``amount``, its ``value`` in ``/batches``)."""
    immutable: bool
    label: str = ""
    block_number: int = 0
    bucket_depth: int = BUCKET_DEPTH

    def __post_init__(self) -> None:
        if len(self.id) != 32:
            raise InvalidBatch(f"a batch id is 32 bytes, got {len(self.id)}")
        if not MIN_DEPTH <= self.depth <= MAX_DEPTH:
            raise InvalidBatch(f"invalid depth {self.depth}: a batch's depth is {MIN_DEPTH}..{MAX_DEPTH}")
        if self.amount < 0:
            raise InvalidBatch(f"invalid amount {self.amount}: it cannot be negative")

    @property
    def bucket_capacity(self) -> int:
        """Stamps per bucket: ``2**(depth - bucket_depth)`` (Bee's ``bucketUpperBound``)."""
        return 1 << (self.depth - self.bucket_depth)


@dataclass(frozen=True)
class Stamp:
    """The stamp a chunk got: its bucket and the index within it."""

    address: bytes
    bucket: int
    index: int
    new: bool
    """False when the chunk had been stamped with this batch before (same index again)."""


def bucket_of(address: bytes, bucket_depth: int = BUCKET_DEPTH) -> int:
    """The bucket of a chunk: the first ``bucket_depth`` bits of its address."""
    return int.from_bytes(address[:4], "big") >> (32 - bucket_depth)


class Issuer:
    """One batch's buckets and the stamp index of every chunk it stamped."""

    def __init__(
        self,
        batch: Batch,
        buckets: dict[int, int] | None = None,
        stamped: dict[bytes, int] | None = None,
        utilization: int = 0,
    ) -> None:
        self.batch = batch
        self.buckets: dict[int, int] = dict(buckets or {})
        """Bucket -> stamps issued in it (buckets never used are absent)."""
        self.stamped: dict[bytes, int] = dict(stamped or {})
        """Chunk address -> its stamp index."""
        self.utilization = max([utilization, *self.buckets.values()])

    def stamp_all(self, addresses: list[bytes]) -> list[Stamp]:
        """Stamp every chunk, or none: raises `BatchFull` before changing anything if an
        immutable batch cannot stamp them all."""
        new = [a for a in dict.fromkeys(addresses) if a not in self.stamped]
        if self.batch.immutable:
            wanted = Counter(bucket_of(a, self.batch.bucket_depth) for a in new)
            for bucket, count in sorted(wanted.items()):
                if self.buckets.get(bucket, 0) + count > self.batch.bucket_capacity:
                    raise BatchFull(self.batch.id, bucket, self.batch.bucket_capacity)
        fresh = {a: self._issue(a) for a in new}
        return [
            Stamp(a, bucket_of(a, self.batch.bucket_depth), self.stamped[a], a in fresh) for a in addresses
        ]

    def _issue(self, address: bytes) -> int:
        bucket = bucket_of(address, self.batch.bucket_depth)
        count = self.buckets.get(bucket, 0)
        if count >= self.batch.bucket_capacity:  # only a mutable batch gets here: it wraps
            count = 0
        self.buckets[bucket] = count + 1
        self.utilization = max(self.utilization, count + 1)
        self.stamped[address] = count
        return count

    def top_up(self, amount: int) -> None:
        """Add ``amount`` PLUR per chunk to the batch's balance."""
        if amount <= 0:
            raise InvalidBatch(f"invalid amount {amount}: a top-up adds at least 1 PLUR per chunk")
        self.batch = replace(self.batch, amount=self.batch.amount + amount)

    def dilute(self, depth: int) -> None:
        """Deepen the batch: more stamps per bucket, the per-chunk balance halved for each level
        (as the postage contract's ``increaseDepth`` does); stamps already issued stay."""
        if depth <= self.batch.depth:
            raise InvalidBatch(f"invalid depth {depth}: diluting needs a depth above {self.batch.depth}")
        amount = self.batch.amount >> (depth - self.batch.depth)
        self.batch = replace(self.batch, depth=depth, amount=amount)

    def bucket_counts(self) -> list[int]:
        """Stamps issued in every bucket, bucket 0 first (Bee's ``/stamps/{id}/buckets``)."""
        counts = [0] * (1 << self.batch.bucket_depth)
        for bucket, count in self.buckets.items():
            counts[bucket] = count
        return counts
