"""A bounded priority outbox: what waits to be sent to one peer, most urgent first.

Three classes (seed 003, "Syncing" requirements): retrieval requests and their deliveries first
(control messages ride with them), live sync second, historical sync last. Each class has its own
bound, so a flood of historical deliveries can never delay a retrieval by more than what is
already on the wire, and a producer that finds its class full waits (backpressure): a slow peer
never makes memory grow (seed 004, "Pipeline").
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass
from typing import Generic, TypeVar

import trio

T = TypeVar("T")


class Priority(enum.IntEnum):
    """Send order: lower value first."""

    RETRIEVAL = 0
    LIVE = 1
    HISTORICAL = 2

    @classmethod
    def of_stream(cls, live: bool) -> Priority:
        """The class of every message of a pull-sync stream (docs/protocol.md 8.4)."""
        return cls.LIVE if live else cls.HISTORICAL


@dataclass(frozen=True)
class OutboxStatistics:
    queued: dict[str, int]
    capacity: int
    producers_waiting: int
    closed: bool


class PriorityOutbox(Generic[T]):
    """FIFO within a class, strict priority across classes, `capacity` items per class."""

    def __init__(self, capacity: int = 64) -> None:
        if capacity < 1:
            raise ValueError(f"outbox capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._queues: dict[Priority, deque[T]] = {p: deque() for p in Priority}
        self._not_full = {p: trio.lowlevel.ParkingLot() for p in Priority}
        self._not_empty = trio.lowlevel.ParkingLot()
        self._closed = False

    def put_nowait(self, item: T, priority: Priority) -> None:
        """Queue `item` or raise trio.WouldBlock if its class is full."""
        if self._closed:
            raise trio.ClosedResourceError("outbox is closed")
        queue = self._queues[priority]
        if len(queue) >= self.capacity:
            raise trio.WouldBlock
        queue.append(item)
        self._not_empty.unpark()

    async def put(self, item: T, priority: Priority) -> None:
        """Queue `item`, waiting while its class is full."""
        await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            try:
                self.put_nowait(item, priority)
            except trio.WouldBlock:
                await self._not_full[priority].park()
                # Woken, but maybe cancelled before running again: then this item must not be
                # queued (a stream cancelled at that moment would emit one message too many), and
                # the slot it was woken for goes to the next waiting producer instead.
                try:
                    await trio.lowlevel.checkpoint_if_cancelled()
                except trio.Cancelled:
                    self._not_full[priority].unpark()
                    raise
            else:
                await trio.lowlevel.cancel_shielded_checkpoint()
                return

    def get_nowait(self) -> T:
        """The most urgent item, or trio.WouldBlock; trio.EndOfChannel once closed and drained."""
        for priority, queue in self._queues.items():
            if queue:
                item = queue.popleft()
                self._not_full[priority].unpark()
                return item
        if self._closed:
            raise trio.EndOfChannel
        raise trio.WouldBlock

    async def get(self) -> T:
        """Wait for the most urgent item."""
        await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            try:
                item = self.get_nowait()
            except trio.WouldBlock:
                await self._not_empty.park()
            else:
                await trio.lowlevel.cancel_shielded_checkpoint()
                return item

    def close(self) -> None:
        """No more puts; waiting producers get trio.ClosedResourceError, the consumer drains."""
        self._closed = True
        for lot in self._not_full.values():
            lot.unpark_all()
        self._not_empty.unpark_all()

    def clear(self) -> int:
        """Drop everything queued (the peer is gone); returns how many items were dropped."""
        dropped = sum(len(q) for q in self._queues.values())
        for priority, queue in self._queues.items():
            queue.clear()
            self._not_full[priority].unpark_all()
        return dropped

    def __len__(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def statistics(self) -> OutboxStatistics:
        return OutboxStatistics(
            queued={p.name.lower(): len(q) for p, q in self._queues.items()},
            capacity=self.capacity,
            producers_waiting=sum(lot.statistics().tasks_waiting for lot in self._not_full.values()),
            closed=self._closed,
        )
