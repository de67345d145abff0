"""How a node is configured: every setting `swarm node` and the tests can give it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kademlia.forwarding import DEFAULT_FORWARDING
from kademlia.suggest import DEFAULT_STRATEGY
from localstore.cache import DEFAULT_CACHE_BYTES
from localstore.capacity import DEFAULT_CAPACITY
from swarm.live.config import LiveConfig
from swarm.spaces.config import SpaceConfig
from syncer.pull_config import PullerConfig
from syncer.upload_first import DEFAULT_MAX_WAIT, DEFAULT_QUIET

__all__ = ["CHANNELS", "DEFAULT_FORWARDING", "DEFAULT_STRATEGY", "NodeConfig"]

CHANNELS = ("tls", "plain")


@dataclass(frozen=True)
class NodeConfig:
    """Everything a node needs to start. Port 0 picks a free port."""

    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 0
    api_host: str = "127.0.0.1"
    api_port: int | None = 0  # None: no HTTP API
    api_allow_hosts: tuple[str, ...] = ()  # Host names the API answers beside the local ones
    cors_allowed_origins: tuple[str, ...] = ()  # origins whose pages may use the API (Bee's option)
    peers: tuple[tuple[str, int], ...] = ()  # bootnodes
    network_id: int = 1
    strategy: str = DEFAULT_STRATEGY  # peer suggestion: kademlia.STRATEGIES
    forwarding: str = DEFAULT_FORWARDING  # next hop among equally close peers: kademlia.forwarding.FORWARDING
    channel: str = "tls"  # "plain": no TLS under the protocol (to measure what TLS costs)
    # networks (CIDR) whose addresses gossip may make this node dial; empty: loopback only for a
    # node listening on loopback, else every address but loopback, link-local and multicast
    dial_networks: tuple[str, ...] = ()
    neighbourhood_size: int = 3
    saturation: int = 4
    over_saturation: int = 8
    max_connections: int = 128  # inbound sessions past this only fill unsaturated bins (kademlia.admission)
    gossip: bool = True  # False: static peering, no peer records sent or learned
    gossip_interval: float = 5.0
    live_idle: float = 0.05
    # live offers wait while the node serves uploads: until `replication_quiet` s without upload
    # work, at most `replication_wait` s (0: never; syncer/upload_first.py)
    replication_quiet: float = DEFAULT_QUIET
    replication_wait: float = DEFAULT_MAX_WAIT
    retrieve_timeout: float = 10.0
    hedge_after: float = 0.25  # a silent retrieval or push attempt gets a parallel one (benches.retrieval)
    hop_limit: int = 8
    cache_bytes: int = DEFAULT_CACHE_BYTES  # retrieved and forwarded chunks kept in memory; 0: none
    redial_min: float = 0.5
    redial_max: float = 30.0
    puller: PullerConfig = field(default_factory=PullerConfig)
    # processes verifying synced chunks beside the node (`swarm node` picks one per core, at most 4);
    # 0: verify in the node's own process
    verify_workers: int = 0
    capacity: int = DEFAULT_CAPACITY  # chunks the reserve keeps (localstore/reserve.py)
    evict_batch: int = 256  # chunks evicted at most before other tasks run again
    push_workers: int = 16  # uploaded chunks pushed at once (swarm/reserve/pusher.py)
    receipt_timeout: float = 60.0  # how long POST /bytes waits for its last receipts
    provable_sync: str = "verify"  # provable streams: off | sign | verify (swarm/proofs/service.py)
    spaces: SpaceConfig = field(default_factory=SpaceConfig)  # multi-writer spaces (swarm/spaces/)
    live: LiveConfig = field(default_factory=LiveConfig)  # live propagation (docs/live.md)
