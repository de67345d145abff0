"""Which inbound sessions a node takes: the rule that keeps the peers its table wants (pure).

Identities are free, so a stranger can open thousands of handshaken sessions, each from a new
overlay (2,500 once took a node from 66 MB to 1.32 GB). An inbound peer is refused when:

- its bin is below depth and holds ``over_saturation`` connected peers (bee's ``Pick``: the
  table would prune the surplus anyway);
- its bin is in the neighbourhood and holds ``neighbourhood_cap`` connected peers (every
  neighbour is wanted, but a flood of made-up ones in one bin is not);
- the node holds ``max_connections`` sessions already and the peer's bin is saturated: at the cap
  only a peer that fills a bin still short of ``saturation`` gets in, which is what the table
  wants (connectivity in every bin), so the sessions stay below ``max_connections`` plus
  ``saturation`` per bin.

Outbound dials are the connection manager's own choice and never refused here.
"""

from __future__ import annotations

from kademlia.table import PeerTable

__all__ = ["NEIGHBOURHOOD_FACTOR", "inbound_refusal"]

NEIGHBOURHOOD_FACTOR = 4
"""A neighbourhood bin takes this many times ``over_saturation`` connected peers."""


def inbound_refusal(table: PeerTable, overlay: bytes, *, max_connections: int) -> str | None:
    """Why an inbound session from ``overlay`` is refused (None: it is welcome)."""
    if table.is_connected(overlay):
        return None  # a reconnection replaces the old session
    po = table.bin_of(overlay)
    in_bin = len(table.connected(po))
    if po < table.depth():
        if in_bin >= table.over_saturation:
            return f"bin {po} over-saturated ({in_bin} peers)"
    elif in_bin >= NEIGHBOURHOOD_FACTOR * table.over_saturation:
        return f"neighbourhood bin {po} full ({in_bin} peers)"
    if table.connected_count() >= max_connections and in_bin >= table.saturation:
        return f"{table.connected_count()} connections and bin {po} saturated"
    return None
