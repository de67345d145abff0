"""Building a node's network services: the peer table, the address book and its dial policy
(both kept by `Topology`), `Sessions` (one per connected peer), the Kademlia `ConnectionManager`
and `Gossip`. They call each other back (the topology tells the manager of a change, the
manager dials through the sessions, the sessions hand new peers to the `PeerWiring`), so they
are built together; the wiring, which needs every other service, is late-bound.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kademlia import PeerTable, get_strategy
from kademlia.addresses import AddressBook, Backoff, DialPolicy
from kademlia.admission import inbound_refusal
from kademlia.manager import ConnectionManager
from pot import MAX_PO
from streamer.channel import TlsCredentials
from streamer.identity import NodeIdentity
from streamer.messages import GoodbyeCode
from swarm.config import NodeConfig
from swarm.net.gossip import Gossip, GossipCounters
from swarm.net.sessions import Sessions
from swarm.net.topology import Topology
from swarm.peer_wiring import PeerWiring

__all__ = ["NetworkServices", "build_network_services"]


@dataclass(frozen=True)
class NetworkServices:
    table: PeerTable
    topology: Topology
    sessions: Sessions
    manager: ConnectionManager
    gossip: Gossip
    credentials: TlsCredentials | None  # None: the plain channel

    def gossip_counters(self) -> GossipCounters:
        """Peer records received, rejected (bad signature or address), rate-limited, refused."""
        gossip = self.gossip
        return GossipCounters(
            received=gossip.received,
            rejected=gossip.rejected,
            rate_limited=gossip.rate_limited,
            refused=self.topology.refused,
        )


def build_network_services(
    config: NodeConfig, identity: NodeIdentity, overlay: bytes, wiring: Callable[[], PeerWiring]
) -> NetworkServices:
    """The network services of the node ``overlay``; ``wiring()`` is called once connections come."""
    table = PeerTable(
        overlay,
        neighbourhood_size=config.neighbourhood_size,
        saturation=config.saturation,
        over_saturation=config.over_saturation,
        max_po=MAX_PO,
    )
    networks = config.dial_networks
    credentials = TlsCredentials() if config.channel == "tls" else None
    if credentials is not None and not config.peers:
        # A node with no peer to dial waits to be dialled: its first peer should not wait for the
        # certificate (30-50 ms). One that dials makes it at its first inbound connection, and
        # spends its start-up on its dials.
        credentials.prepare()
    topology = Topology(
        overlay,
        table,
        AddressBook(overlay),
        DialPolicy(networks) if networks else DialPolicy.for_host(config.host),
        forget_record=lambda peer: gossip.drop_record(peer),
        changed=lambda: manager.changed(),
    )
    sessions = Sessions(
        lambda challenge, binding: wiring().handshake(challenge, binding),
        lambda conn: wiring().make_peer(conn),
        network_id=config.network_id,
        overlay=overlay,
        connected=lambda peer: wiring().connected(peer),
        disconnected=lambda peer: wiring().disconnected(peer),
        credentials=credentials,
        refusal=lambda peer: inbound_refusal(table, peer, max_connections=config.max_connections),
        retired=lambda peer: wiring().retired(peer),
        parting=lambda peer: gossip.parting(peer) if config.gossip else None,
        ended=lambda overlay, broken: manager.session_ended(overlay, broken),
    )
    manager = ConnectionManager(
        table,
        topology.book,
        get_strategy(config.strategy),
        sessions.dial,
        lambda peer, reason: sessions.close(peer, GoodbyeCode.PRUNED, reason),
        backoff=Backoff(config.redial_min, config.redial_max),
    )
    gossip = Gossip(identity, config.network_id, topology.learn, interval=config.gossip_interval)
    return NetworkServices(table, topology, sessions, manager, gossip, credentials)
