"""Whom to forward a request for an address to, spreading load over equally close peers (pure).

The node's retrieval and push forwarding (``swarm.net.peer_choice``) and the simulation's routing
(``swarm.sim.metrics.route``) both call `pick_peer`; nothing else decides a next hop.

Candidates are the peers that make progress toward the target: strictly closer to it than this node
by XOR distance (so every hop gets closer and no request loops), unless ``farther_ok`` (a request's
origin may ask anyone). Among them, by the `Forwarding` rule:

- ``closest``: the candidate closest to the target (Kademlia's greedy rule);
- ``spread`` (``slack`` 0): the candidates of the highest proximity order (PO) to the target are
  *equally close* in Kademlia's sense (seed 003, Fig. 1: both serve the same region); among them the
  least loaded one wins, closest first among equal loads;
- ``spreadK`` (``slack`` K): the same over the *near-equal* candidates, PO at least the best PO - K.

Load is what a `LoadBook` says of a peer: requests in flight to it, then how recently it was last
asked (least recently used first). A peer that recently left a request unanswered (``avoided``) is
taken only when every candidate is avoided.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

__all__ = ["DEFAULT_FORWARDING", "FORWARDING", "Forwarding", "LoadBook", "get_forwarding", "pick_peer"]


@dataclass(frozen=True)
class Forwarding:
    """A forwarding rule: ``slack`` None is ``closest``; an int K spreads over PO >= best - K."""

    name: str
    slack: int | None

    def __post_init__(self) -> None:
        if self.slack is not None and self.slack < 0:
            raise ValueError(f"forwarding slack must be at least 0, got {self.slack}")


FORWARDING: dict[str, Forwarding] = {
    rule.name: rule
    for rule in (
        Forwarding("closest", None),
        Forwarding("spread", 0),
        Forwarding("spread1", 1),
        Forwarding("spread2", 2),
    )
}
# docs/simulation.md, "Load-aware forwarding": spreading over equally close peers
DEFAULT_FORWARDING = "spread"


def get_forwarding(name: str) -> Forwarding:
    """The rule called ``name``; ValueError naming the valid ones otherwise."""
    try:
        return FORWARDING[name]
    except KeyError:
        valid = ", ".join(FORWARDING)
        raise ValueError(f"unknown forwarding rule {name!r}: choose one of {valid}") from None


@dataclass
class LoadBook:
    """Per peer: requests in flight to it and when it was last asked (a counter, not a clock).

    `started` when a request goes to a peer, `finished` when it ends however it ends. `key` orders
    peers from least to most loaded. At most ``limit`` peers are remembered (the least recently
    asked go first); a forgotten peer counts as never asked.
    """

    limit: int = 4096
    _in_flight: dict[bytes, int] = field(default_factory=dict)
    _last: dict[bytes, int] = field(default_factory=dict)
    _tick: int = 0

    def started(self, peer: bytes) -> None:
        self._tick += 1
        self._in_flight[peer] = self._in_flight.get(peer, 0) + 1
        self._last.pop(peer, None)
        self._last[peer] = self._tick
        while len(self._last) > self.limit:
            oldest = next(iter(self._last))
            del self._last[oldest]
            self._in_flight.pop(oldest, None)

    def finished(self, peer: bytes) -> None:
        count = self._in_flight.get(peer, 0)
        if count > 1:
            self._in_flight[peer] = count - 1
        else:
            self._in_flight.pop(peer, None)

    def in_flight(self, peer: bytes) -> int:
        return self._in_flight.get(peer, 0)

    def key(self, peer: bytes) -> tuple[int, int]:
        """(requests in flight, last asked): smaller is less loaded; 0 for a peer never asked."""
        return self._in_flight.get(peer, 0), self._last.get(peer, 0)


def pick_peer(
    target: bytes,
    own: bytes,
    peers: Iterable[bytes],
    *,
    rule: Forwarding,
    loads: LoadBook | None = None,
    skip: Collection[bytes] = (),
    farther_ok: bool = False,
    avoided: Collection[bytes] = (),
) -> bytes | None:
    """The peer to send the request for ``target`` to next, or None when no candidate is left.

    ``skip``: peers never to take (already asked, the one the request came from). Without ``loads``
    every peer counts as unloaded, so ``spread`` rules take the closest of their group.
    """
    t = int.from_bytes(target, "big")
    nbits = len(target) * 8
    own_distance = int.from_bytes(own, "big") ^ t
    fresh: list[tuple[int, bytes]] = []
    stale: list[tuple[int, bytes]] = []
    for peer in peers:
        if peer == own or peer in skip:
            continue
        d = int.from_bytes(peer, "big") ^ t
        if not farther_ok and d >= own_distance:
            continue
        (stale if peer in avoided else fresh).append((d, peer))
    group = fresh or stale
    if not group:
        return None
    best_d, best = min(group)
    if rule.slack is None or loads is None:
        return best
    floor = nbits - best_d.bit_length() - rule.slack  # the lowest PO that still competes
    near = [(loads.key(p), d, p) for d, p in group if nbits - d.bit_length() >= floor]
    return min(near)[2]
