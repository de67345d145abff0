"""Pull syncing (docs/protocol.md, section 5.2): cursors, subscriptions to a bin's stream, and the
offers, wants and deliveries that move its chunks downstream."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

from bitarray import bitarray

from streamer.errors import MessageError
from streamer.wire.compound import HashList, Records, UIntList
from streamer.wire.declare import Message, message, record
from streamer.wire.fields import U64, Bin, BinId, BitVector, Bool, ChunkData, Sized, UInt, uint
from streamer.wire.limits import ADDRESS_SIZE, BIN_COUNT, MAX_CHUNK_DATA_SIZE, MIN_CHUNK_DATA_SIZE

MAX_BATCH_SIZE = 128
"""Most hashes in one offer; also the number of bits of a want vector."""
OFFER_WINDOW = 2
"""Most offers of one stream the upstream may have sent and not had answered (section 8.2)."""
WANT_SIZE = MAX_BATCH_SIZE // 8
MAX_DELIVERY_BATCH = 15
"""Chunks in one `ChunkDeliveries`: as many as fit in a frame (15 x 4,204 bytes of the largest)."""

OfferIndex = Annotated[int, UInt(8, hi=MAX_BATCH_SIZE - 1)]


def check_range(msg: Any) -> None:
    """``msg.start`` and ``msg.end`` are the bin IDs of a stream range: ``1 <= start <= end``."""
    n = type(msg).__name__
    if msg.start < 1:
        raise MessageError(f"{n}.start must be >= 1 (bin IDs start at 1), got {msg.start}")
    if msg.end < msg.start:
        raise MessageError(f"{n}.end must be >= start ({msg.start}), got {msg.end}")


@message(0x10)
class CursorsRequest(Message):
    """Downstream asks the upstream for its epoch and its cursor (highest bin ID) per bin."""


@message(0x11)
class CursorsReply(Message):
    """The upstream's store epoch and its cursor per bin (index = bin; 0 = bin empty)."""

    epoch: U64
    cursors: Annotated[tuple[int, ...], UIntList(BIN_COUNT)]


@message(0x12)
class Subscribe(Message):
    """Open the stream (bin, live): historical ``[start, end]`` or live ``[start, open)`` (end 0)."""

    bin: Bin
    live: Bool
    start: U64
    end: U64

    def _check(self) -> None:
        n = "Subscribe"
        if self.start < 1:
            raise MessageError(f"{n}.start must be >= 1 (bin IDs start at 1), got {self.start}")
        if self.live and self.end != 0:
            raise MessageError(f"{n}.end must be 0 (open-ended) for a live stream, got {self.end}")
        if not self.live and self.end < self.start:
            raise MessageError(
                f"{n}.end must be >= start ({self.start}) for a historical stream, got {self.end}"
            )


@message(0x13, fieldwise=True)
class Unsubscribe(Message):
    """Downstream closes the stream (bin, live); the upstream answers `Unsubscribed`."""

    bin: Bin
    live: Bool


@message(0x17, fieldwise=True)
class Unsubscribed(Message):
    """The upstream stopped the stream (bin, live): every offer of it was sent before this."""

    bin: Bin
    live: Bool


@message(0x14)
class OfferedHashes(Message):
    """Addresses of the chunks with bin IDs in ``[start, end]`` of the upstream's pull index.

    Chunks removed from the store leave holes, so an offer may hold fewer hashes than the range
    is long, but never more, and never more than :data:`MAX_BATCH_SIZE`.
    """

    bin: Bin
    live: Bool
    start: U64
    end: U64
    hashes: Annotated[tuple[bytes, ...], HashList(MAX_BATCH_SIZE, ADDRESS_SIZE)]

    def _check(self) -> None:
        check_range(self)
        if len(self.hashes) > self.end - self.start + 1:
            raise MessageError(
                f"OfferedHashes.hashes holds {len(self.hashes)} hashes, more than the range "
                f"[{self.start}, {self.end}] has bin IDs"
            )

    def __repr__(self) -> str:
        return (
            f"OfferedHashes(bin={self.bin}, live={self.live}, start={self.start}, end={self.end}, "
            f"hashes=<{len(self.hashes)} hashes>)"
        )


@message(0x15)
class WantedHashes(Message):
    """The downstream's answer to one offer: bit ``i`` set = send me the ``i``-th offered chunk.

    Bit ``i`` lives in byte ``i // 8`` under mask ``1 << (i % 8)`` (least significant bit first).
    """

    bin: Bin
    live: Bool
    start: U64
    end: U64
    want: Annotated[bytes, BitVector(WANT_SIZE)]

    _check = check_range

    @classmethod
    def from_indices(cls, bin: int, live: bool, start: int, end: int, indices: Iterable[int]) -> WantedHashes:
        bits = bitarray(MAX_BATCH_SIZE, endian="little")
        bits.setall(0)
        for i in indices:
            uint("WantedHashes", "index", i, 8)
            if i >= MAX_BATCH_SIZE:
                raise MessageError(f"WantedHashes index must be in 0..{MAX_BATCH_SIZE - 1}, got {i}")
            bits[i] = 1
        return cls(bin, live, start, end, bits.tobytes())

    def _bits(self) -> bitarray:
        bits = bitarray(endian="little")
        bits.frombytes(self.want)
        return bits

    def wanted_indices(self) -> list[int]:
        """Indices of the wanted offered hashes, ascending."""
        return list(self._bits().search(1))

    def is_wanted(self, i: int) -> bool:
        if not 0 <= i < MAX_BATCH_SIZE:
            raise IndexError(f"offer index must be in 0..{MAX_BATCH_SIZE - 1}, got {i}")
        return bool(self.want[i >> 3] >> (i & 7) & 1)


@message(0x16)
class ChunkDelivery(Message):
    """One wanted chunk: ``index`` is its position in the offer that started at ``start``."""

    bin: Bin
    live: Bool
    start: BinId
    index: OfferIndex
    data: ChunkData

    def __repr__(self) -> str:
        return (
            f"ChunkDelivery(bin={self.bin}, live={self.live}, start={self.start}, index={self.index}, "
            f"data=<{len(self.data)} bytes>)"
        )


@record
class DeliveredChunk:
    """One chunk of a :class:`ChunkDeliveries`: its position in the offer, and its data."""

    index: OfferIndex
    data: Annotated[bytes, Sized(MIN_CHUNK_DATA_SIZE, MAX_CHUNK_DATA_SIZE)]

    def __repr__(self) -> str:
        return f"DeliveredChunk(index={self.index}, data=<{len(self.data)} bytes>)"


@message(0x1E)
class ChunkDeliveries(Message):
    """Wanted chunks of the offer that started at ``start``, several in one frame: what a
    :class:`ChunkDelivery` each would carry, without a frame, a header and a dispatch per chunk."""

    bin: Bin
    live: Bool
    start: BinId
    chunks: Annotated[tuple[DeliveredChunk, ...], Records(DeliveredChunk, MAX_DELIVERY_BATCH)]

    def _check(self) -> None:
        if not self.chunks:
            raise MessageError("ChunkDeliveries.chunks must hold at least one chunk")

    def payload_size(self) -> int:
        """Chunk-data bytes carried (the rest of the frame is protocol overhead)."""
        return sum(len(chunk.data) for chunk in self.chunks)

    def __repr__(self) -> str:
        return (
            f"ChunkDeliveries(bin={self.bin}, live={self.live}, start={self.start}, "
            f"indices={[chunk.index for chunk in self.chunks]})"
        )
