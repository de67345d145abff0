"""One local consumer of a topic (`swarm topic subscribe`, the HTTP stream): its messages in a
bounded channel; what a slow consumer missed is counted and told as a loss notice."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import trio

from swarm.live.advisory import Advisory
from swarm.live.events import AdvisoryEvent, LiveEvent, LossNotice
from swarm.live.messages import Stream

__all__ = ["TopicSubscription"]


class TopicSubscription:
    """One local consumer of a topic: its messages in a bounded channel; what a slow consumer
    missed is told as a loss notice before the next message."""

    def __init__(self, stream: Stream, backlog: int, on_drop: Callable[[Stream], None]) -> None:
        self.stream = stream
        self._in, self._out = trio.open_memory_channel[LiveEvent](backlog)
        self._on_drop = on_drop
        self.dropped = 0
        self._unreported = 0
        self._held: LiveEvent | None = None  # the event a loss notice went out before

    def deliver(self, event: LiveEvent) -> None:
        try:
            self._in.send_nowait(event)
        except trio.WouldBlock:
            if not isinstance(event, AdvisoryEvent):
                self.dropped += 1
                self._unreported += 1
                self._on_drop(self.stream)
        except trio.ClosedResourceError:
            pass

    def advise(self, advisory: Advisory) -> None:
        self.deliver(AdvisoryEvent(advisory))

    def close(self) -> None:
        self._in.close()

    async def receive(self) -> LiveEvent:
        """The next event (a loss notice first if messages were dropped since the last one).

        Cancel-safe: a timeout around it loses nothing, so a stream can wait with a keep-alive
        timer. Raises trio.EndOfChannel once the subscription is closed and read to its end.
        """
        if self._held is not None:
            event, self._held = self._held, None
            return event
        event = await self._out.receive()
        if self._unreported:
            lost, self._unreported = self._unreported, 0
            self._held = event
            return LossNotice(self.stream.name, lost, None, None, "dropped: the subscriber read too slowly")
        return event

    async def events(self) -> AsyncIterator[LiveEvent]:
        while True:
            try:
                yield await self.receive()
            except trio.EndOfChannel:
                return
