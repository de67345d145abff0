"""The member feeds a space reader tracks, and what they say (pure, read-only queries).

`FeedBook` holds one `FeedTrack` per member in admission order; the causal engine
(`swarm.spaces.ordering.CausalOrderer`) extends it with the rules that move the feeds on. Kept
apart so the rules read without the accessors the reader, the status and the replica use.
"""

from __future__ import annotations

from swarm.spaces.feed_state import FeedState, FeedTrack, Missing, Wait
from swarm.spaces.timeframe import OrderKey, Timeframe

__all__ = ["FeedBook"]


class FeedBook:
    """The per-member feed tracks and the queries over them."""

    def __init__(self) -> None:
        self._feeds: list[FeedTrack] = []
        self._index: dict[bytes, int] = {}

    @property
    def members(self) -> int:
        return len(self._feeds)

    def owner(self, member: int) -> bytes:
        return self._feeds[member].owner

    def member_of(self, owner: bytes) -> int | None:
        return self._index.get(owner)

    def timeframe(self) -> Timeframe:
        """The processed timeframe: per member, the last sequence number processed (-1: none)."""
        return tuple(feed.next - 1 for feed in self._feeds)

    def last_timeframe(self, member: int) -> Timeframe:
        """The timeframe of ``member``'s last processed message (empty if none)."""
        return self._feeds[member].processed_tf

    def next_seq(self, member: int) -> int:
        return self._feeds[member].next

    def state(self, member: int) -> FeedState:
        return self._feeds[member].state

    def held(self, member: int) -> int:
        feed = self._feeds[member]
        return len(feed.decoded) + len(feed.raw)

    def held_total(self) -> int:
        return sum(len(feed.decoded) + len(feed.raw) for feed in self._feeds)

    def invalid(self, member: int) -> tuple[int, str] | None:
        feed = self._feeds[member]
        return None if feed.invalid_from is None else (feed.invalid_from, feed.invalid_reason)

    def frontier(self, member: int) -> OrderKey | None:
        """The order key of the last message of ``member`` held or processed without a hole
        before it: every message of the feed not held yet sorts after it. None: nothing yet."""
        feed = self._feeds[member]
        if feed.decoded:
            return feed.decoded[-1].key
        if feed.next:
            return OrderKey(feed.lamports[-1], feed.owner, feed.next - 1)
        return None

    def finished(self, member: int) -> bool:
        """Whether the feed can bring nothing more to process: invalid from a point it holds up to."""
        feed = self._feeds[member]
        return feed.invalid_from is not None and feed.held_end >= feed.invalid_from

    def last_heard(self, member: int) -> float:
        return self._feeds[member].last_heard

    def drained(self, member: int) -> bool:
        return self._feeds[member].drained

    def blocked_since(self, member: int) -> float | None:
        """Since when the next message of ``member`` waits for another one (None: it does not)."""
        feed = self._feeds[member]
        return feed.blocked_since if feed.state is FeedState.BLOCKED else None

    def set_drained(self, member: int, drained: bool) -> None:
        """The shell found nothing more of the feed to read (True), or found more (False)."""
        self._feeds[member].drained = drained

    def waits(self) -> list[Wait]:
        """Every blocked next message, what it waits for and since when."""
        return [
            Wait(f.index, f.next, f.waiting, f.blocked_since)
            for f in self._feeds
            if f.state is FeedState.BLOCKED and f.waiting is not None and f.blocked_since is not None
        ]

    def missing(self) -> list[Missing]:
        """The messages this reader lacks that processing waits for, following each wait through
        held messages that wait in turn, down to one that is not here."""
        found: dict[tuple[int, int | None], tuple[float, list[tuple[int, int]]]] = {}
        for wait in self.waits():
            target = self._root(wait.needs)
            since, by = found.get(target, (wait.since, []))
            found[target] = (min(since, wait.since), [*by, (wait.member, wait.seq)])
        return [
            Missing(member, seq, since, tuple(by))
            for (member, seq), (since, by) in sorted(found.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0))
        ]

    def _root(self, needs: tuple[int, int]) -> tuple[int, int | None]:
        seen: set[int] = set()
        member, _ = needs
        while True:
            if member >= len(self._feeds):
                return member, None
            dep = self._feeds[member]
            if dep.head() is None or member in seen or dep.waiting is None:
                return member, dep.next
            seen.add(member)
            member, _ = dep.waiting
