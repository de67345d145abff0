"""Per connected peer: the live messages waiting to be sent to it, sent by one task.

The relay path never waits: pushing a message to a peer appends it to that peer's bounded queue
(a full queue drops it, counted: the peers it was meant for will find the gap and retrieve it).
One task per peer sends what is queued through the connection's outbox (live priority), and
before that the peer's pending interest announcements, computed when they are sent, so that a
burst of interest changes goes out as one `LiveInterest`, then the pauses and resumes for it
and the announcements of what it paused (`LivePause`, `LiveHave`: `swarm.live.pruning`).

Interest changes go out at most once per `interest_interval` (the first at once): what changes in
between is coalesced by the interest table into the net difference, so a peer churning its
interest (subscribe, withdraw, subscribe...) costs its neighbours one announcement per interval
with what actually changed, not one per change.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Protocol

import trio

from streamer.connection import PeerConnection
from streamer.messages import FeedPush, LiveHave, LiveInterest, LivePause, TopicPush
from streamer.outbox import Priority
from swarm.live.interest import InterestTable

__all__ = ["DEFAULT_LINK_CAPACITY", "LivePeer", "PeerLink"]

DEFAULT_LINK_CAPACITY = 1024


class LivePeer(Protocol):
    """What live propagation uses of a connected peer."""

    @property
    def overlay(self) -> bytes: ...

    @property
    def conn(self) -> PeerConnection: ...


class PeerLink:
    """The send side of live propagation to one peer."""

    def __init__(
        self,
        peer: LivePeer,
        interest: InterestTable,
        capacity: int = DEFAULT_LINK_CAPACITY,
        *,
        interest_interval: float = 0.0,
    ) -> None:
        self.peer = peer
        self.overlay = peer.overlay
        self._interest = interest
        self.capacity = capacity
        self._queue: deque[FeedPush | TopicPush] = deque()
        self._pauses: dict[tuple[int, bytes, bytes], LivePause] = {}  # per chain, the latest word
        self._haves: deque[LiveHave] = deque()
        self._wake = trio.Event()
        self.interest_interval = interest_interval
        self._next_interest = -math.inf  # when interest may be announced again
        self.sent = 0
        self.dropped = 0
        self.announcements = 0  # LiveInterest messages sent

    def push(self, msg: FeedPush | TopicPush) -> bool:
        """Queue ``msg`` for the peer; False (and counted) if its queue is full."""
        if len(self._queue) >= self.capacity:
            self.dropped += 1
            return False
        self._queue.append(msg)
        self._wake.set()
        return True

    def pause(self, msg: LivePause) -> None:
        """Queue a pause or resume for the peer, ahead of the pushes; a later word for the same
        chain replaces one not sent yet (so the queue holds at most one per chain)."""
        self._pauses[(msg.kind, msg.owner, msg.topic)] = msg
        self._wake.set()

    def have(self, msg: LiveHave) -> bool:
        """Queue the announcement of a message not pushed because the peer paused its chain
        (each one: a lost message must be noticed whatever came after it); False if the queue
        is full (as `push`)."""
        if len(self._haves) >= self.capacity:
            self.dropped += 1
            return False
        self._haves.append(msg)
        self._wake.set()
        return True

    def interest_changed(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        """Send until the connection closes (its task is started on the connection).

        The interest table knows peers by overlay, links are per connection: a link whose
        connection was replaced (a peer that reconnected) must not take the new connection's
        announcements and send them into the closed one, so it stops as soon as it is closed.
        """
        conn = self.peer.conn
        while not conn.closed:
            due = self._next_interest if self._interest.pending(self.overlay) else math.inf
            with trio.move_on_at(due):
                await self._wake.wait()
                self._wake = trio.Event()
            if self._interest.pending(self.overlay) and trio.current_time() >= self._next_interest:
                await self._announce(conn)
            while self._pauses and not conn.closed:
                await conn.send(self._pauses.pop(next(iter(self._pauses))), Priority.LIVE)
            while self._queue or self._haves:
                if self._queue:
                    await conn.send(self._queue.popleft(), Priority.LIVE)
                    self.sent += 1
                if self._haves:
                    await conn.send(self._haves.popleft(), Priority.LIVE)

    async def _announce(self, conn: PeerConnection) -> None:
        """Send what changed in the interest since the peer was last told (in full batches)."""
        while not conn.closed and self._interest.pending(self.overlay):
            entries = self._interest.announcements(self.overlay)
            if entries:
                await conn.send(LiveInterest(tuple(entries)), Priority.LIVE)
                self.announcements += 1
        self._next_interest = trio.current_time() + self.interest_interval
