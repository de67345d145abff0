"""Which nodes hold which chunks: uploaded to their neighbourhoods, pulled by new storers a hop at a time.

A node is *responsible* for the chunks of its neighbourhood, those at PO >= its depth from it (the sync
rule's area, DESIGN.md). When the network has settled, ``CHUNKS`` chunks at random addresses are
uploaded: every node responsible for one holds it (push sync and pull sync have run to completion).
Afterwards nodes leave (their chunks with them) and join, and depths change; at each *sync step* (one per
churn event) a node pulls every chunk of its neighbourhood that it lacks and that a connected peer holds.
So a chunk reaches a new storer one hop per step, and is lost when every holder leaves before passing it
on. Without churn, holders are exactly the responsible nodes; the greedy route then always ends at a
holder (the node where it stops has no peer in the chunk's bin, so the empty-bin cap keeps the chunk in
its neighbourhood), and retrievals cannot fail: churn is what makes them fail.
"""

from __future__ import annotations

import random

from pot import Pot, proximity

from .network import SimNetwork

__all__ = ["CHUNKS", "ChunkStore"]

CHUNKS = 1000


class ChunkStore:
    """The uploaded chunks and their holders (online nodes)."""

    def __init__(self, net: SimNetwork, rng: random.Random, count: int = CHUNKS) -> None:
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
        for i in net.online_nodes():
            for c in self.area(net, i):
                self._hold(i, c)

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
        """One sync step: every online node pulls the chunks of its area a connected peer holds.

        Pulls see the holdings from before the step (a chunk moves one hop per step). Returns how many
        chunks were pulled.
        """
        pulls = []
        for i in net.online_nodes():
            mine = self.held.get(i, set())
            peers = [net.index[p] for p in net.tables[i].connected_peers()]
            for c in self.area(net, i):
                if c not in mine and any(c in self.held.get(j, ()) for j in peers):
                    pulls.append((i, c))
        for i, c in pulls:
            self._hold(i, c)
        return len(pulls)

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
