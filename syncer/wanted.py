"""WantedChunks: what a downstream asked its upstream for and has not received yet (pure).

The session records each want's chunks under the offer they were offered in, and judges every
delivery against them: a chunk is taken once, and only if it was wanted; anything else is an
unsolicited delivery, a protocol violation that ends the connection. A delivery names no
address: the address is the one offered at its index, and the chunk's data must hash to it.
"""

from __future__ import annotations

from chunks import Chunk
from streamer.errors import RemoteProtocolError
from streamer.messages import ChunkDeliveries, ChunkDelivery, GoodbyeCode
from syncer.session_events import ChunkArrived, ChunksArrived, stream_name

__all__ = ["WantedChunks"]

OfferKey = tuple[int, bool, int]
"""An offer: (bin, live, start)."""


class WantedChunks:
    """Per open offer, the chunks wanted from it and not delivered yet: index -> address."""

    def __init__(self) -> None:
        self._by_offer: dict[OfferKey, dict[int, bytes]] = {}

    def __len__(self) -> int:
        """Chunks wanted and not delivered yet (lost if the connection ends now)."""
        return sum(len(indices) for indices in self._by_offer.values())

    def want(self, offer: OfferKey, addresses: dict[int, bytes]) -> None:
        """The want for ``offer`` asked for these chunks (index in the offer -> its hash)."""
        if addresses:
            self._by_offer[offer] = addresses

    def take(self, msg: ChunkDelivery) -> ChunkArrived:
        """One delivered chunk, named by the hash it was offered under."""
        offer = (msg.bin, msg.live, msg.start)
        wanted = self._wanted_of(offer, msg, msg.index)
        address = wanted.pop(msg.index, None)
        if address is None:
            raise _unsolicited(msg, msg.index, "not wanted")
        if not wanted:
            del self._by_offer[offer]
        return ChunkArrived(address, msg)

    def take_frame(self, msg: ChunkDeliveries) -> ChunksArrived:
        """Every chunk of the frame must be wanted and not delivered yet, or none counts (the
        peer broke the protocol, and the connection ends)."""
        offer = (msg.bin, msg.live, msg.start)
        wanted = self._wanted_of(offer, msg, msg.chunks[0].index)
        arrived = []
        for chunk in msg.chunks:
            address = wanted.pop(chunk.index, None)
            if address is None:
                raise _unsolicited(msg, chunk.index, "not wanted")
            arrived.append(Chunk(address, chunk.data))
        if not wanted:
            del self._by_offer[offer]
        return ChunksArrived(arrived)

    def _wanted_of(
        self, offer: OfferKey, msg: ChunkDelivery | ChunkDeliveries, index: int
    ) -> dict[int, bytes]:
        wanted = self._by_offer.get(offer)
        if wanted is None:
            raise _unsolicited(msg, index, "no such open offer")
        return wanted


def _unsolicited(msg: ChunkDelivery | ChunkDeliveries, index: int, why: str) -> RemoteProtocolError:
    """A delivery of ``index`` that was not asked for (formatted only then: the hot path)."""
    where = f"delivery for {stream_name(msg.bin, msg.live)} offer {msg.start} index {index}"
    return RemoteProtocolError(f"{where}: {why}", GoodbyeCode.UNSOLICITED_DELIVERY)
