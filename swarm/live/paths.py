"""The shell around the pure `Pruning` (`swarm.live.pruning`): what a node says and does about
its push paths. It sends the pauses, resumes and announcements over the peers' links, takes the
peers' `LivePause` and `LiveHave`, and tells the relay path which pushes to leave out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict

from streamer.messages import FeedPush, LiveHave, LivePause, StreamKind, TopicPush
from swarm.live.links import PeerLink
from swarm.live.messages import Chain, chain_of, edge_of
from swarm.live.pruning import PauseChange, Pruning, PushPathStatistics

__all__ = ["PushPaths"]


class PushPaths:
    """One node's push paths: which peers it paused, which paused it, and what to tell them."""

    def __init__(
        self,
        pruning: Pruning,
        links: dict[bytes, PeerLink],
        seen: Callable[[Chain, int], bool],
        wall: Callable[[], float],
    ) -> None:
        self.pruning = pruning
        self._links = links  # the service's, kept current by it
        self._seen = seen  # whether this node has seen a message of a chain
        self._wall = wall
        self.pruned = 0  # pushes not sent (only announced): the peer paused the chain
        self.haves_received = 0

    def tell(self, changes: list[PauseChange]) -> None:
        """Send each pause or resume to its peer (one that is gone has forgotten it anyway)."""
        for change in changes:
            link = self._links.get(change.peer)
            if link is not None:
                chain = change.chain
                link.pause(LivePause(chain.kind, chain.owner, chain.topic, int(change.paused)))

    def on_word(self, peer: bytes, msg: LivePause | LiveHave) -> None:
        """A peer paused or resumed a chain, or announced a message of one we paused."""
        chain = Chain(StreamKind(msg.kind), msg.owner, msg.topic)
        if isinstance(msg, LivePause):
            self.pruning.asked(peer, chain, bool(msg.paused))
            return
        self.haves_received += 1
        if not self._seen(chain, msg.number):
            self.pruning.announced(chain, peer, msg.number, self._wall())

    def judged(self, msg: FeedPush | TopicPush, peer: bytes, new: bool) -> None:
        """A push from ``peer`` was judged new or a repeat."""
        chain = chain_of(msg)
        self.tell(self.pruning.delivered(chain, peer) if new else self.pruning.repeated(chain, peer))

    def push_targets(self, msg: FeedPush | TopicPush, targets: list[bytes]) -> list[bytes]:
        """The ``targets`` to push ``msg`` to: those that paused its chain are only sent an
        announcement of it (`LiveHave`)."""
        chain = chain_of(msg)
        pushed = []
        for target in targets:
            link = self._links.get(target)
            if link is None or not self.pruning.paused_by(target, chain):
                pushed.append(target)
                continue
            link.have(LiveHave(chain.kind, chain.owner, chain.topic, edge_of(msg)[1]))
            self.pruned += 1
        return pushed

    def tick(self, now: float) -> None:
        self.tell(self.pruning.due(now, self._seen))

    def peer_gone(self, peer: bytes) -> None:
        self.tell(self.pruning.peer_gone(peer))

    def statistics(self) -> PushPathStatistics:
        return PushPathStatistics(**asdict(self.pruning.statistics()), haves_received=self.haves_received)
