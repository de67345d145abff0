"""Interest gossip: which streams each connected peer wants pushed to it, and what to tell them (pure).

A node *follows* a stream when a local client does (`swarm feed follow`, `swarm topic subscribe`).
It tells each connected peer the streams it wants, with a hop count: 0 for a stream it follows,
``h + 1`` for one it relays because some *other* peer announced it at ``h`` (split horizon: what
was learnt from a peer is never announced back to it). So interest spreads from every follower
through the swarm, each node learning which of its peers lead to a follower, and a new message is
pushed to exactly those peers. Entries farther than `MAX_HOPS` are not announced, which also ends
the "count to infinity" of a withdrawn interest circling a loop of peers: its hop count grows by
one per turn until it passes the limit and is withdrawn everywhere.

The table is pure: it takes peers' announcements and local follows and returns, per peer, the
entries to send (`announcements`), coalescing changes until the caller sends them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from streamer.messages import INTEREST_WITHDRAWN, MAX_INTEREST_ENTRIES, InterestEntry, StreamKind
from swarm.live.messages import Stream

__all__ = ["MAX_HOPS", "MAX_STREAMS_PER_PEER", "InterestStatistics", "InterestTable"]

MAX_HOPS = 8
"""Interest is announced at most this many hops from a follower (retrieval's hop limit too)."""
MAX_STREAMS_PER_PEER = 10_000
"""Streams kept per peer; announcements past this are ignored (and counted)."""


@dataclass(frozen=True)
class InterestStatistics:
    """What the interest table holds."""

    followed: int  # streams followed here (by a local client)
    relayed: int  # streams wanted by peers only: this node pushes them on, following none
    peers: int  # connected peers exchanging interest with this node
    ignored: int  # announcements over a peer's budget (`MAX_STREAMS_PER_PEER`)


class InterestTable:
    """Local follows, peers' announced interest, and what each peer has been told."""

    def __init__(self, *, max_hops: int = MAX_HOPS, max_streams: int = MAX_STREAMS_PER_PEER) -> None:
        self.max_hops = max_hops
        self.max_streams = max_streams
        self._local: dict[Stream, int] = {}  # stream -> local followers
        self._remote: dict[bytes, dict[Stream, int]] = {}  # peer -> stream -> hops it announced
        self._told: dict[bytes, dict[Stream, int]] = {}  # peer -> stream -> hops we announced
        self._dirty: dict[bytes, set[Stream]] = {}  # peer -> streams whose announcement may change
        self.ignored = 0  # announcements over a peer's budget

    # -- what changes it --------------------------------------------------------------------------

    def follow(self, stream: Stream) -> None:
        self._local[stream] = self._local.get(stream, 0) + 1
        if self._local[stream] == 1:
            self._touch(stream, except_peer=None)

    def unfollow(self, stream: Stream) -> None:
        count = self._local.get(stream, 0) - 1
        if count > 0:
            self._local[stream] = count
            return
        self._local.pop(stream, None)
        self._touch(stream, except_peer=None)

    def add_peer(self, peer: bytes) -> None:
        """A peer connected: everything we want is to be announced to it (a peer that was here
        already starts afresh: a new connection knows nothing of what the old one was told)."""
        if peer in self._remote:
            self.remove_peer(peer)
        self._remote[peer] = {}
        self._told[peer] = {}
        self._dirty[peer] = set(self.wanted())

    def remove_peer(self, peer: bytes) -> None:
        streams = self._remote.pop(peer, {})
        self._told.pop(peer, None)
        self._dirty.pop(peer, None)
        for stream in streams:
            self._touch(stream, except_peer=None)

    def announced(self, peer: bytes, entries: Iterable[InterestEntry]) -> None:
        """A peer's LiveInterest: streams it now wants (at a hop count) or withdrew."""
        wants = self._remote.get(peer)
        if wants is None:
            return
        for entry in entries:
            stream = Stream(StreamKind(entry.kind), entry.owner, entry.topic)
            if entry.hops == INTEREST_WITHDRAWN or entry.hops >= self.max_hops:
                if wants.pop(stream, None) is not None:
                    self._touch(stream, except_peer=peer)
                continue
            if stream not in wants and len(wants) >= self.max_streams:
                self.ignored += 1
                continue
            if wants.get(stream) != entry.hops:
                wants[stream] = entry.hops
                self._touch(stream, except_peer=peer)

    def _touch(self, stream: Stream, except_peer: bytes | None) -> None:
        # what a peer announced never changes what it is told (split horizon): skip it
        for peer, dirty in self._dirty.items():
            if peer != except_peer:
                dirty.add(stream)

    # -- what it answers --------------------------------------------------------------------------

    def follows(self, stream: Stream) -> bool:
        return stream in self._local

    def wanted(self) -> set[Stream]:
        """Streams followed here or announced by any peer."""
        found = set(self._local)
        for wants in self._remote.values():
            found.update(wants)
        return found

    def distance(self, stream: Stream, except_peer: bytes | None = None) -> int | None:
        """Hops to the nearest follower (0: one here), not counting routes through ``except_peer``."""
        if stream in self._local:
            return 0
        best = None
        for peer, wants in self._remote.items():
            hops = wants.get(stream)
            if hops is not None and peer != except_peer and (best is None or hops + 1 < best):
                best = hops + 1
        return best

    def targets(self, stream: Stream, source: bytes | None) -> list[bytes]:
        """The peers to push a message of ``stream`` to: every peer that announced it, but the
        one it came from."""
        return [peer for peer, wants in self._remote.items() if stream in wants and peer != source]

    def relays(self, stream: Stream, source: bytes | None) -> bool:
        """Does this node follow ``stream`` or push it on (to a peer other than ``source``)?"""
        return stream in self._local or any(
            stream in wants for peer, wants in self._remote.items() if peer != source
        )

    def announcements(self, peer: bytes) -> list[InterestEntry]:
        """The entries to send ``peer`` now (what changed since it was last told), at most
        MAX_INTEREST_ENTRIES; call again while it returns a full batch."""
        dirty = self._dirty.get(peer)
        if not dirty:
            return []
        told = self._told[peer]
        entries: list[InterestEntry] = []
        while dirty and len(entries) < MAX_INTEREST_ENTRIES:
            stream = dirty.pop()
            hops = self.distance(stream, except_peer=peer)
            if hops is not None and hops >= self.max_hops:
                hops = None
            if hops == told.get(stream):
                continue
            if hops is None:
                del told[stream]
                entries.append(InterestEntry(stream.kind, stream.owner, stream.topic, INTEREST_WITHDRAWN))
            else:
                told[stream] = hops
                entries.append(InterestEntry(stream.kind, stream.owner, stream.topic, hops))
        return entries

    def pending(self, peer: bytes) -> bool:
        return bool(self._dirty.get(peer))

    def statistics(self) -> InterestStatistics:
        return InterestStatistics(
            followed=len(self._local),
            relayed=len(self.wanted() - set(self._local)),
            peers=len(self._remote),
            ignored=self.ignored,
        )
