"""Where a node's live losses are counted and told: the loss table, the advisories, the log.

`LossAccounting` is what followers report to (it is their `FollowerHooks`), what the relay path
hands each topic verdict, and what turns the throttled advisories into events for every local
consumer and a WARNING line. It keeps no I/O of its own: the consumers are given as a function.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from streamer.messages import TopicPush
from swarm.live.advisory import Advisory, AdvisoryThrottle
from swarm.live.loss import LOCAL, LossTable
from swarm.live.messages import Stream
from swarm.live.seqno import Status, Verdict

__all__ = ["AdvisoryListener", "LossAccounting"]

log = logging.getLogger(__name__)


class AdvisoryListener(Protocol):
    def advise(self, advisory: Advisory) -> None: ...


class LossAccounting:
    """Counts losses in the table and sends the advisories they produce."""

    def __init__(
        self,
        listeners: Callable[[], Iterable[AdvisoryListener]],
        *,
        interval: float = 1.0,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.table = LossTable()
        self.advisories = AdvisoryThrottle(interval)
        self._listeners = listeners
        self._wall = wall

    def topic_verdict(
        self, source: str, stream: Stream, msg: TopicPush, verdict: Verdict, now: float
    ) -> None:
        """Count what a subscriber's verdict says was lost (or restarted)."""
        publisher = f"{stream.name} from {msg.owner.hex()[:8]}"
        status = verdict.status
        if status is Status.REPEAT:
            self.table.add(source, "repeat", now)
        elif status is Status.SKIP:
            self.table.add(source, "msg_loss", now, verdict.lost)
            ranges = (verdict.missing,) if verdict.missing is not None else ()
            self.record(publisher, now, lost=verdict.lost, ranges=ranges)
        elif status is Status.LOSS_UNKNOWN:
            self.table.add(source, "msg_loss", now)
            self.record(publisher, now, unknown=1)
        elif status is Status.CYCLE:
            self.table.add(source, "restarts", now)
            self.record(publisher, now, restart=True)

    def record(
        self,
        stream: str,
        now: float,
        *,
        lost: int = 0,
        ranges: tuple[tuple[int, int], ...] = (),
        unknown: int = 0,
        restart: bool = False,
    ) -> None:
        """A loss found: into the next advisory, sent now if the throttle allows."""
        advisory = self.advisories.record(
            stream, now, lost=lost, ranges=ranges, unknown=unknown, restart=restart
        )
        if advisory is not None:
            self._advise(advisory)

    def flush(self, now: float) -> None:
        """The timer: send what accumulated, once the second since the last advisory is up."""
        advisory = self.advisories.flush(now)
        if advisory is not None:
            self._advise(advisory)

    def _advise(self, advisory: Advisory) -> None:
        names = ", ".join(
            f"{s.stream}: {s.lost} lost" + (f", {s.restarts} restarts" if s.restarts else "")
            for s in advisory.streams
        )
        log.warning(
            "live loss advisory (%s): %d lost, %d restarts in %d streams: %s",
            advisory.description,
            advisory.lost,
            advisory.restarts,
            advisory.stream_count,
            names,
        )
        for listener in self._listeners():
            listener.advise(advisory)

    # -- what followers report (FollowerHooks) ---------------------------------------------------

    def gap_filled(self, stream: Stream) -> None:
        self.table.add(LOCAL, "gaps_filled", self._wall())

    def fetch_failed(self, stream: Stream) -> None:
        self.table.add(LOCAL, "inbox_loss", self._wall())

    def fetched_invalid(self, stream: Stream, reason: str) -> None:
        self.table.add(LOCAL, "invalid", self._wall())
        log.warning("%s: a retrieved update is not valid: %s", stream.name, reason)

    def lost(self, stream: Stream, start: int, end: int) -> None:
        now = self._wall()
        self.table.add(LOCAL, "msg_loss", now, end - start + 1)
        self.record(stream.name, now, lost=end - start + 1, ranges=((start, end),))

    def dropped_for_slow_consumer(self, stream: Stream) -> None:
        now = self._wall()
        self.table.add(LOCAL, "msg_loss", now)
        self.record(stream.name, now, lost=1)
