"""A simulated network: one real ``kademlia.PeerTable`` per node, connected with a real strategy.

Nothing here re-implements the node's logic: which peer a node connects next is
``kademlia.suggest_peer(table, strategy)``, bins, depth and saturation are the table's, and the connected
peers are the table's pot. The simulation only decides who knows whom and in which order nodes act:

- node ``i`` first learns its known peers in the order given (the order ``first`` follows);
- nodes take turns round-robin, in index order, one suggestion per turn, until every node is settled
  (``suggest_peer`` gives None: bins below depth hold ``saturation`` peers or all they know, and every
  known peer of the neighbourhood is connected);
- a connection is bidirectional, as a TCP connection of the real node is: when ``a`` connects ``b``,
  ``b``'s table connects ``a`` too (learning it if it did not know it). Inbound connections are accepted
  without limit and nothing is pruned (``over_saturation`` is not applied), so a bin can hold more than
  ``saturation`` peers; connections per node are reported.

A settled node stays settled: an inbound connection adds no candidate and never lowers the depth (it adds
a peer that is known and connected at once), so a settled node leaves the rotation for good.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kademlia import PeerTable, SuggestionStrategy, suggest_peer
from pot import Pot

__all__ = ["Network", "build_network"]


@dataclass
class Network:
    """The connected network: overlays, one table per node, and who initiated how many connections."""

    overlays: list[bytes]
    tables: list[PeerTable]
    outbound: list[int]
    index: dict[bytes, int]
    everyone: Pot

    @property
    def size(self) -> int:
        return len(self.overlays)

    def table_of(self, overlay: bytes) -> PeerTable:
        return self.tables[self.index[overlay]]


def build_network(
    overlays: Sequence[bytes],
    known: Sequence[Sequence[int]],
    strategy: SuggestionStrategy,
    *,
    saturation: int = 4,
    neighbourhood_size: int = 3,
    max_po: int = 31,
) -> Network:
    """Connect the nodes ``overlays`` (distinct), node ``i`` knowing the nodes ``known[i]`` (indices).

    See the module docstring for the rules; the result is a pure function of the arguments.
    """
    if len(known) != len(overlays):
        raise ValueError(f"{len(overlays)} overlays but {len(known)} known lists")
    index = {o: i for i, o in enumerate(overlays)}
    if len(index) != len(overlays):
        raise ValueError("overlays must be distinct")
    tables = [
        PeerTable(o, neighbourhood_size=neighbourhood_size, saturation=saturation, max_po=max_po)
        for o in overlays
    ]
    for i, table in enumerate(tables):
        for j in known[i]:
            if j == i:
                raise ValueError(f"node {i} cannot know itself")
            table.add_known(overlays[j])
    outbound = [0] * len(overlays)
    active = list(range(len(overlays)))
    while active:
        still: list[int] = []
        for i in active:
            table = tables[i]
            peer = suggest_peer(table, strategy)
            if peer is None:
                continue
            table.connect(peer)
            tables[index[peer]].connect(overlays[i])
            outbound[i] += 1
            still.append(i)
        active = still
    return Network(list(overlays), tables, outbound, index, Pot.from_addresses(overlays))
