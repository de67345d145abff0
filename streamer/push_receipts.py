"""Push-sync receipts: a storer's signed word that it keeps a chunk, and their checks (pure).

A receipt is signed with the storer's identity key (Ed25519, the key its overlay derives from)
over domain-separated bytes::

    PUSH_RECEIPT_DOMAIN || network_id (u64 BE) || chunk address (32) || storer overlay (32) || radius (u8)

so it names the chunk, who stores it (the overlay is derived from the public key the receipt
carries: nobody can sign for another overlay) and the storage radius the storer had. The
uploader accepts it only if the storer is responsible for the chunk by its own word: the chunk
is within the radius it signed (Bee calls a receipt failing this "shallow"). Relaying nodes pass
it back unchanged; they cannot forge one.
"""

from __future__ import annotations

import struct

from pot import proximity
from streamer.identity import NodeIdentity, verify_signature
from streamer.messages import PushReceipt, overlay_address

__all__ = ["PUSH_RECEIPT_DOMAIN", "BadReceipt", "make_receipt", "receipt_signing_bytes", "verify_receipt"]

PUSH_RECEIPT_DOMAIN = b"swarm-push-receipt-v1"


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
