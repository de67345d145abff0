"""A postage stamp signed by the batch owner, as Bee's ``POST /envelope`` makes it. Pure.

A stamp binds a chunk address to a batch at an index, signed by the batch's owner (Bee's
``pkg/postage``: ``stamper.Stamp`` and ``ToSignDigest``):

- **index** (8 bytes) = the chunk's bucket as u32 big-endian || its index within the bucket as
  u32 big-endian (Bee's ``indexToBytes``);
- **timestamp** (8 bytes) = nanoseconds since the Unix epoch, u64 big-endian (Bee's ``unixTime``);
- **signature** (65 bytes, ``r || s || v``) = the owner's Ethereum-message signature of
  ``keccak256(address || batch id || index || timestamp)``, i.e. secp256k1 over
  ``keccak256("\\x19Ethereum Signed Message:\\n32" || keccak256(address || batch id || index ||
  timestamp))``, which is what `chunks.ethkey.Secp256k1Key.sign` makes of that data;
- the **marshalled stamp** (113 bytes) = batch id || index || timestamp || signature, the
  ``Swarm-Postage-Stamp`` header's value.
"""

from __future__ import annotations

from dataclasses import dataclass

from chunks.ethkey import Secp256k1Key, recover_owner
from swarm.postage.batches import Stamp

__all__ = ["INDEX_SIZE", "STAMP_SIZE", "TIMESTAMP_SIZE", "Envelope", "sign_stamp", "stamp_index"]

INDEX_SIZE = 8
TIMESTAMP_SIZE = 8
STAMP_SIZE = 32 + INDEX_SIZE + TIMESTAMP_SIZE + 65


def stamp_index(bucket: int, index: int) -> bytes:
    """Bee's 8-byte stamp index: bucket, then the index within it, each u32 big-endian."""
    return bucket.to_bytes(4, "big") + index.to_bytes(4, "big")


@dataclass(frozen=True)
class Envelope:
    """A signed stamp of one chunk: who issued it and what it says."""

    address: bytes
    batch_id: bytes
    index: bytes
    timestamp: bytes
    signature: bytes
    issuer: bytes
    """The signer's 20-byte owner (Ethereum) address."""

    def __post_init__(self) -> None:
        sizes = {"address": 32, "batch_id": 32, "index": INDEX_SIZE, "timestamp": TIMESTAMP_SIZE}
        for name, size in {**sizes, "signature": 65, "issuer": 20}.items():
            if len(getattr(self, name)) != size:
                raise ValueError(f"an envelope's {name} is {size} bytes, got {len(getattr(self, name))}")

    @property
    def signed_data(self) -> bytes:
        """What the signature signs (as an Ethereum message over its Keccak-256)."""
        return self.address + self.batch_id + self.index + self.timestamp

    def marshal(self) -> bytes:
        """The 113-byte stamp: batch id || index || timestamp || signature."""
        return self.batch_id + self.index + self.timestamp + self.signature

    def signer(self) -> bytes:
        """The owner address the signature recovers to (`chunks.ethkey.BadSignature` if none)."""
        return recover_owner(self.signature, self.signed_data)


def sign_stamp(key: Secp256k1Key, batch_id: bytes, stamp: Stamp, timestamp_ns: int) -> Envelope:
    """The envelope of ``stamp`` (a chunk's bucket and index in batch ``batch_id``), signed by ``key``."""
    index = stamp_index(stamp.bucket, stamp.index)
    timestamp = timestamp_ns.to_bytes(TIMESTAMP_SIZE, "big")
    signature = key.sign(stamp.address + batch_id + index + timestamp)
    return Envelope(stamp.address, batch_id, index, timestamp, signature, key.owner)
