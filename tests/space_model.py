"""A naive model of a space for the ordering tests: writers with their own readers, a network
that delivers any message to any reader in any order unless a partition cuts the link, and the
brute-force answers (causal order, total order, shared map) computed from what was written."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from swarm.spaces.messages import Kind, SpaceMessage, compose, encode_message
from swarm.spaces.reader import SpaceReader
from swarm.spaces.spacelog import LogRecord
from swarm.spaces.timeframe import Delta, OrderKey, Timeframe, apply_delta

NOW = 1.0  # the model's clock unless a test moves it (``Space.now``); with the default
# ``inactive_after`` no member ever goes inactive


@dataclass(frozen=True)
class Written:
    member: int
    seq: int
    timeframe: Timeframe  # as the writer meant it, own entry included
    kind: Kind
    key: str = ""
    value: str = ""
    payload: bytes = b""

    @property
    def id(self) -> tuple[int, int]:
        return self.member, self.seq

    def deps(self) -> list[tuple[int, int]]:
        """The messages it directly depends on: the last one of each feed its timeframe covers."""
        return [(m, s) for m, s in enumerate(self.timeframe) if s >= 0]

    def order_key(self, owners: list[bytes]) -> OrderKey:
        """Computed from scratch: 1 + sum(entry + 1), the owner, the sequence number."""
        return OrderKey(1 + sum(s + 1 for s in self.timeframe), owners[self.member], self.seq)


def owners_for(count: int) -> list[bytes]:
    # deliberately not in member order, so the owner tie-break differs from the index order
    return [bytes([(7 * i + 3) % 11]) * 20 for i in range(count)]


@dataclass
class Space:
    """Writers 0..n-1, each with its own reader; extra passive readers; what is in flight."""

    writers: int
    passive: int
    capacity: int
    rng: random.Random
    owners: list[bytes] = field(init=False)
    readers: list[SpaceReader] = field(init=False)
    written: dict[tuple[int, int], Written] = field(default_factory=dict)
    pending: list[set[tuple[int, int]]] = field(init=False)  # per reader: written, not accepted
    group: list[int] = field(init=False)  # per reader: its side of the partition (0 when healed)
    inactive_after: float = 1e18
    now: float = NOW
    # per reader: every record its pumps returned, heartbeats included (its logs compact them)
    causal_logs: list[list[LogRecord]] = field(init=False)
    total_logs: list[list[LogRecord]] = field(init=False)

    def __post_init__(self) -> None:
        self.owners = owners_for(self.writers)
        self.readers = [
            SpaceReader(capacity=self.capacity, inactive_after=self.inactive_after) for _ in self.all()
        ]
        for reader in self.readers:
            for owner in self.owners:
                reader.add_member(owner, self.now)
        self.pending = [set() for _ in self.all()]
        self.group = [0 for _ in self.all()]
        self.causal_logs = [[] for _ in self.all()]
        self.total_logs = [[] for _ in self.all()]

    def pump(self, reader: int) -> None:
        causal, ordered = self.readers[reader].pump(self.now)
        self.causal_logs[reader] += causal
        self.total_logs[reader] += ordered

    def new_reader(self, reader: int) -> None:
        """Replace a reader by a fresh one that knows every member and holds nothing."""
        self.readers[reader] = SpaceReader(capacity=self.capacity, inactive_after=self.inactive_after)
        for owner in self.owners:
            self.readers[reader].add_member(owner, self.now)
        self.causal_logs[reader], self.total_logs[reader] = [], []

    def all(self) -> range:
        return range(self.writers + self.passive)

    def write(self, member: int, kind: Kind, key: str = "", value: str = "") -> Written:
        self.pump(member)
        view = self.readers[member].writer_view(member)
        assert view.pending_own == 0
        payload = compose(member, view.previous, view.timeframe, kind, text="hi", key=key, value=value)
        message = Written(member, view.next, view.timeframe, kind, key, value, payload)
        self.written[message.id] = message
        for other in self.all():
            self.pending[other].add(message.id)
        self.deliver(member, message.id)  # a writer reads its own message at once
        return message

    def write_dishonest(self, member: int, delta: Delta | None) -> Written:
        """A message claiming whatever ``delta`` says (None: bytes that are no message at all)."""
        seq = max((s + 1 for m, s in self.written if m == member), default=0)
        previous = self.written[(member, seq - 1)].timeframe if seq else ()
        if delta is None:
            message = Written(member, seq, previous, Kind.SAY, payload=b"\x01\x01garbage")
        else:
            timeframe = apply_delta(previous, delta, member, seq)
            payload = encode_message(SpaceMessage(Kind.SAY, delta, text="lie"))
            message = Written(member, seq, timeframe, Kind.SAY, payload=payload)
        self.written[message.id] = message
        for other in self.all():
            self.pending[other].add(message.id)
        return message

    def can_reach(self, reader: int, member: int) -> bool:
        return self.group[reader] == self.group[member]

    def deliver(self, reader: int, message: tuple[int, int]) -> bool:
        """Offer one message; True if taken (else it stays in flight, e.g. outside the window)."""
        taken = self.readers[reader].offer(*message, self.written[message].payload, self.now)
        if taken:
            self.pending[reader].discard(message)
        self.pump(reader)
        return taken

    def deliver_some(self, reader: int, count: int) -> None:
        choices = [m for m in self.pending[reader] if self.can_reach(reader, m[0])]
        for message in self.rng.sample(sorted(choices), min(count, len(choices))):
            self.deliver(reader, message)

    def partition(self) -> None:
        sides = [self.rng.randrange(2) for _ in range(self.writers)]
        self.group = sides + [self.rng.randrange(2) for _ in range(self.passive)]

    def heal(self) -> None:
        self.group = [0 for _ in self.all()]

    def settle(self, reader: int, messages: set[tuple[int, int]] | None = None) -> None:
        """Offer the messages (default: every one in flight) until nothing more is taken."""
        wanted = set(self.pending[reader]) if messages is None else set(messages)
        while True:
            order = sorted(wanted & self.pending[reader])
            self.rng.shuffle(order)
            taken = [m for m in order if self.deliver(reader, m)]
            if not taken:
                return

    # -- the naive answers --------------------------------------------------------------------

    def causal_past(self, message: tuple[int, int]) -> set[tuple[int, int]]:
        past: set[tuple[int, int]] = set()
        stack = [message]
        while stack:
            for dep in self.written[stack.pop()].deps():
                if dep not in past:
                    past.add(dep)
                    stack.append(dep)
        return past

    def sorted_by_key(self, among: set[tuple[int, int]] | None = None) -> list[tuple[int, int]]:
        messages = self.written if among is None else among
        return sorted(messages, key=lambda m: self.written[m].order_key(self.owners))

    def naive_state(self) -> dict[str, str]:
        """Last writer wins per key, "last" in the total order; empty values clear."""
        state: dict[str, str] = {}
        for message in self.sorted_by_key():
            written = self.written[message]
            if written.kind is Kind.SET:
                state[written.key] = written.value
        return {k: v for k, v in state.items() if v}


def compacted(records: list[LogRecord]) -> list[LogRecord]:
    """The naive log compaction: every record but the heartbeats followed by a later heartbeat
    of the same member."""
    last = {r.member: i for i, r in enumerate(records) if r.kind is Kind.HEARTBEAT}
    return [r for i, r in enumerate(records) if r.kind is not Kind.HEARTBEAT or last[r.member] == i]
