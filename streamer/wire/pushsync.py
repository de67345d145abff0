"""Push syncing (docs/protocol.md, section 5.4, type codes 0x23-0x2F): an uploaded chunk pushed
hop by hop to the node closest to its address, and the storer's signed receipt back; or up to
`MAX_PUSH_BATCH` chunks in one frame for a peer to store itself, and one receipt for them all."""

from __future__ import annotations

from typing import Annotated

from pot import MAX_PO
from streamer.errors import MessageError
from streamer.wire.compound import HashList, Records
from streamer.wire.declare import Message, message, record
from streamer.wire.fields import U8, U64, Address, Bool, ChunkData, PublicKey, Reason, Signature, Sized, UInt
from streamer.wire.limits import MAX_CHUNK_DATA_SIZE, MIN_CHUNK_DATA_SIZE

MAX_PUSH_BATCH = 15
"""Chunks in one `PushBatch`: as many as fit in a frame (15 x 4,235 bytes of the largest chunks)."""


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
    """The receiver of a pushed chunk did not store it, and says why."""

    request_id: U64
    reason: Reason = ""


@record
class PushedChunk:
    """One chunk of a :class:`PushBatch`."""

    address: Address
    data: Annotated[bytes, Sized(MIN_CHUNK_DATA_SIZE, MAX_CHUNK_DATA_SIZE)]

    def __repr__(self) -> str:
        return f"PushedChunk(address={self.address.hex()[:12]}…, data=<{len(self.data)} bytes>)"


@message(0x26)
class PushBatch(Message):
    """Uploaded chunks for the receiving peer to store itself, never forwarded: all of them if
    ``direct`` (as a :class:`PushDelivery` with hop limit 0), else those it is responsible for or
    has no closer peer for. Answered by one :class:`PushBatchReceipt` naming those it stored, or a
    :class:`PushFailure` for them all."""

    request_id: U64
    direct: Bool
    chunks: Annotated[tuple[PushedChunk, ...], Records(PushedChunk, MAX_PUSH_BATCH)]

    def _check(self) -> None:
        addresses = [chunk.address for chunk in self.chunks]
        if not addresses:
            raise MessageError("PushBatch.chunks must hold at least one chunk")
        if len(set(addresses)) != len(addresses):
            raise MessageError("PushBatch.chunks names a chunk twice")


@message(0x27)
class PushBatchReceipt(Message):
    """The storer's word that it keeps every chunk ``addresses`` names: one signature by its
    identity key over the hash of those addresses, its overlay and its storage ``radius``
    (streamer/push_receipts.py). A chunk of the batch it does not name is not stored."""

    request_id: U64
    public_key: PublicKey
    radius: Annotated[int, UInt(8, hi=MAX_PO + 1)]
    signature: Signature
    addresses: Annotated[tuple[bytes, ...], HashList(MAX_PUSH_BATCH)]
