"""Push syncing (docs/protocol.md, section 5.4, type codes 0x23-0x2F): an uploaded chunk pushed
hop by hop to the node closest to its address, and the storer's signed receipt back."""

from __future__ import annotations

from typing import Annotated

from pot import MAX_PO
from streamer.wire.declare import Message, message
from streamer.wire.fields import U8, U64, Address, ChunkData, PublicKey, Reason, Signature, UInt


@message(0x23)
class PushDelivery(Message):
    """An uploaded chunk on its way to the node closest to ``address``, hop by hop; answered by a
    :class:`PushReceipt` from the node that stored it, or a :class:`PushFailure`."""

    request_id: U64
    address: Address
    hop_limit: U8
    data: ChunkData

    def __repr__(self) -> str:
        return (
            f"PushDelivery(request_id={self.request_id}, address={self.address.hex()[:12]}…, "
            f"hop_limit={self.hop_limit}, data=<{len(self.data)} bytes>)"
        )


@message(0x24)
class PushReceipt(Message):
    """The storer's word that it keeps the chunk: signed by its identity key over the chunk's
    address, its overlay (derived from ``public_key``) and its storage ``radius``
    (streamer/push_receipts.py). Relayed unchanged back along the path."""

    request_id: U64
    address: Address
    public_key: PublicKey
    radius: Annotated[int, UInt(8, hi=MAX_PO + 1)]
    signature: Signature


@message(0x25)
class PushFailure(Message):
    request_id: U64
    reason: Reason = ""
