"""Signed states of a bin's log and receipts for taken-over ranges: what their signatures cover.

A node signs states of its own bins' logs (an upstream) and receipts for ranges it took over
from a peer's log (a downstream), with its identity key (streamer/identity.py). Each has its
own domain tag, distinct from the handshake's and the peer record's, so no signature can be
passed off as another kind::

    state:   "swarm-sync-state-v1"   || overlay (32) || bin u8 || epoch u64 || size u64 || root (32)
    receipt: "swarm-sync-receipt-v1" || upstream (32) || bin u8 || epoch u64 || start u64 || end u64
             || root (32)

(integers big-endian). The overlay a state names is its signer's, the upstream a receipt names
is the log's owner: a state cannot be replayed as another node's, a receipt not shown to another
upstream. Pure: values in, values out.

Signing and checking go through the identity's `cryptography` Ed25519 (OpenSSL): a downstream
checks one per live offer.
"""

from __future__ import annotations

import struct

from streamer.identity import NodeIdentity, verify_signature
from streamer.messages import SIGNATURE_SIZE, Receipt, SignedState

__all__ = [
    "RECEIPT_DOMAIN",
    "STATE_DOMAIN",
    "StateSigner",
    "receipt_signing_bytes",
    "state_signing_bytes",
    "verify_receipt",
    "verify_state",
]

STATE_DOMAIN = b"swarm-sync-state-v1"
RECEIPT_DOMAIN = b"swarm-sync-receipt-v1"
_STATE = struct.Struct(">BQQ")
_RECEIPT = struct.Struct(">BQQQ")


def state_signing_bytes(overlay: bytes, bin: int, epoch: int, size: int, root: bytes) -> bytes:
    return STATE_DOMAIN + overlay + _STATE.pack(bin, epoch, size) + root


def receipt_signing_bytes(upstream: bytes, r: Receipt) -> bytes:
    return RECEIPT_DOMAIN + upstream + _RECEIPT.pack(r.bin, r.epoch, r.start, r.end) + r.root


class StateSigner:
    """Signs this node's states and receipts with its identity key."""

    def __init__(self, identity: NodeIdentity, overlay: bytes) -> None:
        self._key = identity
        self.overlay = overlay
        self.public_key = identity.public_key

    def state(self, bin: int, epoch: int, size: int, root: bytes) -> SignedState:
        """The signed state of our own bin ``bin`` at ``size`` leaves."""
        signature = self._key.sign(state_signing_bytes(self.overlay, bin, epoch, size, root))
        return SignedState(bin, epoch, size, root, signature)

    def receipt(self, upstream: bytes, bin: int, epoch: int, start: int, end: int, root: bytes) -> Receipt:
        """Our receipt for bin IDs ``[start, end]`` of ``upstream``'s bin ``bin``."""
        unsigned = Receipt(bin, epoch, start, end, root, bytes(SIGNATURE_SIZE))
        signature = self._key.sign(receipt_signing_bytes(upstream, unsigned))
        return Receipt(bin, epoch, start, end, root, signature)


def verify_state(public_key: bytes, overlay: bytes, state: SignedState) -> bool:
    """Whether ``state`` is signed by ``public_key`` as a state of ``overlay``'s log."""
    data = state_signing_bytes(overlay, state.bin, state.epoch, state.size, state.root)
    return verify_signature(public_key, data, state.signature)


def verify_receipt(public_key: bytes, upstream: bytes, receipt: Receipt) -> bool:
    """Whether ``receipt`` is signed by ``public_key`` for a range of ``upstream``'s log."""
    return verify_signature(public_key, receipt_signing_bytes(upstream, receipt), receipt.signature)
