"""Total order (sans-IO): the same sequence of messages on every reader, at some latency.

The causal engine processes a message as soon as it is ready; messages processed on different
readers in different orders are concurrent ones. This stage takes the processed messages and
emits them in `OrderKey` order, a message only once every *active* member is known to be past it:
its feed's frontier (the last message held without a hole before it, a heartbeat included)
sorts after it. Every message a member has not delivered yet sorts after that member's
frontier, and the causal engine has processed everything ready (order keys grow along causality,
so a held message sorting lower would be ready or wait on one sorting lower still), hence nothing
sorting before an emitted message can come later: the emitted sequence is the sort of all
messages by key, cut where knowledge ends, and identical on every reader that holds the same
messages. This is the Flink/Kafka watermark idea; DXOS has no total order.

A member silent for ``inactive_after`` seconds (nothing new from it arrived), with nothing more
of it waiting to be read, is **inactive**: it holds nothing back. A message of it that arrives
later and sorts before what was already emitted is emitted at once, flagged ``late`` (there the
total order of this reader departs from one that waited; the shared state does not, see
`swarm.spaces.register`). So are messages of members
admitted after the order passed their first message. A member that is invalid and holds every
message it still may send holds nothing back either.

A member whose next message has waited ``inactive_after`` seconds for a message this reader
does not get is inactive too, however much more of it arrives: nothing of it can be processed
until that message comes, and then what sorts before the emitted messages is ``late``, as for a
silent member. Without this a writer claiming a message that never comes (a reference ahead of
a feed, not provably a lie), and writing on, would hold every other member's messages out of
the total order for good: its feed's window fills, so it is never drained, never silent.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Protocol

from swarm.spaces.config import DEFAULT_INACTIVE_AFTER
from swarm.spaces.timeframe import OrderKey

__all__ = ["DEFAULT_INACTIVE_AFTER", "FrontierView", "Ordered", "TotalOrder"]

_BOTTOM = OrderKey(0, b"", 0)  # below every message: lamport is at least 1


class FrontierView(Protocol):
    """What the stage needs to know of the member feeds (`CausalOrderer` has it)."""

    @property
    def members(self) -> int: ...

    def frontier(self, member: int) -> OrderKey | None: ...

    def finished(self, member: int) -> bool: ...

    def last_heard(self, member: int) -> float: ...

    def drained(self, member: int) -> bool: ...

    def blocked_since(self, member: int) -> float | None: ...


@dataclass(frozen=True, slots=True)
class Ordered:
    """A message in total order; ``late`` if it came after messages sorting after it were emitted."""

    member: int
    key: OrderKey
    late: bool = False

    @property
    def seq(self) -> int:
        return self.key.seq


class TotalOrder:
    """Emits processed messages in key order once no member can still send one sorting before."""

    def __init__(self, *, inactive_after: float = DEFAULT_INACTIVE_AFTER) -> None:
        self.inactive_after = inactive_after
        self._pending: list[tuple[OrderKey, int]] = []
        self._late: list[Ordered] = []
        self.last: OrderKey | None = None
        self.emitted = 0
        self.late = 0

    @property
    def pending(self) -> int:
        return len(self._pending)

    def add(self, member: int, key: OrderKey) -> None:
        """A message the causal engine processed."""
        if self.last is not None and key < self.last:
            self._late.append(Ordered(member, key, late=True))
        else:
            heapq.heappush(self._pending, (key, member))

    def active(self, view: FrontierView, member: int, now: float) -> bool:
        """Heard of within ``inactive_after``, or with more of it waiting to be read; and not
        stalled that long (its next message waiting for one this reader does not get)."""
        blocked = view.blocked_since(member)
        if blocked is not None and now - blocked >= self.inactive_after:
            return False
        return not view.drained(member) or now - view.last_heard(member) < self.inactive_after

    def emit(self, view: FrontierView, now: float) -> list[Ordered]:
        """The messages that can take their place in the total order now, in order."""
        out, self._late = self._late, []
        self.late += len(out)
        lowest, lowest_member = self._lowest(view, now)
        while self._pending:
            key, member = self._pending[0]
            # a message of the member with the lowest frontier sorts at or below that frontier,
            # hence below every other member's: only messages of the others need the check
            if member != lowest_member and lowest is not None and not key < lowest:
                break
            heapq.heappop(self._pending)
            out.append(Ordered(member, key))
            self.last = key
        self.emitted += len(out)
        return out

    def holding_back(self, view: FrontierView, now: float) -> list[int]:
        """Active members whose frontier keeps the next pending message from being emitted."""
        if not self._pending:
            return []
        key, member = self._pending[0]
        return [m for m in self._counted(view, now) if m != member and (view.frontier(m) or _BOTTOM) <= key]

    def _counted(self, view: FrontierView, now: float) -> list[int]:
        return [m for m in range(view.members) if self.active(view, m, now) and not view.finished(m)]

    def _lowest(self, view: FrontierView, now: float) -> tuple[OrderKey | None, int]:
        """The lowest frontier among counted members and whose it is (None, -1: no member counts)."""
        lowest: OrderKey | None = None
        lowest_member = -1
        for member in self._counted(view, now):
            frontier = view.frontier(member) or _BOTTOM
            if lowest is None or frontier < lowest:
                lowest, lowest_member = frontier, member
        return lowest, lowest_member
