"""A space reader's log of processed messages, heartbeats compacted (pure).

Records keep the position they were given when appended, so a client paging through the log
(`GET /spaces/{space}/log?from=N`) never sees one twice nor misses one that is kept. A heartbeat
says nothing but how far its writer got, and a quiet member sends one every few seconds for as
long as the space lives: only the latest heartbeat of each member is kept, the one before it is
dropped when the next arrives. So the log holds at most one heartbeat per member, whatever their
number (a follower kept all of them, some 860 bytes each, for good).

Dropping marks the slot; the slots are squeezed out once they are half the log, so a dropped
heartbeat costs nothing, amortised.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass

from swarm.spaces.messages import Kind
from swarm.spaces.timeframe import OrderKey, Timeframe

__all__ = ["LogRecord", "SpaceLog"]


@dataclass(frozen=True, slots=True)
class LogRecord:
    """A processed message, without its body: who, which, where in the order, when written."""

    member: int
    key: OrderKey
    timeframe: Timeframe
    kind: Kind
    written_at: int
    late: bool = False

    @property
    def seq(self) -> int:
        return self.key.seq


class SpaceLog:
    """Records in the order appended, each at a stable position; one heartbeat per member."""

    def __init__(self) -> None:
        self._positions = array("Q")  # position of each slot, increasing
        self._slots: list[LogRecord | None] = []  # None: a heartbeat dropped
        self._dropped = 0
        self._heartbeat: dict[int, int] = {}  # member -> position of its kept heartbeat
        self.end = 0  # positions given so far: the next record's

    def append(self, record: LogRecord) -> int:
        """Add ``record``; returns its position. A heartbeat drops its member's previous one."""
        position = self.end
        if record.kind is Kind.HEARTBEAT:
            previous = self._heartbeat.get(record.member)
            if previous is not None:
                self._drop(previous)
            self._heartbeat[record.member] = position
        self._positions.append(position)
        self._slots.append(record)
        self.end += 1
        return position

    def extend(self, records: list[LogRecord]) -> None:
        for record in records:
            self.append(record)

    def page(self, start: int, limit: int) -> list[tuple[int, LogRecord]]:
        """Up to ``limit`` kept records at positions ``>= start``, with their positions."""
        out: list[tuple[int, LogRecord]] = []
        index = bisect_left(self._positions, start)
        while index < len(self._slots) and len(out) < limit:
            record = self._slots[index]
            if record is not None:
                out.append((self._positions[index], record))
            index += 1
        return out

    def _drop(self, position: int) -> None:
        index = bisect_left(self._positions, position)
        self._slots[index] = None
        self._dropped += 1
        if self._dropped * 2 > len(self._slots):
            kept = [i for i, record in enumerate(self._slots) if record is not None]
            self._positions = array("Q", (self._positions[i] for i in kept))
            self._slots = [self._slots[i] for i in kept]
            self._dropped = 0

    def __len__(self) -> int:
        """Records kept."""
        return len(self._slots) - self._dropped

    def __iter__(self) -> Iterator[LogRecord]:
        return (record for record in self._slots if record is not None)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SpaceLog | list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]
