"""Pruning of redundant live paths, Plumtree-like (pure): which peers to pause, per chain.

Without it a relay pushes every new message to every peer that wants its stream, so a node hears
a message once per peer on a path to the publisher (docs/live.md, "Measured"). With it, the
receiver of a **repeat** tells the peer it came from to stop pushing that chain (`LivePause`,
paused), as Streamr's Plumtree does (`pauseNeighbor`): what remains of the push paths tends to a
tree per publisher, each node hearing a message about once.

A chain is a feed or one publisher on a topic (`swarm.live.messages.Chain`), so that pausing a
path for one publisher never starves another's messages. The receiving side keeps, per chain,
the peers that pushed it (*carriers*) and which of them it paused, and keeps at least `eager`
carriers unpaused (Streamr resumes a neighbour when all are paused; `eager` 2 keeps a second path
warm, so one relay failing costs no message; 0 pauses nothing). Paused carriers are resumed:

- when a carrier goes away and fewer than `eager` unpaused ones remain (oldest paused first);
- when a paused carrier announces a message (`LiveHave`, Plumtree's lazy ``IHAVE``: a paused
  link carries the numbers, not the messages) that this node has not seen `graft_after` seconds
  later (Plumtree's graft): the unpaused paths are broken, or slower; this also ends the one
  way pruning could starve a node, a ring of nodes each keeping only the others unpaused (what
  was missed meanwhile is filled by the followers: a feed's from the swarm, a topic's reported
  lost). A gap in the numbers is *not* a reason: publishers and paths reorder messages, and
  resuming on every gap kept the paths churning (measured: docs/live.md);
- when the chain is forgotten (`max_chains`, least recently heard first): a pause this node no
  longer remembers must not outlive it.

The sending side keeps, per peer, the chains it asked us to pause (at most
`max_paused_per_peer`; requests past that are ignored: the peer keeps hearing the chain, which
costs bandwidth, never a message). All state of a peer ends with its connection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for annotations only: `swarm node --help` reads DEFAULT_EAGER without the wire
    from swarm.live.messages import Chain

__all__ = [
    "DEFAULT_EAGER",
    "GRAFT_AFTER",
    "MAX_CHAINS",
    "MAX_PAUSED_PER_PEER",
    "PauseChange",
    "Pruning",
    "PruningStatistics",
    "PushPathStatistics",
]

DEFAULT_EAGER = 2
GRAFT_AFTER = 1.0
"""Seconds a message announced by a paused peer (`LiveHave`) may take to come another way."""
MAX_CHAINS = 50_000
MAX_PAUSED_PER_PEER = 10_000


@dataclass(frozen=True, slots=True)
class PauseChange:
    """Tell ``peer`` to stop (``paused``) or start again pushing ``chain`` to this node."""

    peer: bytes
    chain: Chain
    paused: bool


@dataclass(frozen=True)
class PruningStatistics:
    """What the pruning holds and has done."""

    chains: int  # chains whose carriers this node remembers
    paused_here: int  # (chain, carrier) pairs this node paused
    paused_by_peers: int  # (peer, chain) pairs peers asked this node not to push
    pauses_sent: int  # pauses this node sent carriers (`LivePause`, paused)
    resumes_sent: int  # resumes this node sent carriers (grafts included)
    grafts: int  # resumes because a message a paused carrier announced did not come another way
    ignored: int  # pause requests over a peer's budget (`max_paused_per_peer`)


@dataclass(frozen=True)
class PushPathStatistics(PruningStatistics):
    """The pruning's counters and what its shell (`swarm.live.paths.PushPaths`) counts besides
    (kept here, in a pure module, for `swarm.live.results`)."""

    haves_received: int  # announcements (`LiveHave`) received from carriers this node paused


class Pruning:
    """Which carriers of each chain this node paused, and which chains each peer paused."""

    def __init__(
        self,
        *,
        eager: int = DEFAULT_EAGER,
        max_chains: int = MAX_CHAINS,
        max_paused_per_peer: int = MAX_PAUSED_PER_PEER,
        graft_after: float = GRAFT_AFTER,
    ) -> None:
        if eager < 0:
            raise ValueError(f"eager must not be negative, got {eager}")
        self.eager = eager
        self.max_chains = max_chains
        self.max_paused_per_peer = max_paused_per_peer
        # chain -> carrier -> paused by us; chains least recently heard first, carriers in order heard
        self._carriers: dict[Chain, dict[bytes, bool]] = {}
        self._chains_of: dict[bytes, set[Chain]] = {}  # carrier -> chains it carries
        self._paused_by: dict[bytes, set[Chain]] = {}  # peer -> chains it asked us not to push
        # chain -> (when to graft, the number announced, the paused peers that announced it)
        self._announced: dict[Chain, tuple[float, int, set[bytes]]] = {}
        self.graft_after = graft_after
        self.pauses_sent = 0
        self.resumes_sent = 0
        self.grafts = 0  # resumes because an announced message did not come another way
        self.ignored = 0  # pause requests over a peer's budget

    # -- receiving: what came from whom ---------------------------------------------------------

    def delivered(self, chain: Chain, peer: bytes) -> list[PauseChange]:
        """A new message of ``chain`` came from ``peer``."""
        return self._heard(chain, peer)[1]

    def repeated(self, chain: Chain, peer: bytes) -> list[PauseChange]:
        """A repeat of ``chain`` came from ``peer``: pause it, unless that would leave fewer than
        `eager` carriers unpaused (or it is paused already: a push that crossed our pause)."""
        carriers, changes = self._heard(chain, peer)
        unpaused = sum(1 for paused in carriers.values() if not paused)
        if self.eager and not carriers[peer] and unpaused - 1 >= self.eager:
            carriers[peer] = True
            self.pauses_sent += 1
            changes.append(PauseChange(peer, chain, True))
        return changes

    def _heard(self, chain: Chain, peer: bytes) -> tuple[dict[bytes, bool], list[PauseChange]]:
        """The chain's carriers, ``peer`` among them, the chain now the most recently heard; and
        the resumes owed for a chain forgotten to make room."""
        carriers = self._carriers.pop(chain, None)
        changes: list[PauseChange] = []
        if carriers is None:
            carriers = {}
            if len(self._carriers) >= self.max_chains:
                changes = self._forget(next(iter(self._carriers)))
        self._carriers[chain] = carriers
        if peer not in carriers:
            carriers[peer] = False
            self._chains_of.setdefault(peer, set()).add(chain)
        return carriers, changes

    def _forget(self, chain: Chain) -> list[PauseChange]:
        carriers = self._carriers.pop(chain)
        for peer in carriers:
            self._chains_of[peer].discard(chain)
        paused = [peer for peer, p in carriers.items() if p]
        self.resumes_sent += len(paused)
        return [PauseChange(peer, chain, False) for peer in paused]

    def _resume(self, chain: Chain, peers: list[bytes]) -> list[PauseChange]:
        carriers = self._carriers[chain]
        for peer in peers:
            carriers[peer] = False
        self.resumes_sent += len(peers)
        return [PauseChange(peer, chain, False) for peer in peers]

    def announced(self, chain: Chain, peer: bytes, number: int, now: float) -> None:
        """A paused ``peer`` has message ``number`` of ``chain``, which this node has not seen:
        if it has not seen it by `graft_after` from now either, `due` resumes the peer."""
        entry = self._announced.get(chain)
        if entry is None:
            if len(self._announced) >= self.max_chains:
                return
            entry = self._announced[chain] = (now + self.graft_after, number, set())
        entry[2].add(peer)

    def due(self, now: float, seen: Callable[[Chain, int], bool]) -> list[PauseChange]:
        """Resume the peers that announced a message this node still has not seen (Plumtree's
        graft): the unpaused paths of the chain are broken or slow. ``seen(chain, number)``."""
        changes: list[PauseChange] = []
        for chain, (deadline, number, peers) in list(self._announced.items()):
            if deadline > now:
                continue
            del self._announced[chain]
            if seen(chain, number):
                continue
            carriers = self._carriers.get(chain, {})
            for peer in sorted(peers):
                if peer in carriers:
                    carriers[peer] = False
                self.grafts += 1
                self.resumes_sent += 1
                changes.append(PauseChange(peer, chain, False))
        return changes

    # -- both sides: a peer went away -----------------------------------------------------------

    def peer_gone(self, peer: bytes) -> list[PauseChange]:
        """``peer``'s connection ended: forget what it carried and asked; resume carriers of the
        chains it leaves with fewer than `eager` unpaused (to peers still connected)."""
        self._paused_by.pop(peer, None)
        for _, _, announcers in self._announced.values():
            announcers.discard(peer)
        changes: list[PauseChange] = []
        for chain in sorted(self._chains_of.pop(peer, set())):
            carriers = self._carriers[chain]
            del carriers[peer]
            unpaused = sum(1 for paused in carriers.values() if not paused)
            paused = [p for p, is_paused in carriers.items() if is_paused]
            changes += self._resume(chain, paused[: max(0, self.eager - unpaused)])
            if not carriers:
                del self._carriers[chain]
        return changes

    # -- sending: what peers asked ----------------------------------------------------------------

    def asked(self, peer: bytes, chain: Chain, paused: bool) -> bool:
        """``peer`` asked us to stop (or start again) pushing ``chain``; False if ignored."""
        chains = self._paused_by.setdefault(peer, set())
        if not paused:
            chains.discard(chain)
            return True
        if chain not in chains and len(chains) >= self.max_paused_per_peer:
            self.ignored += 1
            return False
        chains.add(chain)
        return True

    def paused_by(self, peer: bytes, chain: Chain) -> bool:
        """Whether ``peer`` asked us not to push ``chain`` to it."""
        chains = self._paused_by.get(peer)
        return chains is not None and chain in chains

    # -- reporting ------------------------------------------------------------------------------

    def paused(self, chain: Chain) -> list[bytes]:
        """The carriers of ``chain`` this node paused, in the order they were first heard."""
        return [peer for peer, paused in self._carriers.get(chain, {}).items() if paused]

    def carriers(self, chain: Chain) -> list[bytes]:
        return list(self._carriers.get(chain, {}))

    def statistics(self) -> PruningStatistics:
        return PruningStatistics(
            chains=len(self._carriers),
            paused_here=sum(sum(c.values()) for c in self._carriers.values()),
            paused_by_peers=sum(map(len, self._paused_by.values())),
            pauses_sent=self.pauses_sent,
            resumes_sent=self.resumes_sent,
            grafts=self.grafts,
            ignored=self.ignored,
        )
