"""How fast a peer may push live traffic: a token bucket per peer and kind, OVERLOADED on abuse (pure).

Every live message a peer sends costs this node work (a signature check, a detector, a relay to
every peer that wants the stream), and valid messages cost as much as forged ones, so
`swarm.live.flood`'s budget of invalid messages is not enough: one peer once sent 57,000 valid
messages in 20 s. Each peer gets two buckets, one for pushes (feed updates, topic messages) and
one for control words (interest, pause, have), each refilled at its rate up to its burst. A
message that finds its bucket empty is *throttled*: dropped by itself, counted, the connection
kept (an honest relay on a busy moment loses a few messages, which its followers see as a gap and
fill). A peer that keeps pushing into an empty bucket, more than `abuse` throttled messages in
`window` seconds (by default its rate times the window: sending twice its rate for a whole
window), is not honest: RemoteProtocolError, and the peer is dropped as OVERLOADED. A control
word costs one token per entry it carries (a `LiveInterest` holds up to 128).

State is per connected peer (`forget` when it leaves), so it is bounded by the connections.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from streamer.errors import RemoteProtocolError
from streamer.messages import FeedPush, GoodbyeCode, LiveHave, LiveInterest, LivePause, TopicPush

__all__ = ["CONTROL_LIMITS", "PUSH_BURST", "PUSH_RATE", "LiveRates", "PeerRates", "RateLimits", "TokenBucket"]

PUSH_RATE = 1000.0
"""Pushes per second a peer may send, sustained (the live bench's 393 updates/s through 6 nodes,
about 2 pushes each, is well inside)."""
PUSH_BURST = 2000.0


class TokenBucket:
    """`rate` tokens a second, at most `burst` kept; starts full."""

    def __init__(self, rate: float, burst: float, now: float) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"a token bucket needs rate > 0 and burst >= 1, got {rate}, {burst}")
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.stamp = now

    def take(self, now: float, cost: float = 1.0) -> bool:
        """Take `cost` tokens if there are that many (after refilling to `now`)."""
        if now > self.stamp:
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
        if self.tokens >= cost - 1e-9:  # a message exactly 1/rate after the last one is in time
            self.tokens = max(0.0, self.tokens - cost)
            return True
        return False


@dataclass(frozen=True)
class RateLimits:
    """The rates of one kind of live message."""

    rate: float = PUSH_RATE
    burst: float = PUSH_BURST
    window: float = 10.0
    abuse: int | None = None  # throttled in a window that drop the peer; None: rate x window

    @property
    def abuse_limit(self) -> int:
        return self.abuse if self.abuse is not None else int(self.rate * self.window)


CONTROL_LIMITS = RateLimits(rate=500.0, burst=10_000.0)
"""Interest, pause and have entries a peer may send: a whole table of followed streams at once
(up to 10,000, `swarm.live.interest.MAX_STREAMS_PER_PEER`), then 500 changes a second."""


@dataclass
class _Peer:
    bucket: TokenBucket
    window_start: float
    throttled_in_window: int = 0


@dataclass
class PeerRates:
    """One kind's bucket per peer, and what it throttled."""

    limits: RateLimits = field(default_factory=RateLimits)
    throttled: int = 0  # messages throttled, every peer, ever
    _peers: dict[bytes, _Peer] = field(default_factory=dict)

    def allow(self, peer: bytes, now: float, cost: int = 1) -> bool:
        """Whether a message from `peer` at `now` (of `cost` tokens) is within its rate; False:
        drop it (counted). RemoteProtocolError (OVERLOADED) once the peer abuses the limit."""
        state = self._peers.get(peer)
        if state is None:
            state = self._peers[peer] = _Peer(TokenBucket(self.limits.rate, self.limits.burst, now), now)
        if state.bucket.take(now, min(cost, self.limits.burst)):
            return True
        self.throttled += 1
        if now - state.window_start >= self.limits.window:
            state.window_start, state.throttled_in_window = now, 0
        state.throttled_in_window += 1
        if state.throttled_in_window > self.limits.abuse_limit:
            raise RemoteProtocolError(
                f"live traffic over its rate: {state.throttled_in_window} messages throttled in "
                f"{self.limits.window:g}s (the rate is {self.limits.rate:g}/s)",
                GoodbyeCode.OVERLOADED,
            )
        return False

    def forget(self, peer: bytes) -> None:
        self._peers.pop(peer, None)

    def __len__(self) -> int:
        return len(self._peers)


class LiveRates:
    """Both rates of every peer: its pushes and its control words."""

    def __init__(self, pushes: RateLimits, control: RateLimits = CONTROL_LIMITS) -> None:
        self.pushes = PeerRates(pushes)
        self.control = PeerRates(control)

    def allow(
        self, peer: bytes, msg: FeedPush | TopicPush | LiveInterest | LivePause | LiveHave, now: float
    ) -> bool:
        """Whether `msg` from `peer` is within its rate (`PeerRates.allow`)."""
        if isinstance(msg, FeedPush | TopicPush):
            return self.pushes.allow(peer, now)
        return self.control.allow(peer, now, len(msg.entries) if isinstance(msg, LiveInterest) else 1)

    def forget(self, peer: bytes) -> None:
        self.pushes.forget(peer)
        self.control.forget(peer)

    @property
    def throttled(self) -> int:
        return self.pushes.throttled + self.control.throttled
