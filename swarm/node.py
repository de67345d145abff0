"""The node: one process, one trio nursery, a few services composed in one place.

State lives under one data directory: `node.key` (the identity, kept when the store is wiped),
`localstore/` (the chunk store: chunk data, pull and address indexes, and a LevelDB for
cursors and sync state) and `node.json` (the ports chosen at start-up, for scripts). Services:
the TCP listener; the Kademlia connection manager (dials suggested peers, prunes over-saturated
bins) and the bootnode diallers; gossip; one `Peer` per connection (streamer connection,
upstream server, puller, retrieve requests); the node-wide `Puller` (sync by depth), `Retrieval`
and the HTTP API.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import trio

from kademlia import PeerTable, get_strategy, sync_bins
from kademlia.addresses import AddressBook, Backoff, PeerAddress
from kademlia.manager import ConnectionManager
from localstore import LocalStore
from localstore.cache import DEFAULT_CACHE_BYTES
from pot import proximity
from streamer.connection import Disconnect, HandshakeFailed, PeerConnection, handshake
from streamer.identity import NodeIdentity, load_or_create_identity, make_handshake
from streamer.messages import PROTOCOL_VERSION, GoodbyeCode, Handshake, Peers
from swarm import status
from swarm.gossip import Gossip
from swarm.peer import Peer
from swarm.retrieval import Retrieval
from syncer.downstream import Puller, PullerConfig, SyncPolicy
from syncer.verifier import ChunkVerifier

log = logging.getLogger(__name__)

MAX_PO = 31
RECENT_DISCONNECTIONS = 16
"""How many ended peer sessions `GET /sync` lists (newest first), so dropped peers stay visible."""
# What the simulations (`swarm sim`, docs/simulation.md) show best: the biggest gaps smallest, the
# coolest gaps and the fewest hops, level with `gap` within noise and ahead of `first`.
DEFAULT_STRATEGY = "temperature"


@dataclass(frozen=True)
class NodeConfig:
    """Everything a node needs to start. Port 0 picks a free port."""

    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 0
    api_host: str = "127.0.0.1"
    api_port: int | None = 0  # None: no HTTP API
    peers: tuple[tuple[str, int], ...] = ()  # bootnodes
    network_id: int = 1
    strategy: str = DEFAULT_STRATEGY  # peer suggestion: first, gap or temperature
    neighbourhood_size: int = 3
    saturation: int = 4
    over_saturation: int = 8
    gossip: bool = True  # False: static peering, no peer records sent or learned
    gossip_interval: float = 5.0
    live_idle: float = 0.05
    retrieve_timeout: float = 10.0
    hop_limit: int = 8
    cache_bytes: int = DEFAULT_CACHE_BYTES  # retrieved and forwarded chunks kept in memory; 0: none
    redial_min: float = 0.5
    redial_max: float = 30.0
    puller: PullerConfig = field(default_factory=PullerConfig)
    # processes verifying synced chunks on other cores (`swarm node` picks one per spare core);
    # 0: verify in the node's own process
    verify_workers: int = 0


class Node:
    """A running node. Start it with `await nursery.start(node.run)`."""

    def __init__(self, config: NodeConfig, *, sync_policy: SyncPolicy = sync_bins) -> None:
        get_strategy(config.strategy)  # fail early on a bad name
        self.config = config
        self.sync_policy = sync_policy
        self.data_dir = Path(config.data_dir)
        self.identity: NodeIdentity | None = None
        self.overlay = b""
        self._store: LocalStore | None = None
        self._puller: Puller | None = None
        self._table: PeerTable | None = None
        self.book = AddressBook()
        self.manager: ConnectionManager | None = None
        self.gossip: Gossip | None = None
        self.retrieval = Retrieval(
            self, hop_limit=config.hop_limit, timeout=config.retrieve_timeout, cache_bytes=config.cache_bytes
        )
        self.peers: dict[bytes, Peer] = {}
        self.p2p_port = 0
        self.api_port: int | None = None
        self.started_at = time.time()
        self._nursery: trio.Nursery | None = None
        self._depth = 0
        self.past_traffic: dict[bytes, dict[str, int]] = {}  # byte counters of ended connections
        self.connections_refused = 0
        self.violations = 0
        self.disconnections: deque[dict[str, Any]] = deque(maxlen=RECENT_DISCONNECTIONS)

    # -- composition --------------------------------------------------------------------------

    @property
    def store(self) -> LocalStore:
        if self._store is None:
            raise RuntimeError("node is not running")
        return self._store

    @property
    def puller(self) -> Puller:
        if self._puller is None:
            raise RuntimeError("node is not running")
        return self._puller

    @property
    def table(self) -> PeerTable:
        if self._table is None:
            raise RuntimeError("node is not running")
        return self._table

    def depth(self) -> int:
        return self._depth

    async def run(self, *, task_status: trio.TaskStatus[Node] = trio.TASK_STATUS_IGNORED) -> None:
        """Run until cancelled; reports readiness (ports bound, node.json written) via task_status."""
        config = self.config
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.identity = load_or_create_identity(self.data_dir / "node.key")
        self.overlay = self.identity.overlay(config.network_id)
        self._store = LocalStore(self.data_dir / "localstore", self.overlay)
        verifier = ChunkVerifier(config.verify_workers)
        self._puller = Puller(self._store, config=config.puller, verifier=verifier)
        self._table = PeerTable(
            self.overlay,
            neighbourhood_size=config.neighbourhood_size,
            saturation=config.saturation,
            over_saturation=config.over_saturation,
            max_po=MAX_PO,
        )
        self.manager = ConnectionManager(
            self._table,
            self.book,
            get_strategy(config.strategy),
            self._dial,
            self.disconnect,
            backoff=Backoff(config.redial_min, config.redial_max),
        )
        self.gossip = Gossip(self.identity, config.network_id, self.learn, interval=config.gossip_interval)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(verifier.run)
                serve_p2p = partial(trio.serve_tcp, self._accept, config.port, host=config.host)
                listeners = await nursery.start(serve_p2p)
                self.p2p_port = listeners[0].socket.getsockname()[1]
                self.gossip.advertise(config.host, self.p2p_port)
                if config.api_port is not None:
                    from swarm.api import serve_api

                    self.api_port = await nursery.start(serve_api, self, config.api_host, config.api_port)
                await nursery.start(self.manager.run)
                if config.gossip:
                    nursery.start_soon(self.gossip.run, lambda: list(self.peers.values()))
                for host, port in config.peers:
                    nursery.start_soon(self.keep_bootnode, host, port)
                self._write_node_json()
                api = f"http://{config.api_host}:{self.api_port}" if self.api_port else "off"
                log.info(
                    "node %s listening on %s:%d, API %s", self.overlay.hex(), config.host, self.p2p_port, api
                )
                task_status.started(self)
        finally:
            with trio.CancelScope(shield=True):
                for peer in list(self.peers.values()):
                    peer.conn.close(GoodbyeCode.SHUTDOWN, "node shutting down")
            self._nursery = None
            self._store.close()

    def _write_node_json(self) -> None:
        info = {
            "overlay": self.overlay.hex(),
            "p2p_port": self.p2p_port,
            "api_port": self.api_port,
            "pid": os.getpid(),
        }
        tmp = self.data_dir / "node.json.tmp"
        tmp.write_text(json.dumps(info) + "\n")
        tmp.replace(self.data_dir / "node.json")

    def _local_handshake(self, challenge: bytes) -> Handshake:
        """Our handshake for one connection, signed over the peer's Hello nonce."""
        assert self.identity is not None
        return make_handshake(
            self.identity,
            version=PROTOCOL_VERSION,
            network_id=self.config.network_id,
            epoch=self.store.epoch,
            host=self.config.host,
            port=self.p2p_port,
            challenge=challenge,
        )

    # -- topology -----------------------------------------------------------------------------

    def learn(self, address: PeerAddress) -> None:
        """A peer and where it listens (from a handshake or verified gossip)."""
        if address.overlay == self.overlay:
            return
        changed = self.book.add(address)
        changed = self.table.add_known(address.overlay) or changed
        if changed and self.manager is not None:
            self.manager.changed()

    def disconnect(self, overlay: bytes, reason: str) -> None:
        peer = self.peers.get(overlay)
        if peer is not None:
            peer.conn.close(GoodbyeCode.PRUNED, reason)

    def _update_depth(self) -> None:
        depth = self.table.depth()
        if depth != self._depth:
            log.info("depth %d -> %d", self._depth, depth)
            self._depth = depth
            for peer in self.peers.values():
                if peer.puller.started.is_set():
                    peer.puller.set_bins(self.sync_policy(peer.po, depth))

    # -- connections --------------------------------------------------------------------------

    async def _accept(self, stream: trio.SocketStream) -> None:
        try:
            conn = await self._handshake(stream, outbound=False)
        except HandshakeFailed:
            return
        await self._run_session(conn)

    async def connect(self, host: str, port: int) -> PeerConnection:
        """Dial once and run the session in the background; returns when the handshake is done."""
        assert self._nursery is not None
        stream = await trio.open_tcp_stream(host, port)
        conn = await self._handshake(stream, outbound=True)
        ready = trio.Event()
        self._nursery.start_soon(self._run_session, conn, ready)
        await ready.wait()
        return conn

    async def _dial(self, address: PeerAddress) -> None:
        """The connection manager's dial: connect, and check the peer is who gossip said."""
        if address.overlay in self.peers:
            return
        conn = await self.connect(address.host, address.port)
        if conn.overlay != address.overlay:
            conn.close(GoodbyeCode.BAD_HANDSHAKE, "not the peer this address was advertised for")
            actual, expected = conn.overlay.hex()[:12], address.overlay.hex()[:12]
            reason = f"{address.host}:{address.port} is {actual}, not {expected}"
            raise HandshakeFailed(reason, GoodbyeCode.BAD_HANDSHAKE, "local")

    async def keep_bootnode(self, host: str, port: int) -> None:
        """Dial a bootnode, and again (with backoff) whenever this node has no peers at all."""
        delay = self.config.redial_min
        while True:
            if self.peers:
                await trio.sleep(self.config.redial_min)
                continue
            try:
                await self.connect(host, port)
                delay = self.config.redial_min
            except (OSError, HandshakeFailed) as exc:
                log.info("dial bootnode %s:%d failed: %s", host, port, exc)
                await trio.sleep(delay)
                delay = min(delay * 2, self.config.redial_max)

    async def _handshake(self, stream: trio.abc.Stream, *, outbound: bool) -> PeerConnection:
        try:
            return await handshake(
                stream, self._local_handshake, network_id=self.config.network_id, outbound=outbound
            )
        except HandshakeFailed as exc:
            self.connections_refused += 1
            log.warning("handshake %s failed (%s): %s", "out" if outbound else "in", exc.by, exc.reason)
            raise

    async def _run_session(self, conn: PeerConnection, ready: trio.Event | None = None) -> None:
        """Register the peer, run its connection until it ends, clean up after it."""
        overlay = conn.overlay
        existing = self.peers.get(overlay)
        if existing is not None:
            if _keep_existing(existing.conn, conn, self.overlay):
                conn.close(GoodbyeCode.DUPLICATE_CONNECTION, "already connected")
                if ready is not None:
                    ready.set()
                await conn.run(_drop)
                return
            existing.conn.close(GoodbyeCode.DUPLICATE_CONNECTION, "replaced by a newer connection")
            self._forget(existing)
        peer = Peer(self, conn, min(proximity(self.overlay, overlay), MAX_PO))
        self.peers[overlay] = peer
        remote = conn.remote
        if remote.host and remote.port:
            self.learn(PeerAddress(overlay, remote.host, remote.port))
        self.table.connect(overlay)
        self._update_depth()
        log.info(
            "peer %s connected (%s, po %d)", overlay.hex()[:12], "out" if conn.outbound else "in", peer.po
        )
        conn.start_soon(peer.puller.run)
        assert self.gossip is not None
        if self.config.gossip:
            conn.start_soon(self.gossip.tell, peer)
        if ready is not None:
            ready.set()
        try:
            disconnect = await peer.run()
        except Exception:
            # a bug in handling this peer must not take the node down: log it, drop the peer
            log.exception("peer %s: unexpected error; dropping the connection", overlay.hex()[:12])
            disconnect = Disconnect("local", GoodbyeCode.PROTOCOL_ERROR, "internal error")
        finally:
            self._forget(peer)
        if disconnect.violation:
            self.violations += 1
        self.disconnections.appendleft(
            {
                "overlay": overlay.hex(),
                "po": peer.po,
                "at": time.time(),
                "by": disconnect.by,
                "code": _code_name(disconnect.code),
                "reason": disconnect.reason,
                "violation": disconnect.violation,
            }
        )
        log.info(
            "peer %s disconnected by %s: %s (%s)",
            overlay.hex()[:12],
            disconnect.by,
            disconnect.reason or "-",
            _code_name(disconnect.code),
        )

    def _forget(self, peer: Peer) -> None:
        if self.peers.get(peer.overlay) is not peer:
            return
        del self.peers[peer.overlay]
        self.table.disconnect(peer.overlay)
        self.puller.detach(peer.overlay)
        if self.gossip is not None:
            self.gossip.forget(peer.overlay)
        peer.closed("peer disconnected")
        totals = self.past_traffic.setdefault(peer.overlay, dict.fromkeys(status.TRAFFIC, 0))
        for name in status.TRAFFIC:
            totals[name] += getattr(peer.conn.stats, name)
        self._update_depth()
        if self.manager is not None:
            self.manager.changed()

    def peers_by_proximity(self, address: bytes) -> Iterator[Peer]:
        """Connected peers, closest to `address` first (XOR distance)."""
        target = int.from_bytes(address, "big")
        yield from sorted(self.peers.values(), key=lambda p: int.from_bytes(p.overlay, "big") ^ target)

    def on_peer_records(self, peer: Peer, msg: Peers) -> None:
        assert self.gossip is not None
        if self.config.gossip:
            self.gossip.on_records(peer, msg)

    # -- status (swarm/status.py builds the documents) ------------------------------------------

    def sync_status(self) -> dict[str, Any]:
        """The `GET /sync` document."""
        return status.sync_status(self)

    def topology(self) -> dict[str, Any]:
        """The `GET /topology` document."""
        return status.topology(self)

    def loss_totals(self) -> dict[str, int]:
        """Node-wide loss and traffic counters."""
        return status.loss_totals(self)


def _keep_existing(existing: PeerConnection, new: PeerConnection, own: bytes) -> bool:
    """Two connections to one peer: keep the one dialled by the lower overlay (both sides agree).

    Two connections dialled the same way mean the peer reconnected: the newer one wins.
    """
    if existing.outbound == new.outbound:
        return False
    dialler_of_new = own if new.outbound else new.overlay
    dialler_of_existing = own if existing.outbound else existing.overlay
    return dialler_of_existing < dialler_of_new


async def _drop(msg: object) -> None:
    return None


def _code_name(code: int) -> str:
    try:
        return GoodbyeCode(code).name
    except ValueError:
        return str(code)
