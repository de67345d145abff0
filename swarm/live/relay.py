"""The relay's judgement of one pushed message: new, repeat, not subscribed, invalid (pure).

Every message a peer pushes (and every one published here) passes `Relay.judge` once, in an
order that keeps the expensive part off the common path and never lets a forgery poison the
state:

1. **not subscribed**: nobody here follows the stream and no other peer wants it pushed on;
2. **too old**: a topic message stamped before the window's trailing edge (raims): a repeat;
3. **repeat**: the chain's duplicate detector (Streamr's, `swarm.live.detector`) has seen its
   edge; a repeated feed update that differs from the one stored is an *equivocation*;
4. **invalid**: a broken numbering (the detector raised), or a signature that does not check
   (the SOC of a feed update, the secp256k1 signature of a topic message) or a malformed body;
5. **new**: only now is the edge marked in the detector, and the message is to be delivered to
   local followers and pushed on to the peers that want it.

The detectors live in a `GenerationWindow` (raims' rotating generations), so a relay's memory
stays flat however many publishers pass through. Every verdict is counted in the `LossTable`
under the peer that pushed the message; nothing here raises for anything a peer sends.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from chunks.feeds import FeedUpdate, update_address
from chunks.soc import equivocation
from streamer.messages import FeedPush, TopicPush
from swarm.live.detector import DEFAULT_MAX_GAPS, DuplicateDetector, GapMismatch, InvalidNumbering
from swarm.live.interest import InterestTable
from swarm.live.loss import LossTable
from swarm.live.messages import (
    Chain,
    InvalidLiveMessage,
    Stream,
    chain_of,
    check_feed_push,
    check_topic_push,
    edge_of,
    stream_of,
)
from swarm.live.stream_counts import StreamCounts
from swarm.live.window import GenerationWindow

__all__ = ["DEFAULT_SKEW", "Judgement", "Outcome", "Relay", "detector_bytes"]

DEFAULT_SKEW = 2.0
"""Seconds a topic message's clock may lag this node's and still be judged (raims estimates the
skew per peer; nodes on one machine or with NTP are well within this)."""


class Outcome(enum.Enum):
    NEW = "new"
    REPEAT = "repeat"
    NOT_SUBSCRIBED = "not_subscribed"
    INVALID = "invalid"
    EQUIVOCATION = "equivocations"


@dataclass(frozen=True, slots=True)
class Judgement:
    outcome: Outcome
    stream: Stream
    reason: str = ""
    update: FeedUpdate | None = None  # a new feed update, checked


def detector_bytes(detector: DuplicateDetector) -> int:
    """Estimated memory of a chain's state in the window: its key, the detector, its gaps
    (benches/live_memory.py measures about 525 bytes per chain of one gap in CPython 3.11)."""
    return 450 + 72 * len(detector)


class Relay:
    """Judges pushed messages; keeps one duplicate detector per chain, in a rotating window."""

    def __init__(
        self,
        interest: InterestTable,
        loss: LossTable,
        *,
        window: GenerationWindow[Chain, DuplicateDetector] | None = None,
        lookup: Callable[[bytes], bytes | None] = lambda address: None,
        evidence: Callable[[bytes, bytes, bytes], object] = lambda address, first, second: None,
        max_gaps: int = DEFAULT_MAX_GAPS,
        skew: float = DEFAULT_SKEW,
    ) -> None:
        self.interest = interest
        self.loss = loss
        self.detectors = window if window is not None else GenerationWindow(entry_bytes=detector_bytes)
        self._lookup = lookup  # chunk data this node holds at an address (store, then cache)
        self._evidence = evidence  # keeps an equivocation's two signed chunks
        self.max_gaps = max_gaps
        self.skew = skew
        self.received = 0
        self.accepted = 0
        self.streams = StreamCounts()  # judged messages per stream, for the dashboard
        self.bytes_received = 0
        self.bytes_accepted = 0

    def judge(self, msg: FeedPush | TopicPush, peer: bytes | None, source: str, now: float) -> Judgement:
        """Judge ``msg`` pushed by ``peer`` (None: published here; ``source`` names the loss row),
        at wall-clock time ``now``; a NEW message has been marked seen."""
        size = len(msg.data) if isinstance(msg, FeedPush) else len(msg.payload)
        self.received += 1
        self.bytes_received += size
        judgement = self._judge(msg, peer, now)
        self.streams.add(judgement.stream.name, judgement.outcome.value, now)
        if judgement.outcome is Outcome.NEW:
            self.accepted += 1
            self.bytes_accepted += size
        else:
            self.loss.add(source, judgement.outcome.value, now)
        return judgement

    def _judge(self, msg: FeedPush | TopicPush, peer: bytes | None, now: float) -> Judgement:
        stream = stream_of(msg)
        if peer is not None and not self.interest.relays(stream, peer):
            return Judgement(Outcome.NOT_SUBSCRIBED, stream)
        if isinstance(msg, TopicPush) and msg.time / 1e9 + self.skew < self.detectors.trailing_time:
            return Judgement(Outcome.REPEAT, stream, "older than the window's trailing edge")
        chain = chain_of(msg)
        previous, number = edge_of(msg)
        detector = self.detectors.get(chain)
        if detector is not None:
            try:
                if not detector.is_new(previous, number):
                    return self._repeat(msg, stream)
            except (InvalidNumbering, GapMismatch) as exc:
                return Judgement(Outcome.INVALID, stream, f"{stream.name}: broken numbering: {exc}")
        try:
            update = check_feed_push(msg) if isinstance(msg, FeedPush) else None
            if isinstance(msg, TopicPush):
                check_topic_push(msg)
        except InvalidLiveMessage as exc:
            return Judgement(Outcome.INVALID, stream, f"{stream.name}: {exc}")
        if isinstance(msg, FeedPush) and update is not None and self._equivocates(msg, update.soc.address):
            return Judgement(
                Outcome.EQUIVOCATION, stream, f"{stream.name}: two updates at index {update.index}"
            )
        if detector is None:
            detector = DuplicateDetector(self.max_gaps)
            self.detectors.put(chain, detector, now)
        detector.mark_and_check(previous, number)
        self.detectors.resized(chain)
        return Judgement(Outcome.NEW, stream, update=update)

    def _repeat(self, msg: FeedPush | TopicPush, stream: Stream) -> Judgement:
        if isinstance(msg, FeedPush):
            address = update_address(msg.owner, msg.topic, msg.index)
            if self._equivocates(msg, address):
                return Judgement(
                    Outcome.EQUIVOCATION, stream, f"{stream.name}: two updates at index {msg.index}"
                )
        return Judgement(Outcome.REPEAT, stream)

    def _equivocates(self, msg: FeedPush, address: bytes) -> bool:
        """Does this node hold another valid update at the address, wrapping other content? If so
        the pair is kept as evidence (the owner signed both)."""
        held = self._lookup(address)
        if held is None or held == msg.data or equivocation(address, held, msg.data) is None:
            return False
        self._evidence(address, held, msg.data)
        return True

    def seen(self, chain: Chain, number: int) -> bool:
        """Whether message ``number`` of ``chain`` was seen here (as far as the window remembers)."""
        detector = self.detectors.get(chain)
        return detector is not None and detector.seen(number)

    def rotate(self, now: float) -> bool:
        return self.detectors.rotate_if_due(now)
