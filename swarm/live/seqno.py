"""raims' time-framed 64-bit sequence numbers: numbering topic messages, judging what arrives (pure).

A sequence number is ``frame << 35 | counter``: ``frame = nanoseconds >> 33`` (one frame is 2**33
ns, about 8.6 s; 29 bits last until the year 2115), the counter starts at 1 in every frame (35
bits, 34 billion messages), so a number is never 0 (raims doc/loss.adoc; include/raims/sub.h).
When a publisher moves to a new frame it carries its previous number in ``chain``. That makes a
subscriber able to tell, from one message and the last number it saw from that publisher, with
no persistent state:

- NEXT: the number after the last, or the first of a new frame chained to the last;
- SKIP: numbers missing, and how many (inside a frame, or up to the chained number);
- REPEAT: seen before (or too old to judge: stamped before the window's trailing edge);
- CYCLE: the publisher restarted (a new frame's counter 1 with no chain: it lost its state);
- LOSS_UNKNOWN: a new frame not chained to what we saw, so messages were lost, how many unknown;
- FIRST: the first message heard from that publisher.

`classify` follows raims' `SubDB::match_seqno` with two deliberate differences: a restart (counter
1, no chain, later time) is CYCLE rather than a loss of unknown size (raims folds both into
`EV_PUB_RESTART`; the issue asks to keep restarts apart from loss), and a number from an older
frame than the last is a REPEAT (late, the stream has moved on) rather than a fresh start.

The publisher (`PublisherSequence`) starts a stream at the current frame, or later: a restarted
node persists the last frame it started, and starts the next run above it, so that its numbers
never go back even when it restarts within one frame.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from swarm.live.window import GenerationWindow

__all__ = [
    "COUNTER_BITS",
    "FRAME_SHIFT",
    "PublisherSequence",
    "SeqState",
    "Status",
    "Verdict",
    "classify",
    "previous_of",
    "seqno_counter",
    "seqno_frame",
    "seqno_init",
    "seqno_time",
    "time_frame",
]

FRAME_SHIFT = 33
COUNTER_BITS = 35
COUNTER_MASK = (1 << COUNTER_BITS) - 1
MAX_FRAME = (1 << (64 - COUNTER_BITS)) - 1


def time_frame(ns: int) -> int:
    """The frame of a time in nanoseconds since the epoch."""
    return ns >> FRAME_SHIFT


def seqno_init(ns: int) -> int:
    """The number before the first of the frame of ``ns``: ``frame << 35`` (counter 0)."""
    return time_frame(ns) << COUNTER_BITS


def seqno_frame(seq: int) -> int:
    return seq >> COUNTER_BITS


def seqno_counter(seq: int) -> int:
    return seq & COUNTER_MASK


def seqno_time(seq: int) -> int:
    """The start of the frame of ``seq``, in nanoseconds."""
    return seqno_frame(seq) << FRAME_SHIFT


def previous_of(seq: int, chain: int) -> int | None:
    """The number a message follows, for Streamr's detector: ``seq - 1`` inside a frame, the chained
    number on a frame change, None (no reference) for the first message of a stream."""
    if seqno_counter(seq) > 1:
        return seq - 1
    return chain or None


class Status(enum.Enum):
    FIRST = "first"
    NEXT = "next"
    SKIP = "skip"
    REPEAT = "repeat"
    CYCLE = "cycle"
    LOSS_UNKNOWN = "loss-unknown"


@dataclass(frozen=True, slots=True)
class Verdict:
    status: Status
    lost: int = 0  # messages known missing before this one (SKIP only)
    missing: tuple[int, int] | None = None  # their numbers, inclusive (SKIP only)

    @property
    def delivered(self) -> bool:
        """Is the message shown to subscribers (everything but a repeat)?"""
        return self.status is not Status.REPEAT


@dataclass(frozen=True, slots=True)
class SeqState:
    """What a subscriber keeps per publisher of a topic: the last number and its time."""

    last_seq: int
    last_time: int


def _message_time(seq: int, time: int) -> int:
    """raims: the message's time if it lies in the number's frame, else the frame's start."""
    return time if seqno_frame(seq) == time_frame(time) else seqno_time(seq)


def classify(state: SeqState | None, seq: int, chain: int, time: int) -> tuple[Verdict, SeqState | None]:
    """Judge message ``(seq, chain, time)`` given what was last seen from its publisher; returns
    the verdict and the state to keep (unchanged on a repeat)."""
    when = _message_time(seq, time)
    new = SeqState(seq, when)
    if state is None:
        return Verdict(Status.FIRST), new
    last, last_time = state.last_seq, state.last_time
    if seq == last + 1:
        return Verdict(Status.NEXT), SeqState(seq, last_time)
    if seqno_frame(seq) == seqno_frame(last):
        if seq > last:
            return Verdict(Status.SKIP, seq - last - 1, (last + 1, seq - 1)), SeqState(seq, last_time)
        if seqno_counter(seq) == 1 and chain == 0 and time > last_time:
            return Verdict(Status.CYCLE), new  # restarted within the frame it had used
        return Verdict(Status.REPEAT), state
    if seqno_frame(seq) < seqno_frame(last):
        return Verdict(Status.REPEAT), state
    if chain == last:
        return Verdict(Status.NEXT), new
    if chain and seqno_frame(chain) == seqno_frame(last) and chain > last:
        return Verdict(Status.SKIP, chain - last, (last + 1, chain)), new
    if seqno_counter(seq) == 1 and chain == 0:
        return Verdict(Status.CYCLE), new
    return Verdict(Status.LOSS_UNKNOWN), new


class PublisherSequence:
    """Numbers one publisher's messages, per topic (raims' `Pub::next_seqno` and `PubTab`).

    A topic's stream starts at counter 1 of the current frame, or of ``min_frame`` if that is
    later (the frame after the last one a previous run of this publisher started). It moves to a
    new frame, carrying its last number in ``chain``, when its frame is ``stale_after`` frames
    behind the clock (raims moves when the topic falls behind the publish window's trailing edge)
    or its counter would overflow. The numbering of topics not published to for a while is
    forgotten with the window's rotations (their next message starts a new stream: a CYCLE).
    """

    def __init__(
        self, min_frame: int = 0, *, stale_after: int = 2, window: GenerationWindow[bytes, int] | None = None
    ) -> None:
        self.min_frame = min_frame
        self.stale_after = stale_after
        self._last = (
            window if window is not None else GenerationWindow(generations=2, entry_bytes=lambda seq: 80)
        )
        self.highest_frame = 0  # the highest frame a stream was started in (to persist)

    def next(self, topic: bytes, now_ns: int) -> tuple[int, int]:
        """The ``(seq, chain)`` of the next message on ``topic`` published at ``now_ns``."""
        last = self._last.get(topic)
        frame = max(time_frame(now_ns), self.min_frame)
        if last is None:
            seq, chain = self._start(frame), 0
        elif seqno_counter(last) == COUNTER_MASK or seqno_frame(last) + self.stale_after <= frame:
            seq, chain = self._start(max(frame, seqno_frame(last) + 1)), last
        else:
            seq, chain = last + 1, 0
        self._last.put(topic, seq, now_ns / 1e9)
        return seq, chain

    def _start(self, frame: int) -> int:
        if frame > MAX_FRAME:
            raise OverflowError(f"frame {frame} does not fit the 29 bits of a sequence number")
        self.highest_frame = max(self.highest_frame, frame)
        return frame << COUNTER_BITS | 1

    def __len__(self) -> int:
        return len(self._last)
