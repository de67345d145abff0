"""Load-balancing simulations of peer suggestion strategies, run on Spark (``swarm sim``, whose
command is `swarm.cli.sim`).

Each network is built from the node's own ``kademlia.PeerTable`` and ``kademlia.suggest_peer``; see
docs/simulation.md for what is measured and how.
"""
