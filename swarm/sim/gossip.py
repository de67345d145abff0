"""Peer discovery in the simulation: bee's hive announcements, and the bootnode contact of a joining node.

When two nodes connect, each *announces* to the other (ethersphere/bee ``Kad.Announce``, run by both the
dialling and the accepting side): node ``a`` tells the new peer ``b`` up to ``bin_size`` of its connected
peers from every bin, chosen at random (bee's ``BroadcastBinSize``: 2 in earlier releases, 4 now; the
simulation's default is 2, see ``SimParams``; here a random window of the bin, see ``Hive.window``), or
all of a bin's connected peers when the bin is at or beyond ``a``'s depth and ``b`` is ``a``'s
neighbour; and it tells each peer it named about ``b``. Only connected peers are ever announced, so nodes
that left are not spread.

A joining node asks a bootnode, which names peers to it (and names it to them) but does not stay connected:
bee's bootnodes accept everyone and kick a random peer from an over-saturated bin, so their connections,
and what they announce, turn over all the time; the simulation stands for that with a random sample of
all the bootnode knows (bootnodes keep every peer they hear of). Were the bootnode kept as a peer, every
node would have it as its first-learned peer and ``first`` would make it the hub of the whole network.

This node's own gossip (``swarm.net.gossip``) sends every record it has to every peer: in a 16,384-node
network that is every node knowing every other, which neither scales nor matches a real swarm, so the
simulation follows bee here.
"""

from __future__ import annotations

import random

from .network import SimNetwork

__all__ = ["Hive"]


class Hive:
    """Announcements with the random choices drawn from one seeded generator (a network's)."""

    def __init__(self, rng: random.Random, bin_size: int = 2) -> None:
        if bin_size < 1:
            raise ValueError(f"the gossip bin size must be at least 1, got {bin_size}")
        self.rng = rng
        self.bin_size = bin_size
        self.records = 0  # peers named, in all announcements

    def __call__(self, net: SimNetwork, a: int, b: int) -> None:
        """Node ``a`` announces its connected peers to node ``b``, and ``b`` to the peers it names."""
        table = net.tables[a]
        new = net.overlays[b]
        depth = table.depth()
        q = table.bin_of(new)
        neighbour = q >= depth
        k = self.bin_size
        index, tables, active = net.index, net.tables, net.active
        receiver = tables[b]
        named = 0
        for po, peers in table.connected_bins():
            if len(peers) > k and not (neighbour and po >= depth):
                peers = self.window(peers)
            # Peers of a's bin po < q lie in b's bin po, those of a's bins po > q in b's bin q (po == q:
            # deeper). A full bin keeps nothing new, so when b's is full b's side is skipped (same outcome).
            shared = po if po < q else q
            to_b = po == q or receiver.has_room(shared)
            for peer in peers:
                if peer != new:  # net.learn, inlined: this loop is most of a simulation's time
                    if to_b and receiver.add_known(peer):
                        active.add(b)
                    j = index[peer]
                    if tables[j].add_known(new):
                        active.add(j)
                    named += 1
        self.records += named

    def window(self, peers: list[bytes]) -> list[bytes]:
        """``bin_size`` of ``peers`` starting at a random one, cyclically.

        Each peer is named with the same probability as by a random subset (bee's ``randomSubset``), for
        one random draw instead of ``random.sample``'s several (a third of all gossip time in profiles).
        """
        k = self.bin_size
        start = self.rng.randrange(len(peers))
        chosen = peers[start : start + k]
        return chosen if len(chosen) == k else chosen + peers[: k - len(chosen)]

    def contact(self, net: SimNetwork, joiner: int, bootnode: int) -> None:
        """``joiner`` asks ``bootnode`` for peers; the bootnode learns it, and they do not stay connected.

        The bootnode names up to ``bin_size`` random peers per bin of all it knows (a busy bootnode's
        connections turn over all the time, so what it announces is a changing sample of the network), and
        names the joiner to them. A bootnode that knows nobody yet: the joiner keeps the bootnode itself.
        """
        boot = net.tables[bootnode]
        new = net.overlays[joiner]
        index = net.index
        for po in range(boot.max_po + 1):
            peers = boot.known(po)
            if len(peers) > self.bin_size:
                peers = self.window(peers)
            for peer in peers:
                net.learn(joiner, peer)
                if net.online[index[peer]]:
                    net.learn(index[peer], new)
                self.records += 1
        net.learn(bootnode, new)
        if not net.tables[joiner].known_count():
            net.learn(joiner, net.overlays[bootnode])
