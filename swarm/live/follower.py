"""One local follower of a feed: the trio shell around `FeedOrder` and `GapSchedule`.

It starts where asked (``start``; by default after the latest update a lookup finds), catches up
by retrieving what was published before, then shows updates as relays push them, in index order,
exactly once. An update missing when a later one arrives is waited for (stragglers), then
retrieved through the swarm by its address, several at a time; a light follower gives it up
after a few tries and says so, a full one keeps trying. Every `probe_interval` it also asks for
the update after the last one it knows of, in case the newest ones were pushed while it was not
reachable. A failed retrieval never stops it: it is counted and tried again.

What it shows goes out through ``events`` (a bounded channel the consumer reads); when the
consumer is slow the follower stops taking pushes (they are dropped, to be retrieved later).
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

import trio

from chunks.feeds import FeedUpdate, parse_update, update_address
from chunks.invalid import InvalidChunk
from swarm.feeds.finder import find_latest
from swarm.live.advisory import Advisory
from swarm.live.events import AdvisoryEvent, FollowStarted, LiveEvent, LossNotice, UpdateShown
from swarm.live.feed_order import FeedOrder, GapSchedule, Ready, Skipped
from swarm.live.messages import Stream

__all__ = ["FeedFollower", "FollowerConfig", "FollowerHooks"]

log = logging.getLogger(__name__)

Fetch = Callable[[bytes], Awaitable[bytes | None]]
"""Chunk data at an address from the swarm, or None (not found, or no answer in time)."""


@dataclass(frozen=True)
class FollowerConfig:
    gap_wait: float = 5.0  # Streamr's gapFillTimeout
    gap_retry: float = 5.0  # Streamr's retryResendAfter
    gap_tries: int = 5  # Streamr's maxGapRequests
    parallel: int = 8  # retrievals at once
    probe_interval: float = 10.0
    lookup_timeout: float = 3.0  # per probe of the start-up lookup
    max_pending: int = 256  # updates held ahead of the next one
    inbox: int = 256  # pushed updates waiting to be ordered
    backlog: int = 64  # events the consumer has not read yet


class FollowerHooks(Protocol):
    """What the node counts for its loss table and advisories."""

    def gap_filled(self, stream: Stream) -> None: ...

    def fetch_failed(self, stream: Stream) -> None: ...

    def fetched_invalid(self, stream: Stream, reason: str) -> None: ...

    def lost(self, stream: Stream, start: int, end: int) -> None: ...


class FeedFollower:
    """Follows one feed for one local consumer."""

    def __init__(
        self,
        stream: Stream,
        *,
        start: int | None,
        mode: str,
        fetch: Fetch,
        hooks: FollowerHooks,
        config: FollowerConfig = FollowerConfig(),
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.stream = stream
        self.mode = mode
        self.config = config
        self.requested_start = start
        self._fetch_data = fetch
        self._hooks = hooks
        self._wall = wall
        self.schedule = GapSchedule(
            mode=mode,
            wait=config.gap_wait,
            retry=config.gap_retry,
            max_tries=config.gap_tries,
            parallel=config.parallel,
        )
        self.order: FeedOrder[tuple[FeedUpdate, str]] | None = None
        self._inbox_in, self._inbox = trio.open_memory_channel[FeedUpdate](config.inbox)
        self._events_in, self.events = trio.open_memory_channel[LiveEvent](config.backlog)
        self._out: deque[LiveEvent] = deque()
        self._out_changed = trio.Event()
        self._changed = trio.Event()
        self._catch_up_end = -1  # updates up to here existed when we started: not gaps
        self._known_end = -1  # updates up to here are known to exist (lookups, probes): no wait
        self.dropped = 0  # pushes dropped because the inbox was full

    # -- from the node ------------------------------------------------------------------------

    def deliver(self, update: FeedUpdate) -> None:
        """A pushed update (checked by the relay); never blocks."""
        try:
            self._inbox_in.send_nowait(update)
        except trio.WouldBlock:
            self.dropped += 1  # it will be found missing and retrieved
        except trio.ClosedResourceError:
            pass

    def advise(self, advisory: Advisory) -> None:
        self._emit([AdvisoryEvent(advisory)])

    def close(self) -> None:
        """The follower has stopped: its consumer's ``events`` ends."""
        self._inbox_in.close()
        self._events_in.close()

    @property
    def open_gaps(self) -> int:
        return self.schedule.open_gaps

    # -- running -------------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Follow until cancelled."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._emit_loop)
            task_status.started()
            await self._start()
            nursery.start_soon(self._fill_loop, nursery)
            nursery.start_soon(self._probe_loop)
            await self._receive_loop()

    async def _start(self) -> None:
        owner, topic, start = self.stream.owner, self.stream.topic, self.requested_start
        latest_update = await find_latest(
            self._fetch_data,
            owner,
            topic,
            start=start or 0,
            probe_timeout=self.config.lookup_timeout,
        )
        latest = latest_update.index if latest_update is not None else None
        next_index = start if start is not None else (latest + 1 if latest is not None else 0)
        self.order = FeedOrder(next_index, max_pending=self.config.max_pending)
        self._emit([FollowStarted(self.stream.name, next_index, latest, self.mode)])
        if latest is not None and latest >= next_index:
            self._catch_up_end = self._known_end = latest
            self.order.known(latest)
            assert latest_update is not None
            self._offer(latest_update, "catch-up")
        self._poke()

    async def _receive_loop(self) -> None:
        async for update in self._inbox:
            while len(self._out) >= self.config.backlog:  # the consumer is slow: stop taking pushes
                await self._wait_out_changed()
            self._offer(update, "push")

    def _offer(self, update: FeedUpdate, via: str) -> None:
        assert self.order is not None
        events = self.order.offer(update.index, (update, via))
        self.schedule.arrived(update.index)
        if events is not None:
            self._show(events)
        self._poke()

    def _show(self, events: list[Ready[tuple[FeedUpdate, str]] | Skipped]) -> None:
        out: list[LiveEvent] = []
        for event in events:
            if isinstance(event, Ready):
                update, via = event.update
                out.append(UpdateShown(update, via, self._wall()))
            else:
                lost = event.end - event.start + 1
                out.append(LossNotice(self.stream.name, lost, event.start, event.end, "not found in time"))
                self._hooks.lost(self.stream, event.start, event.end)
        self._emit(out)

    # -- filling gaps --------------------------------------------------------------------------

    def _note_missing(self, now: float) -> None:
        assert self.order is not None
        for index in self.order.missing(limit=self.config.max_pending):
            if index in self.schedule:
                continue
            if index <= self._catch_up_end:
                self.schedule.note([index], now, wait=False, gap=False)
            else:
                self.schedule.note([index], now, wait=index > self._known_end)

    async def _fill_loop(self, nursery: trio.Nursery) -> None:
        while True:
            now = trio.current_time()
            self._note_missing(now)
            for index in self.schedule.due(now):
                nursery.start_soon(self._fill, index)
            due = self.schedule.next_due()
            with trio.move_on_at(due if due is not None else math.inf):
                await self._changed.wait()
            self._changed = trio.Event()

    async def _fill(self, index: int) -> None:
        data = await self._fetch_data(update_address(self.stream.owner, self.stream.topic, index))
        update = None
        if data is not None:
            try:
                update = parse_update(self.stream.owner, self.stream.topic, index, data)
            except InvalidChunk as exc:
                self._hooks.fetched_invalid(self.stream, str(exc))
        if update is not None:
            gap = self.schedule.succeeded(index)
            if gap:
                self._hooks.gap_filled(self.stream)
            self._offer(update, "fill" if gap else "catch-up")
            return
        if index in self.schedule:
            self._hooks.fetch_failed(self.stream)
        if self.schedule.failed(index, trio.current_time()):
            assert self.order is not None
            self._show(self.order.give_up(index))
        self._poke()

    async def _probe_loop(self) -> None:
        """Every probe_interval, look for updates after the last one known to exist (pushes that
        never reached this node); what it finds is fetched at once."""
        while True:
            await trio.sleep(self.config.probe_interval)
            assert self.order is not None
            try:
                latest = await find_latest(
                    self._fetch_data,
                    self.stream.owner,
                    self.stream.topic,
                    start=self.order.horizon,
                    probe_timeout=self.config.lookup_timeout,
                )
            except InvalidChunk as exc:
                self._hooks.fetched_invalid(self.stream, str(exc))
                continue
            if latest is not None:
                self._known_end = max(self._known_end, latest.index)
                self.order.known(latest.index)
                self._offer(latest, "probe")

    # -- to the consumer -----------------------------------------------------------------------

    def _emit(self, events: list[LiveEvent]) -> None:
        if events:
            self._out.extend(events)
            self._out_changed.set()

    async def _wait_out_changed(self) -> None:
        await self._out_changed.wait()

    async def _emit_loop(self) -> None:
        while True:
            while self._out:
                await self._events_in.send(self._out[0])
                self._out.popleft()
                self._out_changed.set()
            self._out_changed = trio.Event()
            await self._out_changed.wait()

    def _poke(self) -> None:
        self._changed.set()
