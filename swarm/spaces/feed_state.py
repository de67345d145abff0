"""What the causal engine (`swarm.spaces.ordering`) keeps per member feed, and the records it
hands out: processed messages, invalidations, waits and missing messages (pure)."""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass
from enum import Enum

from swarm.spaces.messages import SpaceMessage
from swarm.spaces.timeframe import OrderKey, Timeframe

__all__ = ["FeedState", "FeedTrack", "Held", "Invalidation", "Missing", "Processed", "Wait"]


class FeedState(Enum):
    IDLE = "idle"  # its next message is not here (or the feed is invalid from there)
    BLOCKED = "waiting"  # its next message waits for a message of another feed
    READY = "ready"


@dataclass(slots=True, eq=False)
class Held:
    """A decoded message waiting to be processed; ``needs`` its changed entries, checked in order."""

    seq: int
    message: SpaceMessage
    timeframe: Timeframe
    key: OrderKey
    needs: tuple[tuple[int, int], ...]
    cursor: int = 0


@dataclass(frozen=True, slots=True)
class Processed:
    """A message, processed: its member, sequence number, full timeframe and order key."""

    member: int
    seq: int
    key: OrderKey
    timeframe: Timeframe
    message: SpaceMessage

    @property
    def owner(self) -> bytes:
        return self.key.owner


@dataclass(frozen=True, slots=True)
class Invalidation:
    member: int
    seq: int
    reason: str
    at: float


@dataclass(frozen=True, slots=True)
class Wait:
    """Member ``member``'s next message ``seq`` waits for ``needs`` (member, seq) since ``since``."""

    member: int
    seq: int
    needs: tuple[int, int]
    since: float


@dataclass(frozen=True, slots=True)
class Missing:
    """A message this reader does not hold and processing waits for: ``(member, seq)``, or
    ``seq`` None when member ``member`` itself is not known yet; since when, and by whom."""

    member: int
    seq: int | None
    since: float
    needed_by: tuple[tuple[int, int], ...]


class FeedTrack:
    __slots__ = (
        "blocked_since",
        "decoded",
        "drained",
        "index",
        "invalid_from",
        "invalid_reason",
        "lamports",
        "last_heard",
        "next",
        "owner",
        "processed_tf",
        "raw",
        "registered",
        "state",
        "tail_lamport",
        "tail_tf",
        "waiters",
        "waiting",
    )

    def __init__(self, index: int, owner: bytes, now: float) -> None:
        self.index = index
        self.owner = owner
        self.next = 0  # first sequence number not processed
        self.raw: dict[int, bytes] = {}  # held past a hole, not decodable yet
        self.decoded: deque[Held] = deque()  # held and decoded: next, next + 1, ...
        self.tail_tf: Timeframe = ()  # timeframe of the last decoded message
        self.tail_lamport = 0
        self.lamports = array("Q")  # lamport of each processed message, by seq
        self.processed_tf: Timeframe = ()
        self.invalid_from: int | None = None
        self.invalid_reason = ""
        self.state = FeedState.IDLE
        self.waiting: tuple[int, int] | None = None
        self.registered = False  # whether a waiter for `waiting` is in that feed's heap
        self.blocked_since: float | None = None
        self.waiters: list[tuple[int, int]] = []  # (seq, feed index) of heads waiting on this feed
        # when the member was last heard of: its latest message arrived here (or it was admitted).
        # Not when the message was written: a node reading a feed again after a restart, or
        # catching up after a partition, must not take its writer for long gone
        self.last_heard = now
        # False while the shell knows of more to read of this feed (told by set_drained): a
        # member can only be taken for inactive when nothing more of it is waiting to be read
        self.drained = True

    @property
    def held_end(self) -> int:
        return self.next + len(self.decoded)

    def head(self) -> Held | None:
        return self.decoded[0] if self.decoded else None
