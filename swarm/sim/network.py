"""A simulated network: one real ``kademlia.PeerTable`` per node, connected by a real strategy.

Nothing here re-implements the node's logic: which peer a node connects next is
``kademlia.suggest_peer(table, strategy)``; bins, depth and saturation are the table's; the connected
peers are the table's pot. The network only decides who is online, who learns whom, and in which order
nodes act:

- a *round* gives every online node whose table may have a suggestion one turn, in index order: it asks
  ``suggest_peer`` and dials the peer suggested (one dial per turn);
- a connection is bidirectional, as a TCP connection of the real node is: when ``a`` connects ``b``, ``b``'s
  table connects ``a`` too (learning it if it did not know it), so a bin can hold more than ``saturation``
  peers;
- dialling a node that has left fails, and the dialler forgets it (as bee prunes a peer from its address
  book after a failed first dial while it has other connections);
- a node refuses an inbound connection into a bin below its depth that already holds ``over_saturation``
  connected peers (``PeerTable.accepts``, as bee's ``Pick``); the dialler forgets it too (it may hear of
  it again by gossip). So popular nodes cannot collect connections without limit, and nothing is pruned;
- when a node leaves, every peer's table disconnects it; it never comes back (joiners are new nodes);
- with gossip (``swarm.sim.gossip``), both ends of a new connection tell each other peers as bee's hive does.

A node whose suggestion was None is left out of the rounds until its table changes in a way that can give
it one: a peer learned or disconnected. An inbound connection cannot (it adds a peer that is known and
connected at once, so no candidate, and can only raise saturation and depth).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kademlia import PeerTable, SuggestionStrategy, suggest_peer
from kademlia.forwarding import FORWARDING, Forwarding, LoadBook
from pot import Pot

__all__ = ["SimNetwork"]

Announce = Callable[["SimNetwork", int, int], None]


class SimNetwork:
    """Nodes by index (overlays, tables, who is online), the rounds, and the counters they leave."""

    def __init__(
        self,
        strategy: SuggestionStrategy,
        *,
        saturation: int,
        neighbourhood_size: int,
        max_po: int,
        announce: Announce | None = None,
        forwarding: Forwarding = FORWARDING["closest"],
    ) -> None:
        self.strategy = strategy
        self.saturation = saturation
        self.neighbourhood_size = neighbourhood_size
        self.max_po = max_po
        self.announce = announce
        self.forwarding = forwarding  # the next-hop rule of lookups (swarm.sim.metrics.route)
        self.overlays: list[bytes] = []
        self.tables: list[PeerTable] = []
        self.loads: list[LoadBook] = []  # per node, the peers it forwarded to (least recently used)
        self.index: dict[bytes, int] = {}
        self.online: list[bool] = []
        self.online_pot = Pot()
        self.outbound: list[int] = []
        self.joined: list[int] = []  # the round each node came online
        self.left: list[int] = []  # the round each node left, -1 while online
        self.active: set[int] = set()  # online nodes that may have a suggestion
        self.rounds = 0
        self.dials = 0
        self.dial_failures = 0
        self.refused = 0

    @property
    def size(self) -> int:
        """Nodes online now."""
        return len(self.online_pot)

    def online_nodes(self) -> list[int]:
        """The indices of the nodes online now, ascending."""
        return [i for i, up in enumerate(self.online) if up]

    def table_of(self, overlay: bytes) -> PeerTable:
        return self.tables[self.index[overlay]]

    def join(self, overlay: bytes, known: Iterable[int] = (), max_known_per_bin: int | None = None) -> int:
        """Bring a new node online, knowing the nodes ``known`` (indices, learned in that order).

        ``max_known_per_bin`` bounds its address book (``PeerTable``); None: no bound.
        """
        if overlay in self.index:
            raise ValueError(f"overlay {overlay.hex()} is already a node")
        i = len(self.overlays)
        table = PeerTable(
            overlay,
            neighbourhood_size=self.neighbourhood_size,
            saturation=self.saturation,
            max_po=self.max_po,
            max_known_per_bin=max_known_per_bin,
        )
        self.overlays.append(overlay)
        self.tables.append(table)
        self.loads.append(LoadBook())
        self.index[overlay] = i
        self.online.append(True)
        self.online_pot = self.online_pot.add(overlay)
        self.outbound.append(0)
        self.joined.append(self.rounds)
        self.left.append(-1)
        for j in known:
            if j == i:
                raise ValueError(f"node {i} cannot know itself")
            table.add_known(self.overlays[j])
        self.active.add(i)
        return i

    def leave(self, i: int) -> None:
        """Take node ``i`` offline for good: every peer disconnects it."""
        if not self.online[i]:
            raise ValueError(f"node {i} is not online")
        overlay = self.overlays[i]
        for peer in self.tables[i].connected_peers():
            j = self.index[peer]
            self.tables[j].disconnect(overlay)
            self.active.add(j)
        self.online[i] = False
        self.online_pot = self.online_pot.remove(overlay)
        self.left[i] = self.rounds
        self.active.discard(i)

    def learn(self, i: int, overlay: bytes) -> None:
        """Node ``i`` hears of ``overlay`` (gossip); it may then have something to suggest."""
        if self.tables[i].add_known(overlay):
            self.active.add(i)

    def connect(self, i: int, j: int) -> None:
        """Connect online nodes ``i`` (dialling) and ``j``, both ways; then gossip, if any."""
        a, b = self.overlays[i], self.overlays[j]
        self.tables[i].connect(b)
        self.tables[j].connect(a)
        self.outbound[i] += 1
        if self.announce is not None:
            self.announce(self, i, j)
            self.announce(self, j, i)

    def turn(self, i: int) -> None:
        """Node ``i`` asks for a suggestion and dials it; with none, it leaves the rounds."""
        peer = suggest_peer(self.tables[i], self.strategy)
        if peer is None:
            self.active.discard(i)
            self.tables[i].release_pots()  # settled: nothing to search until its table changes
            return
        j = self.index[peer]
        self.dials += 1
        if not self.online[j]:
            self.dial_failures += 1
            self.tables[i].remove_known(peer)
        elif not self.tables[j].accepts(self.overlays[i]):
            self.refused += 1
            self.tables[i].remove_known(peer)
        else:
            self.connect(i, j)

    def run_round(self) -> int:
        """One turn for every active node (those active when the round starts), in index order."""
        turns = sorted(self.active)
        for i in turns:
            if i in self.active:
                self.turn(i)
        self.rounds += 1
        return len(turns)

    def settle(self, max_rounds: int) -> bool:
        """Rounds until no node has a suggestion (True) or ``max_rounds`` more rounds have passed (False)."""
        for _ in range(max_rounds):
            if not self.active:
                return True
            self.run_round()
        return not self.active
