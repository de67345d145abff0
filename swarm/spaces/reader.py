"""A space reader (sans-IO): the causal engine, the total order stage, the shared map and the logs.

The shell (`swarm.spaces.replica`) tells it the members and the messages it fetched, calls
`pump` and serves what it holds; `now` is always passed in (wall-clock seconds), so everything
here is tested without an event loop. Two logs are kept: the *causal* log (the order this reader
processed messages in) and the *total* log (`swarm.spaces.total`, the same on every reader),
both as compact records without message bodies, which stay in the node's store, and keeping
only the latest heartbeat of each member (`swarm.spaces.spacelog`). The shared map
(`swarm.spaces.register`) is applied as messages are processed.
"""

from __future__ import annotations

from dataclasses import dataclass

from swarm.spaces.messages import Kind
from swarm.spaces.ordering import DEFAULT_CAPACITY, CausalOrderer, Invalidation, Missing, Processed, Wait
from swarm.spaces.register import LwwMap
from swarm.spaces.spacelog import LogRecord, SpaceLog
from swarm.spaces.timeframe import Timeframe
from swarm.spaces.total import DEFAULT_INACTIVE_AFTER, TotalOrder

__all__ = ["LogRecord", "MemberStatus", "SpaceReader", "SpaceStatus", "WriterView"]

MODES = ("causal", "total")


@dataclass(frozen=True, slots=True)
class MemberStatus:
    member: int
    owner: bytes
    processed: int  # messages processed (the next sequence number)
    held: int  # messages held, not processed yet
    state: str  # idle, waiting, ready
    waiting: Wait | None
    invalid: tuple[int, str] | None
    active: bool  # for total order: heard from within the inactivity timeout
    last_heard: float


@dataclass(frozen=True, slots=True)
class SpaceStatus:
    members: tuple[MemberStatus, ...]
    processed: int
    ordered: int  # in total order
    late: int
    pending: int  # processed, not in total order yet
    missing: tuple[Missing, ...]  # what processing waits for that this reader does not hold
    holding_back: tuple[int, ...]  # members the total order waits for
    invalidations: tuple[Invalidation, ...]

    @property
    def stalled(self) -> bool:
        return bool(self.missing)


@dataclass(frozen=True, slots=True)
class WriterView:
    """What a member needs to write its next message: its sequence number, the reader's
    processed timeframe (own entry included) and the timeframe of its previous message."""

    member: int
    next: int
    timeframe: Timeframe
    previous: Timeframe
    pending_own: int  # own messages held here, not processed yet: the view is stale while > 0


class SpaceReader:
    def __init__(
        self, *, capacity: int = DEFAULT_CAPACITY, inactive_after: float = DEFAULT_INACTIVE_AFTER
    ) -> None:
        self.orderer = CausalOrderer(capacity=capacity)
        self.total = TotalOrder(inactive_after=inactive_after)
        self.state = LwwMap()
        self.causal_log = SpaceLog()
        self.total_log = SpaceLog()
        self._unordered: dict[tuple[int, int], LogRecord] = {}  # processed, not in total order yet
        # False while the shell is still reading the member list: a member found later could
        # have written messages that sort first, so the total order waits
        self.members_complete = True

    @property
    def members(self) -> int:
        return self.orderer.members

    def add_member(self, owner: bytes, now: float) -> int:
        return self.orderer.add_member(owner, now)

    def offer(self, member: int, seq: int, payload: bytes, now: float) -> bool:
        return self.orderer.offer(member, seq, payload, now)

    def pump(self, now: float) -> tuple[list[LogRecord], list[LogRecord]]:
        """Process everything ready, then extend the total order; returns the new records of each log."""
        causal: list[LogRecord] = []
        for processed in self.orderer.drain(now):
            causal.append(self._record(processed))
        ordered: list[LogRecord] = []
        if not self.members_complete:
            return causal, ordered
        for entry in self.total.emit(self.orderer, now):
            record = self._unordered.pop((entry.member, entry.seq))
            if entry.late:
                record = LogRecord(
                    record.member, record.key, record.timeframe, record.kind, record.written_at, True
                )
            ordered.append(record)
        self.total_log.extend(ordered)
        return causal, ordered

    def _record(self, processed: Processed) -> LogRecord:
        message = processed.message
        record = LogRecord(
            processed.member, processed.key, processed.timeframe, message.kind, message.written_at
        )
        self._unordered[(processed.member, processed.seq)] = record
        self.causal_log.append(record)
        if message.kind is Kind.SET:
            self.state.apply(message.key, message.value, processed.key)
        self.total.add(processed.member, processed.key)
        return record

    def log(self, mode: str) -> SpaceLog:
        if mode not in MODES:
            raise ValueError(f"mode is one of {', '.join(MODES)}, not {mode!r}")
        return self.causal_log if mode == "causal" else self.total_log

    def writer_view(self, member: int) -> WriterView:
        orderer = self.orderer
        return WriterView(
            member,
            orderer.next_seq(member),
            orderer.timeframe(),
            orderer.last_timeframe(member),
            orderer.held(member),
        )

    def status(self, now: float) -> SpaceStatus:
        orderer = self.orderer
        waits = {wait.member: wait for wait in orderer.waits()}
        members = tuple(
            MemberStatus(
                member,
                orderer.owner(member),
                orderer.next_seq(member),
                orderer.held(member),
                orderer.state(member).value,
                waits.get(member),
                orderer.invalid(member),
                self.total.active(orderer, member, now),
                orderer.last_heard(member),
            )
            for member in range(orderer.members)
        )
        return SpaceStatus(
            members,
            orderer.processed,
            self.total.emitted,
            self.total.late,
            self.total.pending,
            tuple(orderer.missing()),
            tuple(self.total.holding_back(orderer, now)),
            tuple(orderer.invalidations),
        )
