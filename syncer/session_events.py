"""What a message received by a `DownstreamSession` means: the events it returns (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from chunks import Chunk
from streamer.messages import (
    ChunkDeliveries,
    ChunkDelivery,
    CursorsReply,
    OfferedHashes,
    ProvenOffer,
    SignedState,
    SkippedOffer,
    StateReply,
    Unsubscribed,
)

__all__ = [
    "ChunkArrived",
    "ChunksArrived",
    "CursorsReceived",
    "Offer",
    "OfferCrossed",
    "OfferProven",
    "OfferReceived",
    "SessionEvent",
    "StateAccepted",
    "StateSuperseded",
    "StreamKey",
    "UnsubscribeAcked",
    "stream_name",
]

StreamKey = tuple[int, bool]


@dataclass(frozen=True, slots=True)
class StateAccepted:
    state: SignedState
    latest: bool  # it is the new latest state of its bin


@dataclass(frozen=True, slots=True)
class StateSuperseded:
    """A reply that extends the state we named, which is no longer the latest (ours to ask again)."""

    state: SignedState


@dataclass(frozen=True, slots=True)
class OfferProven:
    """The offer's entries are leaves ``[start, end]`` of the log; ``root`` is its state at end."""

    root: bytes


def stream_name(bin: int, live: bool) -> str:
    """How logs and errors name the stream ``(bin, live)``."""
    return f"bin {bin} {'live' if live else 'historical'}"


"""A stream: (bin of the upstream's pull index, live)."""


@dataclass(frozen=True, slots=True)
class CursorsReceived:
    """The upstream's store epoch and its cursor per bin (all 32; missing bins are 0)."""

    epoch: int
    cursors: tuple[int, ...]


Offer = OfferedHashes | ProvenOffer | SkippedOffer
UpstreamMessage = CursorsReply | Offer | StateReply | Unsubscribed | ChunkDelivery | ChunkDeliveries
"""What an upstream sends the downstream's session."""


@dataclass(frozen=True, slots=True)
class OfferReceived:
    """An offer to answer, in order; `last` marks the final offer of a historical stream.

    ``root``: the upstream's state at the offer's end, when the session verified its proof."""

    offer: Offer
    last: bool
    root: bytes | None = None

    @property
    def holes(self) -> list[int]:
        """Entries the upstream cannot deliver: never to be wanted."""
        return self.offer.hole_indices() if isinstance(self.offer, ProvenOffer) else []


@dataclass(frozen=True, slots=True)
class OfferCrossed:
    """An offer of a stream we are unsubscribing from: it crossed our Unsubscribe, ignore it."""

    offer: Offer


@dataclass(frozen=True, slots=True)
class UnsubscribeAcked:
    """The upstream stopped the stream: no offer of it follows."""

    key: StreamKey


@dataclass(frozen=True, slots=True)
class ChunkArrived:
    """A wanted chunk: its data must hash to `address` (the offered hash)."""

    address: bytes
    delivery: ChunkDelivery


@dataclass(frozen=True, slots=True)
class ChunksArrived:
    """Wanted chunks of one `ChunkDeliveries`, each named by its offered hash (its data must hash
    to that address)."""

    chunks: list[Chunk]


SessionEvent = (
    CursorsReceived
    | OfferReceived
    | OfferCrossed
    | UnsubscribeAcked
    | ChunkArrived
    | ChunksArrived
    | StateAccepted
    | StateSuperseded
)
