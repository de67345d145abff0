"""Loss advisories: tell local followers that something was lost, at once but never in a flood (pure).

raims/sassrv publish `_RV.ERROR.SYSTEM.DATALOSS.INBOUND.BCAST` with the total lost and up to 9
subjects with their counts; the first loss is published at once, later ones at most once a
second (a timer flushes what accumulated). This does the same for feeds and topics, and adds
what the research recommends: the *ranges* that went missing (so a consumer can fill them itself,
a feed's from the swarm), and restarts kept apart from loss (a publisher that restarted lost its
numbering, not messages).

`AdvisoryThrottle.record` takes each loss as it is found and returns an advisory when one may go
out now; `flush` (called by a timer) returns what accumulated once the second is up.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MAX_LOST", "MAX_RANGES", "MAX_STREAMS", "Advisory", "AdvisoryThrottle", "StreamLoss"]

MAX_STREAMS = 9
"""Streams listed by name in one advisory (raims: sub1..sub9); the rest are only counted."""
MAX_RANGES = 16
"""Missing ranges listed per stream; more are counted in ``ranges_dropped``."""
MAX_LOST = 0x7FFFFFFF


@dataclass(frozen=True)
class StreamLoss:
    stream: str  # the stream's name
    lost: int  # messages known lost (an unknown-size loss counts 1)
    unknown: int  # losses of unknown size among them
    restarts: int  # publisher restarts (not counted as lost)
    ranges: tuple[tuple[int, int], ...]  # missing numbers, inclusive (feed indices or seqs)
    ranges_dropped: int = 0


@dataclass(frozen=True)
class Advisory:
    at: float
    lost: int  # total over every stream, capped at MAX_LOST
    restarts: int
    stream_count: int  # streams with loss or restarts since the last advisory
    streams: tuple[StreamLoss, ...]  # the MAX_STREAMS with most loss

    @property
    def description(self) -> str:
        """raims' ADV_DESC: "lost msgs", or what it was when nothing of known size was lost."""
        if self.lost and any(s.lost > s.unknown for s in self.streams):
            return "lost msgs"
        if self.lost:
            return "lost seqno tracking"
        return "publisher restarted"


@dataclass
class _Pending:
    lost: int = 0
    unknown: int = 0
    restarts: int = 0
    ranges: list[tuple[int, int]] = field(default_factory=list)
    ranges_dropped: int = 0


class AdvisoryThrottle:
    """Accumulates losses per stream; lets an advisory out at once, then at most one per interval."""

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self._pending: dict[str, _Pending] = {}
        self._last_sent: float | None = None
        self.sent = 0

    def record(
        self,
        stream: str,
        now: float,
        *,
        lost: int = 0,
        ranges: tuple[tuple[int, int], ...] = (),
        unknown: int = 0,
        restart: bool = False,
    ) -> Advisory | None:
        """A loss found on ``stream``; the advisory to send now, if the throttle allows one."""
        entry = self._pending.setdefault(stream, _Pending())
        entry.lost += lost + unknown
        entry.unknown += unknown
        entry.restarts += restart
        for start, end in ranges:
            if len(entry.ranges) < MAX_RANGES:
                entry.ranges.append((start, end))
            else:
                entry.ranges_dropped += 1
        return self.flush(now)

    def flush(self, now: float) -> Advisory | None:
        """The accumulated advisory, if there is one and the interval since the last is up."""
        if not self._pending or (self._last_sent is not None and now - self._last_sent < self.interval):
            return None
        ranked = sorted(self._pending.items(), key=lambda item: (-item[1].lost, -item[1].restarts, item[0]))
        streams = tuple(
            StreamLoss(name, p.lost, p.unknown, p.restarts, tuple(p.ranges), p.ranges_dropped)
            for name, p in ranked[:MAX_STREAMS]
        )
        advisory = Advisory(
            at=now,
            lost=min(sum(p.lost for p in self._pending.values()), MAX_LOST),
            restarts=sum(p.restarts for p in self._pending.values()),
            stream_count=len(self._pending),
            streams=streams,
        )
        self._pending.clear()
        self._last_sent = now
        self.sent += 1
        return advisory

    def next_flush(self) -> float | None:
        """When `flush` can next return something (None: nothing is waiting)."""
        if not self._pending:
            return None
        return self._last_sent + self.interval if self._last_sent is not None else 0.0
