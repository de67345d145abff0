"""What a subscribing node concludes about each topic message it delivers (pure).

The relay (`swarm.live.relay`) has already dropped what it saw before; this keeps, per topic and
publisher, the last sequence number delivered (raims' `SeqnoTab`, in a rotating window so that it
stays bounded) and classifies each message with `swarm.live.seqno.classify`: next, skip (and how
many), repeat, cycle (a publisher restart), loss of unknown size, or first.
"""

from __future__ import annotations

from streamer.messages import TopicPush
from swarm.live.messages import Chain, chain_of
from swarm.live.relay import DEFAULT_SKEW
from swarm.live.seqno import SeqState, Status, Verdict, classify
from swarm.live.window import GenerationWindow

__all__ = ["TopicReceiver"]


class TopicReceiver:
    """The last number delivered per (topic, publisher), and the verdict on the next."""

    def __init__(
        self, *, window: GenerationWindow[Chain, SeqState] | None = None, skew: float = DEFAULT_SKEW
    ) -> None:
        self.states = window if window is not None else GenerationWindow(entry_bytes=lambda state: 208)
        self.skew = skew

    def classify(self, msg: TopicPush, now: float) -> Verdict:
        """Judge ``msg`` (received at wall-clock ``now``) and remember it unless it is a repeat."""
        if msg.time / 1e9 + self.skew < self.states.trailing_time:
            return Verdict(Status.REPEAT)
        chain = chain_of(msg)
        verdict, state = classify(self.states.get(chain), msg.seq, msg.chain, msg.time)
        if verdict.status is not Status.REPEAT and state is not None:
            self.states.put(chain, state, now)
        return verdict
