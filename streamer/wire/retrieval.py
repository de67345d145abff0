"""Retrieval (docs/protocol.md, section 5.3): ask a peer for one chunk by its address, hop by hop."""

from __future__ import annotations

from streamer.wire.declare import Message, message
from streamer.wire.fields import U8, U64, Address, ChunkData, Reason


@message(0x20, fieldwise=True)
class RetrieveRequest(Message):
    """Ask for the chunk at ``address``; ``hop_limit`` 0 = answer from your local store only."""

    request_id: U64
    address: Address
    hop_limit: U8


@message(0x21)
class RetrieveDelivery(Message):
    """The chunk data a retrieve request asked for."""

    request_id: U64
    data: ChunkData

    def __repr__(self) -> str:
        return f"RetrieveDelivery(request_id={self.request_id}, data=<{len(self.data)} bytes>)"


@message(0x22)
class RetrieveFailure(Message):
    """The responder could not get the chunk a retrieve request asked for, and says why."""

    request_id: U64
    reason: Reason = ""
