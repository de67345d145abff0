"""Push-sync receipts: a storer's signed word that it keeps a chunk, and their checks (pure).

A receipt is signed with the storer's identity key (Ed25519, the key its overlay derives from)
over domain-separated bytes::

    PUSH_RECEIPT_DOMAIN || network_id (u64 BE) || chunk address (32) || storer overlay (32) || radius (u8)

so it names the chunk, who stores it (the overlay is derived from the public key the receipt
carries: nobody can sign for another overlay) and the storage radius the storer had. The
uploader accepts it only if the storer is responsible for the chunk by its own word: the chunk
is within the radius it signed (Bee calls a receipt failing this "shallow"). Relaying nodes pass
it back unchanged; they cannot forge one.

A batch receipt (a `PushBatchReceipt`, the answer to a `PushBatch`) keeps that meaning for every
chunk it names with one signature, over::

    PUSH_BATCH_RECEIPT_DOMAIN || network_id (u64 BE) || keccak256(address 1 || ... || address n)
        || storer overlay (32) || radius (u8)

The uploader recomputes the hash from the addresses the receipt names, in its order, so the
signature attests each of them; a chunk of the batch the receipt does not name, or names but lies
outside the radius, is not attested (it is pushed again), and a receipt naming a chunk the
batch did not hold proves nothing.
"""

from __future__ import annotations

import struct
from collections.abc import Collection, Sequence

from chunks.bmt import keccak256
from pot import proximity
from streamer.identity import NodeIdentity, verify_signature
from streamer.messages import PushBatchReceipt, PushReceipt, overlay_address

__all__ = [
    "PUSH_BATCH_RECEIPT_DOMAIN",
    "PUSH_RECEIPT_DOMAIN",
    "BadReceipt",
    "batch_signing_bytes",
    "make_batch_receipt",
    "make_receipt",
    "receipt_signing_bytes",
    "verify_batch_receipt",
    "verify_receipt",
]

PUSH_RECEIPT_DOMAIN = b"swarm-push-receipt-v1"
PUSH_BATCH_RECEIPT_DOMAIN = b"swarm-push-batch-receipt-v1"


class BadReceipt(Exception):
    """A receipt that proves nothing: another chunk, a bad signature, or a shallow storer."""


def receipt_signing_bytes(network_id: int, address: bytes, storer: bytes, radius: int) -> bytes:
    return PUSH_RECEIPT_DOMAIN + struct.pack(">Q", network_id) + address + storer + bytes((radius,))


def make_receipt(
    identity: NodeIdentity, *, network_id: int, request_id: int, address: bytes, radius: int
) -> PushReceipt:
    """This node's receipt for storing the chunk at ``address`` with storage radius ``radius``."""
    storer = identity.overlay(network_id)
    signature = identity.sign(receipt_signing_bytes(network_id, address, storer, radius))
    return PushReceipt(request_id, address, identity.public_key, radius, signature)


def verify_receipt(receipt: PushReceipt, *, network_id: int, address: bytes) -> bytes:
    """The storer's overlay if ``receipt`` proves that it stores the chunk at ``address``;
    raises BadReceipt naming what is wrong."""
    if receipt.address != address:
        raise BadReceipt(f"receipt names chunk {receipt.address.hex()}, not {address.hex()}")
    storer = overlay_address(receipt.public_key, network_id)
    data = receipt_signing_bytes(network_id, address, storer, receipt.radius)
    if not verify_signature(receipt.public_key, data, receipt.signature):
        raise BadReceipt(f"receipt for {address.hex()} has a bad signature")
    po = proximity(storer, address)
    if po < receipt.radius:
        raise BadReceipt(
            f"shallow receipt for {address.hex()}: storer {storer.hex()[:12]} is at proximity {po}, "
            f"outside its radius {receipt.radius}"
        )
    return storer


def batch_signing_bytes(network_id: int, addresses: Sequence[bytes], storer: bytes, radius: int) -> bytes:
    return (
        PUSH_BATCH_RECEIPT_DOMAIN
        + struct.pack(">Q", network_id)
        + keccak256(b"".join(addresses))
        + storer
        + bytes((radius,))
    )


def make_batch_receipt(
    identity: NodeIdentity, *, network_id: int, request_id: int, addresses: Sequence[bytes], radius: int
) -> PushBatchReceipt:
    """This node's one receipt for storing every chunk ``addresses`` names."""
    storer = identity.overlay(network_id)
    signature = identity.sign(batch_signing_bytes(network_id, addresses, storer, radius))
    return PushBatchReceipt(request_id, identity.public_key, radius, signature, tuple(addresses))


def verify_batch_receipt(
    receipt: PushBatchReceipt, *, network_id: int, pushed: Collection[bytes]
) -> tuple[bytes, list[bytes]]:
    """The storer's overlay and the chunks of ``pushed`` (the batch's addresses) that ``receipt``
    proves it stores: those it names within its radius. Raises BadReceipt if it names a chunk
    the batch did not hold or its signature does not hold."""
    strange = [a for a in receipt.addresses if a not in pushed]
    if strange:
        raise BadReceipt(f"batch receipt names chunk {strange[0].hex()}, which the batch did not hold")
    storer = overlay_address(receipt.public_key, network_id)
    data = batch_signing_bytes(network_id, receipt.addresses, storer, receipt.radius)
    if not verify_signature(receipt.public_key, data, receipt.signature):
        raise BadReceipt(f"batch receipt of {storer.hex()[:12]} has a bad signature")
    return storer, [a for a in receipt.addresses if proximity(storer, a) >= receipt.radius]
