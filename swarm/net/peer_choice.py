"""Which peer to ask next for a chunk: the rule retrieval and push syncing share (pure).

A request for a chunk (a retrieval, or a push toward its neighbourhood) asks connected peers one
after another, closest to the chunk's address first (XOR distance), never the same peer twice:

- a *forwarding* node asks only peers strictly closer to the chunk than itself, and never the peer
  the request came from, so every hop gets closer and no request can loop;
- the *origin* (the node whose user asked) may also ask peers farther than itself: in a small
  swarm the node holding a chunk is often farther from it than the one asking (Bee's retrieval
  lets the origin do the same);
- a peer that recently left a request unanswered is *avoided*: asked only once every other
  candidate has been tried, so a hung peer costs one attempt, not every request's first;
- with a load-spreading rule (``kademlia.forwarding``: ``spread``, the node's default), the peers
  equally close to the chunk (the same, highest proximity order) share the requests: the one with
  the fewest requests in flight, then the least recently asked, goes first. The simulation routes
  by the same function.

`AttemptPlan` is one request's bookkeeping: what was tried, what is in flight, how many attempts
remain. `Avoidance` remembers the peers that timed out, for a while. Both take time as a value;
the trio shell (`swarm.net.hedged`) runs the attempts.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from kademlia.forwarding import FORWARDING, Forwarding, LoadBook, pick_peer

__all__ = [
    "DEFAULT_FORWARDING",
    "AttemptPlan",
    "Avoidance",
    "Forwarding",
    "LoadBook",
    "choose_next",
    "closer_known",
    "distance",
]

DEFAULT_FORWARDING = FORWARDING["spread"]


def distance(a: bytes, b: bytes) -> int:
    """XOR distance of two addresses, as an integer (smaller is closer)."""
    return int.from_bytes(a, "big") ^ int.from_bytes(b, "big")


def choose_next(
    target: bytes,
    own: bytes,
    peers: Iterable[bytes],
    *,
    skip: Collection[bytes] = (),
    farther_ok: bool = False,
    avoided: Collection[bytes] = (),
    rule: Forwarding = FORWARDING["closest"],
    loads: LoadBook | None = None,
) -> bytes | None:
    """The peer to ask next for ``target``, or None when no candidate is left.

    Candidates are ``peers`` not in ``skip``, and (unless ``farther_ok``) strictly closer to
    ``target`` than ``own``. Those not ``avoided`` come first (an avoided one only when every
    candidate is avoided); among them ``rule`` decides (`kademlia.forwarding.pick_peer`): the
    closest, or the least loaded of the equally close by ``loads``.
    """
    return pick_peer(
        target, own, peers, rule=rule, loads=loads, skip=skip, farther_ok=farther_ok, avoided=avoided
    )


def closer_known(target: bytes, node: bytes, known: Iterable[bytes]) -> int:
    """How many of the ``known`` addresses (``node`` itself aside) are strictly closer to ``target``
    than ``node`` is: 0 for the closest node we know of.

    An uploader judges a storer by it: a receipt proves only that its signer holds the chunk, and a
    throwaway identity can sign one; a storer with many known nodes closer to the chunk than itself
    is not in the chunk's neighbourhood as this node sees it, whatever radius it claims.
    """
    limit = distance(node, target)
    return sum(1 for other in set(known) if other != node and distance(other, target) < limit)


@dataclass
class Avoidance:
    """Peers that left a request unanswered, avoided for ``period`` seconds after the last time.

    At most ``limit`` peers are remembered (the oldest go first): a node has far fewer connected
    peers, so the bound only matters against churn.
    """

    period: float = 30.0
    limit: int = 1024
    _until: dict[bytes, float] = field(default_factory=dict)

    def timed_out(self, peer: bytes, now: float) -> None:
        self._until.pop(peer, None)
        self._until[peer] = now + self.period
        while len(self._until) > self.limit:
            del self._until[next(iter(self._until))]

    def answered(self, peer: bytes) -> None:
        """The peer answered a request (found or not): it is not hung."""
        self._until.pop(peer, None)

    def avoided(self, now: float) -> frozenset[bytes]:
        expired = [peer for peer, until in self._until.items() if until <= now]
        for peer in expired:
            del self._until[peer]
        return frozenset(self._until)

    def __len__(self) -> int:
        return len(self._until)


@dataclass
class AttemptPlan:
    """One request's attempts: at most ``max_attempts`` peers, each asked once.

    ``exclude`` are peers never to ask (the peer the request came from, storers that already
    signed a receipt). `next_peer` picks by `choose_next` (by ``rule``, spreading over ``loads``)
    and counts the attempt as in flight, here and in ``loads``, until `finished` is called for it.
    """

    target: bytes
    own: bytes
    max_attempts: int
    farther_ok: bool = False
    exclude: frozenset[bytes] = frozenset()
    tried: list[bytes] = field(default_factory=list)
    in_flight: set[bytes] = field(default_factory=set)
    rule: Forwarding = DEFAULT_FORWARDING
    loads: LoadBook | None = None

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")

    @property
    def attempts_left(self) -> int:
        return self.max_attempts - len(self.tried)

    def next_peer(self, peers: Iterable[bytes], avoided: Collection[bytes] = ()) -> bytes | None:
        """The next peer to ask (now counted as tried and in flight), or None: no attempt left,
        or no candidate."""
        if self.attempts_left <= 0:
            return None
        skip = self.exclude.union(self.tried)
        peer = choose_next(
            self.target,
            self.own,
            peers,
            skip=skip,
            farther_ok=self.farther_ok,
            avoided=avoided,
            rule=self.rule,
            loads=self.loads,
        )
        if peer is not None:
            self.tried.append(peer)
            self.in_flight.add(peer)
            if self.loads is not None:
                self.loads.started(peer)
        return peer

    def finished(self, peer: bytes) -> None:
        """The attempt at ``peer`` ended (with an answer, a failure or a timeout)."""
        if peer in self.in_flight and self.loads is not None:
            self.loads.finished(peer)
        self.in_flight.discard(peer)
