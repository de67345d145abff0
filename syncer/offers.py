"""Upstream side of one subscribed stream: which ranges to offer next, and checking wants (pure).

A stream is one (bin, live) pair of the upstream's pull index, subscribed over `[start, end]`
(`end = 0`: live, open-ended). The upstream offers consecutive ranges of at most 128 bin IDs and
keeps at most `window` offers unanswered; every want must answer the oldest-but-any open offer by
its exact range, and may only set bits for hashes that offer carried, never for an entry a proven
offer marked as a hole (docs/protocol.md 8.6).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from streamer.errors import RemoteProtocolError
from streamer.messages import MAX_BATCH_SIZE, OFFER_WINDOW


class UnexpectedWant(RemoteProtocolError):
    """A want that answers no open offer, or wants a hash the offer did not carry."""


@dataclass(frozen=True)
class Offer:
    """An offer sent downstream: bin IDs `[start, end]` and the hashes found there."""

    start: int
    end: int
    hashes: tuple[bytes, ...]
    holes: frozenset[int] = frozenset()


class StreamOffers:
    """Offer bookkeeping for one subscription on the upstream."""

    def __init__(self, bin: int, live: bool, start: int, end: int, *, window: int = OFFER_WINDOW) -> None:
        if start < 1:
            raise ValueError(f"stream start must be >= 1, got {start}")
        if live and end != 0:
            raise ValueError(f"a live stream is open-ended (end 0), got end {end}")
        if not live and end < start:
            raise ValueError(f"historical stream range [{start}, {end}] is empty")
        if window < 1:
            raise ValueError(f"offer window must be >= 1, got {window}")
        self.bin = bin
        self.live = live
        self.start = start
        self.end = end
        self.window = window
        self._next = start  # first bin ID not offered yet
        self._open: dict[int, Offer] = {}  # offer start -> offer, unanswered

    @property
    def next_id(self) -> int:
        """The first bin ID not offered yet."""
        return self._next

    def exhausted(self) -> bool:
        """Every ID of a historical stream has been offered (never true for a live one)."""
        return not self.live and self._next > self.end

    def finished(self) -> bool:
        """Historical stream fully offered and every offer answered: the stream is over."""
        return self.exhausted() and not self._open

    def first(self, start: int) -> bool:
        """Whether an offer starting at ``start`` is the subscription's first (a historical proven
        offer then carries the frontier before it)."""
        return start == self.start

    def can_offer(self) -> bool:
        return not self.exhausted() and len(self._open) < self.window

    def next_range(self, cursor: int) -> tuple[int, int] | None:
        """The range the next offer should cover given the bin's cursor, or None if none yet."""
        if not self.can_offer():
            return None
        last = cursor if self.live else min(cursor, self.end)
        if last < self._next:
            return None
        return self._next, min(last, self._next + MAX_BATCH_SIZE - 1)

    def offered(self, start: int, end: int, hashes: Sequence[bytes], holes: Iterable[int] = ()) -> Offer:
        """Record an offer of `[start, end]` (which must continue where the last one ended);
        ``holes``: indices of entries it marks as not deliverable."""
        if start != self._next or end < start or (not self.live and end > self.end):
            raise ValueError(
                f"offer [{start}, {end}] does not continue stream at {self._next} (end {self.end})"
            )
        if len(hashes) > MAX_BATCH_SIZE:
            raise ValueError(f"offer carries {len(hashes)} hashes, at most {MAX_BATCH_SIZE}")
        if len(self._open) >= self.window:
            raise ValueError(f"offer window of {self.window} is full")
        offer = Offer(start, end, tuple(hashes), frozenset(holes))
        self._open[start] = offer
        self._next = end + 1
        return offer

    def offered_chunks(self, start: int) -> list[bytes]:
        """The chunks the open offer at `start` offers: its hashes but the holes (none if there
        is no such offer)."""
        offer = self._open.get(start)
        if offer is None:
            return []
        return [address for i, address in enumerate(offer.hashes) if i not in offer.holes]

    def answer(self, start: int, end: int, wanted: Sequence[int]) -> list[tuple[int, bytes]]:
        """Close the offer `[start, end]`; returns the (index, address) pairs to deliver."""
        offer = self._open.get(start)
        if offer is None or offer.end != end:
            raise UnexpectedWant(f"want for bin {self.bin} range [{start}, {end}] answers no open offer")
        bad = [i for i in wanted if not 0 <= i < len(offer.hashes)]
        if bad:
            raise UnexpectedWant(
                f"want for bin {self.bin} offer {start} sets bit {bad[0]} but the offer "
                f"carried {len(offer.hashes)} hashes"
            )
        holes = sorted(offer.holes.intersection(wanted))
        if holes:
            raise UnexpectedWant(f"want for bin {self.bin} offer {start} asks for entry {holes[0]}, a hole")
        del self._open[start]
        return [(i, offer.hashes[i]) for i in wanted]

    @property
    def unanswered(self) -> int:
        return len(self._open)
