"""The causal ordering engine of a space reader (sans-IO): which member message to process next.

It is told the members as the member list grows (`add_member`) and their messages as they come
(`offer`, in any order, within a bounded window per feed), and `step()` hands out the next
message to process, or None when nothing is ready. A message is **ready** when everything its
timeframe covers has been processed (DXOS's rule); among ready messages the engine takes the one
with the smallest `OrderKey` ``(lamport, owner, seq)``, a tie-break that is the same on every
reader and itself a linear extension of the causal order (`swarm.spaces.timeframe`). DXOS takes
the first ready feed in the order its iterator added the feeds, which differs between replicas.

Only the entries a message changed need checking (the others were checked for its predecessor),
and a blocked message waits on one entry at a time, woken when that feed gets there: processing
a message costs O(entries changed + log feeds), not O(members).

**Invalid feeds.** A message that cannot be honest invalidates its feed from that message on
(never a crash, never a stall of the others): bytes that are not a message; a timeframe whose
order key does not exceed that of a message it covers (it claims less than it must have seen);
a dependency on an invalid message; or a cycle: messages held here that (through their
timeframes) wait for each other. Honest writers never form a cycle (each message of one would
have to have been processed before it was written), so every feed on one is invalid from its
first message that reaches it. A timeframe naming a message that does not exist yet is not
provably wrong until such a cycle closes: it stalls its feed, and `missing()` says on what.

**Bounded buffers.** A feed accepts messages only in ``[next, next + window)``, the window
``capacity // members`` (at least `MIN_WINDOW`): however slow processing is, the engine holds at
most ``max(capacity, MIN_WINDOW * members)`` messages.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from swarm.spaces.config import DEFAULT_CAPACITY
from swarm.spaces.cycles import reaching_cycles, ring_of_waits
from swarm.spaces.feed_state import FeedState, FeedTrack, Held, Invalidation, Missing, Processed, Wait
from swarm.spaces.feedbook import FeedBook
from swarm.spaces.messages import InvalidSpaceMessage, decode_message
from swarm.spaces.timeframe import MAX_MEMBERS, InvalidTimeframe, OrderKey, apply_delta

__all__ = [
    "DEFAULT_CAPACITY",
    "MIN_WINDOW",
    "CausalOrderer",
    "FeedState",
    "Invalidation",
    "Missing",
    "Processed",
    "Wait",
]

MIN_WINDOW = 4


class CausalOrderer(FeedBook):
    """Processes member messages in an order that respects causality (see the module doc)."""

    def __init__(self, *, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        super().__init__()
        self.capacity = capacity
        self._ready: list[tuple[OrderKey, int]] = []
        self._member_waiters: set[int] = set()
        self._graph_changed = False
        self._set_window()
        self.processed = 0
        self.invalidations: list[Invalidation] = []

    # -- members and messages ---------------------------------------------------------------------

    def add_member(self, owner: bytes, now: float) -> int:
        """The member index of ``owner``, admitting it if new (indices in admission order);
        ValueError if the space has `MAX_MEMBERS` already."""
        if owner in self._index:
            return self._index[owner]
        if len(self._feeds) >= MAX_MEMBERS:
            raise ValueError(f"a space has at most {MAX_MEMBERS} members")
        index = len(self._feeds)
        self._feeds.append(FeedTrack(index, owner, now))
        self._index[owner] = index
        self._set_window()
        waiting, self._member_waiters = self._member_waiters, set()
        for feed in sorted(waiting):
            self._evaluate(self._feeds[feed], now)
        self._graph_changed = True
        return index

    def window(self) -> int:
        return self._window

    def _set_window(self) -> None:
        self._window = max(MIN_WINDOW, self.capacity // max(1, len(self._feeds)))

    def wanted(self, member: int) -> range:
        """Sequence numbers of ``member``'s feed this engine would take now, from the first it lacks."""
        feed = self._feeds[member]
        stop = feed.next + self.window()
        if feed.invalid_from is not None:
            stop = min(stop, feed.invalid_from)
        return range(feed.held_end, max(feed.held_end, stop))

    def holds(self, member: int, seq: int) -> bool:
        feed = self._feeds[member]
        return seq < feed.held_end or seq in feed.raw

    def offer(self, member: int, seq: int, payload: bytes, now: float) -> bool:
        """Message ``seq`` of ``member``'s feed arrived; False if not taken (held already,
        processed, outside the window, or past the point the feed is invalid from)."""
        feed = self._feeds[member]
        stop = feed.next + self._window
        if feed.invalid_from is not None:
            stop = min(stop, feed.invalid_from)
        if not feed.held_end <= seq < stop or seq in feed.raw:
            return False
        feed.raw[seq] = payload
        self._decode_run(feed, now)
        return True

    def _decode_run(self, feed: FeedTrack, now: float) -> None:
        while feed.held_end in feed.raw and feed.invalid_from is None:
            seq = feed.held_end
            payload = feed.raw.pop(seq)
            try:
                message = decode_message(payload)
                timeframe = apply_delta(feed.tail_tf, message.delta, feed.index, seq)
            except (InvalidSpaceMessage, InvalidTimeframe) as exc:
                self._invalidate(feed, seq, f"not a valid message: {exc}", now)
                return
            lamport = feed.tail_lamport + 1 + sum(increase for _, increase in message.delta)
            needs = tuple((index, timeframe[index]) for index, _ in message.delta)
            feed.decoded.append(Held(seq, message, timeframe, OrderKey(lamport, feed.owner, seq), needs))
            feed.tail_tf, feed.tail_lamport = timeframe, lamport
            feed.last_heard = now
            self._graph_changed = True
            if seq == feed.next:
                self._evaluate(feed, now)

    # -- processing -----------------------------------------------------------------------------

    def step(self, now: float) -> Processed | None:
        """The next message to process (now counted as processed), or None if none is ready."""
        while self._ready:
            _, member = heapq.heappop(self._ready)
            feed = self._feeds[member]
            if feed.state is not FeedState.READY:
                continue  # invalidated while it waited in the heap
            head = feed.decoded.popleft()
            feed.state, feed.waiting, feed.blocked_since = FeedState.IDLE, None, None
            problem = self._understated(head)
            if problem is not None:
                self._invalidate(feed, head.seq, problem, now)
                continue
            feed.lamports.append(head.key.lamport)
            feed.next += 1
            feed.processed_tf = head.timeframe
            self.processed += 1
            while feed.waiters and feed.waiters[0][0] <= head.seq:
                _, waiter = heapq.heappop(feed.waiters)
                self._evaluate(self._feeds[waiter], now)
            self._evaluate(feed, now)
            return Processed(member, head.seq, head.key, head.timeframe, head.message)
        if self._graph_changed and self._heads_deadlocked():
            self._graph_changed = False
            self._invalidate_cycles(now)
        return None

    def drain(self, now: float) -> Iterator[Processed]:
        while (processed := self.step(now)) is not None:
            yield processed

    def _evaluate(self, feed: FeedTrack, now: float) -> None:
        """Check the next message of ``feed``: ready (queued), or blocked on its first unmet need."""
        head = feed.head()
        if feed.state is FeedState.READY or head is None or head.seq != feed.next:
            return
        while head.cursor < len(head.needs):
            member, seq = head.needs[head.cursor]
            if member >= len(self._feeds):
                self._member_waiters.add(feed.index)
                self._block(feed, (member, seq), now)
                feed.registered = False
                return
            dep = self._feeds[member]
            if dep.invalid_from is not None and seq >= dep.invalid_from:
                reason = f"it depends on {dep.owner.hex()}:{seq}, which is invalid"
                self._invalidate(feed, head.seq, reason, now)
                return
            if dep.next > seq:
                head.cursor += 1
                continue
            if not (feed.state is FeedState.BLOCKED and feed.waiting == (member, seq) and feed.registered):
                heapq.heappush(dep.waiters, (seq, feed.index))
            self._block(feed, (member, seq), now)
            feed.registered = True
            return
        feed.state, feed.waiting, feed.blocked_since = FeedState.READY, None, None
        heapq.heappush(self._ready, (head.key, feed.index))

    def _block(self, feed: FeedTrack, needs: tuple[int, int], now: float) -> None:
        feed.state, feed.waiting = FeedState.BLOCKED, needs
        if feed.blocked_since is None:
            feed.blocked_since = now

    def _understated(self, head: Held) -> str | None:
        """Why the head's order key cannot be honest (it does not exceed a covered message's)."""
        for member, seq in head.needs:
            covered = self._feeds[member].lamports[seq]
            if head.key.lamport <= covered:
                return (
                    f"its timeframe understates its past: order {head.key.lamport} is not above "
                    f"{covered} of {self._feeds[member].owner.hex()}:{seq}, which it covers"
                )
        return None

    # -- invalid feeds -----------------------------------------------------------------------------

    def _invalidate(self, feed: FeedTrack, seq: int, reason: str, now: float) -> None:
        """Feed ``feed`` is invalid from message ``seq`` on: drop what it holds from there and
        invalidate the messages waiting on them."""
        self._wake(self._mark_invalid(feed, seq, reason, now), now)

    def _mark_invalid(self, feed: FeedTrack, seq: int, reason: str, now: float) -> list[tuple[int, int]]:
        """Mark the feed invalid from ``seq`` and drop what it holds from there; returns the
        waiters on dropped messages, to be woken (and invalidated) once all marks are made."""
        if feed.invalid_from is not None and feed.invalid_from <= seq:
            return []
        feed.invalid_from, feed.invalid_reason = seq, reason
        self.invalidations.append(Invalidation(feed.index, seq, reason, now))
        while feed.decoded and feed.decoded[-1].seq >= seq:
            feed.decoded.pop()
        feed.raw = {s: p for s, p in feed.raw.items() if s < seq}
        if seq <= feed.next:
            feed.state, feed.waiting, feed.blocked_since = FeedState.IDLE, None, None
        self._graph_changed = True
        stale = [w for w in feed.waiters if w[0] >= seq]
        feed.waiters = [w for w in feed.waiters if w[0] < seq]
        heapq.heapify(feed.waiters)
        return stale

    def _wake(self, waiters: list[tuple[int, int]], now: float) -> None:
        for _, waiter in sorted(waiters):
            self._evaluate(self._feeds[waiter], now)

    def _heads_deadlocked(self) -> bool:
        """Whether blocked next messages wait for each other in a ring: only then does the full
        search for cycles run (see `swarm.spaces.cycles.ring_of_waits`)."""
        waits = [f.waiting if f.state is FeedState.BLOCKED else None for f in self._feeds]
        return ring_of_waits(waits, [f.held_end for f in self._feeds])

    def _invalidate_cycles(self, now: float) -> None:
        runs = [[held.needs for held in feed.decoded] for feed in self._feeds]
        starts = [feed.next for feed in self._feeds]
        marked = reaching_cycles(runs, starts)
        if not marked:
            return
        involved = ", ".join(self._feeds[m].owner.hex() for m in sorted(marked))
        reason = f"its timeframe closes a cycle among feeds {involved}: it claims messages written after it"
        stale = []
        for member, seq in sorted(marked.items()):
            stale += self._mark_invalid(self._feeds[member], seq, reason, now)
        self._wake(stale, now)
