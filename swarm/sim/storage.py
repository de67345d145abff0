"""Which nodes hold which chunks: uploaded to their neighbourhoods, pulled by new storers a hop at a time.

Two models (``SimParams.storage``):

- ``area`` (the default, and every figure of docs/simulation.md before the comparison with real
  nodes): a node holds exactly the chunks of its *area*, those at PO >= its depth from it (DESIGN.md's
  responsibility). When the network has settled, ``CHUNKS`` chunks at random addresses are uploaded:
  every node responsible for one holds it (push sync and pull sync have run to completion).
- ``pull``: what real nodes whose reserves are not full hold (radius 0: they keep everything they pull).
  A chunk is uploaded at a random online node, which keeps it, and reaches the nodes responsible for
  it; then nodes pull by the sync rule itself (`kademlia.depth.sync_bins`: from a peer at PO ``p`` below
  our depth its bin ``p``, from a neighbour its every bin from our depth up, bins counted from the
  *peer*), step after step until nothing moves. A node so also holds the chunks closer to it than to a
  shallower peer that holds them, and whatever its uploader's neighbours pulled: 9.1 holders per
  chunk against 4.7 under ``area`` at 32 nodes, as a real 32-node swarm held 9.9
  (benches/sim_vs_swarm.py, docs/simulation.md).

Afterwards nodes leave (their chunks with them) and join, and depths change; at each *sync step* (one per
churn event) a node pulls what its model says it pulls from its connected peers. So a chunk reaches a new
storer one hop per step, and is lost when every holder leaves before passing it on. Without churn, under
``area`` the holders are exactly the responsible nodes; the greedy route then always ends at a holder
(the node where it stops has no peer in the chunk's bin, so the empty-bin cap keeps the chunk in its
neighbourhood), and retrievals cannot fail: churn is what makes them fail.
"""

from __future__ import annotations

import random

from pot import Pot, proximity

from .network import SimNetwork

__all__ = ["CHUNKS", "STORAGE_MODELS", "ChunkStore"]

CHUNKS = 1000
STORAGE_MODELS = ("area", "pull")
MAX_PULL_STEPS = 64
"""Sync steps ``pull`` runs after the upload at most (a chunk moves a hop a step; a few suffice)."""


class ChunkStore:
    """The uploaded chunks and their holders (online nodes)."""

    def __init__(
        self, net: SimNetwork, rng: random.Random, count: int = CHUNKS, storage: str = "area"
    ) -> None:
        if storage not in STORAGE_MODELS:
            raise ValueError(f"storage model must be one of {', '.join(STORAGE_MODELS)}, got {storage!r}")
        self.storage = storage
        nbytes = len(net.overlays[0])
        if count > 2 ** (8 * nbytes):
            raise ValueError(f"{count} chunks do not fit {nbytes}-byte addresses")
        chosen: dict[bytes, None] = {}
        while len(chosen) < count:
            chosen[rng.randbytes(nbytes)] = None
        self.addresses = list(chosen)
        self.index = {a: c for c, a in enumerate(self.addresses)}
        self.pot = Pot.from_addresses(self.addresses)
        self.holders: list[set[int]] = [set() for _ in self.addresses]
        self.held: dict[int, set[int]] = {}  # node -> chunks it holds
        online = net.online_nodes()
        for i in online:
            for c in self.area(net, i):
                self._hold(i, c)
        if storage == "pull":
            for c in range(len(self.addresses)):  # drawn after the addresses: ``area`` draws the same ones
                self._hold(online[rng.randrange(len(online))], c)
            for _ in range(MAX_PULL_STEPS):
                if not self.sync(net):
                    break

    def area(self, net: SimNetwork, i: int) -> list[int]:
        """The chunks node ``i`` is responsible for: those at PO >= its depth."""
        table = net.tables[i]
        return [self.index[a] for a in self.pot.with_prefix(table.base, table.depth())]

    def _hold(self, i: int, c: int) -> None:
        self.holders[c].add(i)
        self.held.setdefault(i, set()).add(c)

    def leave(self, i: int) -> None:
        """Node ``i`` left: it holds nothing any more."""
        for c in self.held.pop(i, ()):
            self.holders[c].discard(i)

    def sync(self, net: SimNetwork) -> int:
        """One sync step: every online node pulls from its connected peers what its model says (the
        chunks of its area a peer holds; under ``pull``, the sync rule's bins of each peer).

        Pulls see the holdings from before the step (a chunk moves one hop per step). Returns how many
        chunks were pulled.
        """
        pulls = self._rule_pulls(net) if self.storage == "pull" else self._area_pulls(net)
        for i, c in pulls:
            self._hold(i, c)
        return len(pulls)

    def _area_pulls(self, net: SimNetwork) -> list[tuple[int, int]]:
        pulls = []
        for i in net.online_nodes():
            mine = self.held.get(i, set())
            peers = [net.index[p] for p in net.tables[i].connected_peers()]
            for c in self.area(net, i):
                if c not in mine and any(c in self.held.get(j, ()) for j in peers):
                    pulls.append((i, c))
        return pulls

    def _rule_pulls(self, net: SimNetwork) -> list[tuple[int, int]]:
        bins = {j: self._bins(net, j) for j in self.held}  # each holder's pull index, by bin
        pulls: set[tuple[int, int]] = set()
        for i in net.online_nodes():
            mine = self.held.get(i, set())
            table = net.tables[i]
            for peer in table.connected_peers():
                j = net.index[peer]
                if j not in bins:
                    continue
                for b in table.sync_bins_for(peer):  # the node's own sync rule
                    pulls.update((i, c) for c in bins[j].get(b, ()) if c not in mine)
        return sorted(pulls)

    def _bins(self, net: SimNetwork, j: int) -> dict[int, list[int]]:
        by_bin: dict[int, list[int]] = {}
        base = net.overlays[j]
        for c in self.held[j]:
            by_bin.setdefault(min(proximity(base, self.addresses[c]), net.max_po), []).append(c)
        return by_bin

    def stored_at(self, path: tuple[int, ...], c: int) -> int:
        """The index in ``path`` of the first node holding chunk ``c``; -1 when none does."""
        holders = self.holders[c]
        for k, v in enumerate(path):
            if v in holders:
                return k
        return -1

    def replication(self, c: int) -> int:
        return len(self.holders[c])

    def lost(self) -> int:
        """Chunks nobody holds any more."""
        return sum(1 for h in self.holders if not h)

    def responsible(self, net: SimNetwork, c: int) -> list[int]:
        """The online nodes responsible for chunk ``c`` (for tests)."""
        a = self.addresses[c]
        return [i for i in net.online_nodes() if proximity(net.overlays[i], a) >= net.tables[i].depth()]
