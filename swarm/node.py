"""The node: the composition root. It builds the services and wires them; they do the work.

State lives under one data directory: `node.key` (the identity, kept when the store is wiped),
`localstore/` (the chunk store: chunk data, pull and address indexes, and a LevelDB for
cursors and sync state) and `node.json` (the ports chosen at start-up, for scripts).

Services, each given only the functions it needs: the store and the `ChunkIntake` (the one door
chunks come in by: synced, re-fetched or uploaded); `Transfers` (one transfer per chunk) and the
`Puller` (the sync rule, what to pull from whom, the synced intervals); the peer table, the
address book (both kept by `Topology`) and the Kademlia `ConnectionManager`; `Sessions` (one
per connected peer: its `Upstream`, its `PullSyncClient`, its retrieve requests); `Gossip`;
`Retrieval`; the HTTP API, which reads one immutable `NodeStatistics` snapshot for everything
it reports. The network services are built in `swarm.network_assembly`, the reserve's in
`swarm.reserve_assembly`; what each connection is wired to, in `swarm.peer_wiring`.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from chunks import Chunk
from kademlia import get_strategy, sync_bins
from kademlia.forwarding import get_forwarding
from localstore import ChunkDamaged, ChunkNotFound
from localstore.pins import Pins
from localstore.reserve import Reserve
from localstore.store import LocalStore
from streamer.connection import GOODBYE_TIMEOUT, PeerConnection
from streamer.identity import NodeIdentity, load_or_create_identity
from streamer.messages import GoodbyeCode
from swarm.api.bee_backend import NodeBeeBackend, load_or_create_eth_key
from swarm.config import CHANNELS, NodeConfig
from swarm.live.assembly import build_live_service
from swarm.live.gsoc import Gsoc
from swarm.net.logbudget import LogBudgets
from swarm.net.peer import Peer
from swarm.net.repair import Repair
from swarm.net.retrieval import Retrieval
from swarm.network_assembly import build_network_services
from swarm.node_info import write_node_info
from swarm.peer_wiring import PeerWiring
from swarm.proofs.service import MODES as PROVABLE_MODES
from swarm.proofs.service import NodeProofs
from swarm.reserve.status import reserve_status
from swarm.reserve_assembly import ReserveInputs, build_reserve_services
from syncer.evidence import EquivocationLog
from syncer.intake import ChunkIntake
from syncer.interval_store import IntervalStore
from syncer.puller import Puller, SyncRule
from syncer.transfers import Transfers
from syncer.upload_first import UploadFirst
from syncer.verifier import ChunkVerifier

if TYPE_CHECKING:
    from swarm.statistics import NodeStatistics

log = logging.getLogger(__name__)


class Node:
    """A running node. Start it with `await nursery.start(node.run)`; cancel to stop it."""

    def __init__(
        self, config: NodeConfig, *, sync_rule: SyncRule = sync_bins, verifier: ChunkVerifier | None = None
    ) -> None:
        """``verifier``: one already running (its owner runs and stops it, around the node's
        life), or None for the node to start its own with ``config.verify_workers``."""
        get_strategy(config.strategy)  # fail early on a bad name
        get_forwarding(config.forwarding)
        if config.channel not in CHANNELS:
            raise ValueError(f"channel must be one of {', '.join(CHANNELS)}, not {config.channel!r}")
        if config.provable_sync not in PROVABLE_MODES:
            raise ValueError(f"provable sync must be one of {', '.join(PROVABLE_MODES)}")
        self.config = config
        self.sync_rule = sync_rule
        self.data_dir = Path(config.data_dir)
        self.p2p_port = 0
        self.api_port: int | None = None
        self.log_budgets = LogBudgets()  # what peers can make the node log, per kind and window
        self._given_verifier = verifier

    # -- composition --------------------------------------------------------------------------

    def _build(self) -> None:
        """Open the identity and the store, and build every service around them."""
        self._build_storage()
        self._build_network()
        self._build_services()
        self._build_reserve()
        self._build_wiring()

    def _build_storage(self) -> None:
        """Identity, store, and the pulling side's state: what chunks come in through."""
        config = self.config
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.identity: NodeIdentity = load_or_create_identity(self.data_dir / "node.key")
        self.overlay: bytes = self.identity.overlay(config.network_id)
        # -- provable streams: bin logs in the store, states, proofs and receipts
        logs = NodeProofs.keeps_logs(config.provable_sync)
        self.store = LocalStore(self.data_dir / "localstore", self.overlay, logs=logs)
        self.proofs = NodeProofs(
            config.provable_sync, self.identity, self.overlay, self.store, network_id=config.network_id
        )
        self.verifier = self._given_verifier or ChunkVerifier(config.verify_workers)
        self.upload_first = UploadFirst(
            trio.current_time, quiet=config.replication_quiet, max_wait=config.replication_wait
        )
        self.transfers = Transfers()
        self.equivocations = EquivocationLog(self.store)
        self.pins = Pins(self.store)
        self.reserve = Reserve(self.store, config.capacity, [self.pins])
        self.intake = ChunkIntake(
            self.store,
            verifier=self.verifier,
            stored=self._stored,
            evidence=self.equivocations,
            within_radius=self.reserve.within_radius,
        )
        self.puller = Puller(IntervalStore(self.store), rule=self.sync_rule, config=config.puller)
        if lost := self.store.lost_at_open():  # a power cut: sync again what recovery dropped
            cleared = self.puller.intervals.forget_lost(self.overlay, lost)
            log.warning(
                "%d chunk(s) lost at a power cut: %d synced interval set(s) reset", len(lost), cleared
            )
            self.store.lost_handled()
        self.puller.set_radius(self.reserve.radius)

    def _build_network(self) -> None:
        """The peer table, the address book and its policy, sessions, the manager, gossip."""
        self.network = build_network_services(self.config, self.identity, self.overlay, lambda: self.wiring)
        self.table = self.network.table
        self.topology = self.network.topology
        self.sessions = self.network.sessions
        self.proofs.after_renewal = partial(
            self.sessions.close_all, GoodbyeCode.NORMAL, "store epoch renewed"
        )
        self.manager = self.network.manager
        self.gossip = self.network.gossip

    def _build_services(self) -> None:
        """What the peers' sessions are wired to or the API needs from the start: retrieval, the
        Bee-shaped backend, live propagation, repair (the rest: `_build_features`)."""
        config = self.config
        self.retrieval = Retrieval(
            self.overlay,
            self.store.get,
            lambda: self.sessions.peers.values(),
            hop_limit=config.hop_limit,
            timeout=config.retrieve_timeout,
            hedge_after=config.hedge_after,
            cache_bytes=config.cache_bytes,
            forwarding=get_forwarding(config.forwarding),
            record=self._record_request,
        )
        self.eth_key = eth_key = load_or_create_eth_key(self.data_dir)  # Bee's keys: /addresses, PSS
        self.bee = NodeBeeBackend(
            eth_key=eth_key,
            underlays=lambda: [f"/ip4/{config.host}/tcp/{self.p2p_port}"],
            get_chunk=self.retrieval.get,
            has_chunk=self.store.has,
            upload_chunks=partial(self.upload_chunks, verified=True),
            statistics=self.statistics,
            identity=lambda: (self.overlay, self.puller.depth, len(self.store)),
        )
        self.live = build_live_service(  # live propagation (docs/live.md); topic messages signed with eth.key
            eth_key,
            self.store,
            self.retrieval,
            partial(self.intake.store_many, verified=True),
            config.live,
            evidence=self.equivocations.record,
        )
        self.gsoc = Gsoc(self.live)  # GSOC payloads as live topic messages
        self.repair = Repair(
            lambda: list(self.sessions.peers.values()), self.intake.store, timeout=config.retrieve_timeout
        )
        self.store.on_drop = self.repair.dropped

    def _build_features(self) -> None:
        """Postage, ACT grantee lists and spaces: what only users' requests (and saved spaces)
        start. Built once the first dials are under way, their modules (about 50 ms to import) are
        not in the sync's way (docs/performance.md, "Start-up")."""
        from swarm.act.service import GranteeService
        from swarm.postage.book import BatchBook
        from swarm.spaces.live_source import live_follow
        from swarm.spaces.service import NodeChunks, SpaceService

        eth_key = self.eth_key
        self.postage = BatchBook(self.store, eth_key.owner, signer=eth_key)  # as Bee's dev mode
        self.grantees = GranteeService(eth_key, self.retrieval.get)  # ACT grantee lists: /grantee
        # spaces: read through the store, the swarm and live propagation; what a
        # writer posts (or the node fetches) is stored as an upload, so followers get it pushed
        self.spaces = SpaceService(
            NodeChunks(self.store.get, self.retrieval.get, partial(self.store_chunks, verified=True)),
            self.data_dir,
            self.config.spaces,
            follow=live_follow(self.live),
        )

    def _build_reserve(self) -> None:
        """The reserve's worker, push syncing, the pusher and uploads."""
        parts = build_reserve_services(
            ReserveInputs(
                config=self.config,
                identity=self.identity,
                overlay=self.overlay,
                store=self.store,
                reserve=self.reserve,
                pins=self.pins,
                table=self.table,
                peers=lambda: self.sessions.peers.values(),
                fully_synced=self.puller.fully_synced,
                radius_changed=self.puller.set_radius,
                store_synced=partial(self.intake.store_many, verified=True),
                verify_chunks=self._verify_chunks,
                held=self._held,
                store_uploaded=self._store_uploaded,
                retrieve=self.retrieval.get,
                avoidance=self.retrieval.avoidance,
                loads=self.retrieval.loads,
                forwarding=self.retrieval.forwarding,
                record=self._record_request,
                upload_work=self.upload_first.touch,
            )
        )
        self.offer_leases = parts.offer_leases
        self.reserve_worker = parts.worker
        self.pushsync = parts.pushsync
        self.pusher = parts.pusher
        self.uploads = parts.uploads

    def _build_wiring(self) -> None:
        """What each connection is wired to, now that every service exists."""
        self.wiring = PeerWiring(
            config=self.config,
            identity=self.identity,
            overlay=self.overlay,
            p2p_port=lambda: self.p2p_port,
            store=self.store,
            offer_leases=self.offer_leases,
            transfers=self.transfers,
            intake=self.intake,
            puller=self.puller,
            proofs=self.proofs,
            table=self.table,
            topology=self.topology,
            gossip=self.gossip,
            retrieval=self.retrieval,
            live=self.live,
            pushsync=self.pushsync,
            upload_first=self.upload_first,
        )

    def _stored(self, addresses: Iterable[bytes]) -> None:
        """Chunks entered the store: batches waiting for them may be complete; the reserve may
        be over capacity."""
        self.transfers.stored(addresses)
        self.reserve_worker.wake()

    async def run(self, *, task_status: trio.TaskStatus[Node] = trio.TASK_STATUS_IGNORED) -> None:
        """Run until cancelled; reports readiness (ports bound, node.json written) via task_status.

        On cancellation every peer is sent a Goodbye first (for at most GOODBYE_TIMEOUT), then the
        services stop and the store is closed.
        """
        self._build()
        self.log_budgets.attach()
        services = trio.CancelScope(shield=True)  # stopped by us, after the Goodbyes
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self._serve, services)
                task_status.started(self)
                try:
                    await trio.sleep_forever()
                finally:
                    with trio.CancelScope(shield=True):
                        await self._say_goodbye()
                    services.cancel()
        finally:
            self.log_budgets.detach()
            self.store.close()

    async def _serve(self, scope: trio.CancelScope, *, task_status: trio.TaskStatus[None]) -> None:
        config = self.config
        with scope:
            async with trio.open_nursery() as nursery:
                if self._given_verifier is None:
                    await nursery.start(self.verifier.run)
                if self.proofs.signing is not None:  # in a thread, while the node starts
                    nursery.start_soon(self.proofs.signing.prepare)
                await nursery.start(self.sessions.run)
                await nursery.start(self.live.run)
                nursery.start_soon(self.repair.run)
                nursery.start_soon(self._summarise_logs)
                await nursery.start(self.reserve_worker.run)
                await nursery.start(self.pusher.run)
                serve_p2p = partial(trio.serve_tcp, self.sessions.accept, config.port, host=config.host)
                listeners = await nursery.start(serve_p2p)
                self.p2p_port = listeners[0].socket.getsockname()[1]
                self.gossip.advertise(config.host, self.p2p_port)
                await nursery.start(self.manager.run)
                if config.gossip:
                    nursery.start_soon(self.gossip.run, lambda: list(self.sessions.peers.values()))
                for host, port in config.peers:
                    nursery.start_soon(
                        self.sessions.keep_bootnode, host, port, config.redial_min, config.redial_max
                    )
                # What only users need comes after the dials above: the features' and the API's
                # modules take a tenth of a second or more to import. The API's are imported in a
                # thread, while the dials wait for their peers (the handshakes need no API).
                if config.api_port is not None:
                    # Whatever goes wrong there is met again, and reported, by the import below.
                    with contextlib.suppress(Exception):
                        await trio.to_thread.run_sync(importlib.import_module, "swarm.api.app")
                self._build_features()
                await nursery.start(self.spaces.run)  # spaces: follows through live
                # The TLS certificate (about 30 ms of CPU) is made at the first inbound connection:
                # a node that only dials (as a new node syncing from its --peer) never needs it.
                if config.api_port is not None:
                    from swarm.api.app import serve_api

                    hosts, origins = config.api_allow_hosts, config.cors_allowed_origins
                    serve = partial(serve_api, allow_hosts=hosts, cors_origins=origins)
                    self.api_port = await nursery.start(serve, self, config.api_host, config.api_port)
                info = {"overlay": self.overlay.hex(), "p2p_port": self.p2p_port, "api_port": self.api_port}
                write_node_info(self.data_dir, {**info, "pid": os.getpid()})
                api = f"http://{config.api_host}:{self.api_port}" if self.api_port else "off"
                log.info(
                    "node %s listening on %s:%d, API %s", self.overlay.hex(), config.host, self.p2p_port, api
                )
                task_status.started()

    async def _summarise_logs(self) -> None:
        """Every window of the log budgets: one line per kind of line not logged in full."""
        while True:
            await trio.sleep(self.log_budgets.window)
            for line in self.log_budgets.summaries():
                log.warning("%s in the last %gs", line, self.log_budgets.window)

    async def _say_goodbye(self) -> None:
        peers = list(self.sessions.peers.values())
        for peer in peers:
            peer.conn.close(GoodbyeCode.SHUTDOWN, "node shutting down")
        with trio.move_on_after(GOODBYE_TIMEOUT):
            for peer in peers:
                await peer.conn.wait_closed()

    # -- topology -----------------------------------------------------------------------------

    def depth(self) -> int:
        return self.puller.depth

    # -- for the API and the tests --------------------------------------------------------------

    @property
    def peers(self) -> dict[bytes, Peer]:
        return self.sessions.peers

    async def connect(self, host: str, port: int) -> PeerConnection:
        """Dial once; returns when the handshake is done and the session runs."""
        return await self.sessions.connect(host, port)

    def store_chunks(self, chunks: list[Chunk], *, verified: bool = False) -> int:
        """Store uploaded chunks through the intake (``verified=True``: their addresses were just
        computed) and push them to their neighbourhoods in the background; returns how many were new.
        Uploaded updates of a feed someone follows are pushed to the followers too (docs/live.md)."""
        return self.uploads.store_and_push(chunks, verified=verified)[0]

    async def upload_chunks(
        self, chunks: list[Chunk], *, verified: bool = False, wait: bool = True, receipts: int = 2
    ) -> int:
        """`store_chunks`, then (``wait``) until they are durable: two nodes of their neighbourhood
        signed for each (``receipts=1``: one storer; swarm/reserve/pusher.py); returns how many
        were new."""
        return await self.uploads.put(chunks, verified=verified, wait=wait, receipts=receipts)

    async def _verify_chunks(self, chunks: list[Chunk]) -> list[str | None]:
        """Each chunk's problem (None if valid), found on a verifier worker if there is one."""
        verdicts = await self.intake.verify(chunks)
        return await verdicts.wait()

    def _held(self, chunk: Chunk) -> bool:
        """Whether the store holds this very chunk (a pushed one need not be verified again)."""
        try:
            return self.store.get(chunk.address).data == chunk.data
        except (ChunkNotFound, ChunkDamaged):
            return False

    def _store_uploaded(self, chunks: list[Chunk], *, verified: bool = True) -> int:
        """An upload's chunks into the store; a followed feed's updates to the followers too."""
        new = self.intake.store_many(chunks, verified=verified)
        self.live.uploaded(chunks)
        self.gsoc.uploaded(chunks)
        return new

    def _record_request(self, address: bytes) -> None:
        """A request sent on toward ``address``: load on the table's bin for it (``loaded``)."""
        if address != self.overlay:
            self.table.requests.record(self.table.bin_of(address))

    def statistics(self) -> NodeStatistics:
        """One immutable snapshot of everything the node reports."""
        # imported here (by the API's thread first): not on the way to the node's first dial
        from swarm.statistics import collect_statistics

        return collect_statistics(
            overlay=self.overlay,
            store=self.store,
            verifier=self.verifier,
            puller=self.puller,
            sessions=self.sessions,
            retrieval=self.retrieval,
            table=self.table,
            strategy=self.config.strategy,
            saturation=self.config.saturation,
            forwarding=self.config.forwarding,
            gossip=self.network.gossip_counters(),
            equivocations=self.equivocations.count,
            repairs=self.repair.counters(),
            reserve=reserve_status(
                self.reserve,
                self.pusher,
                self.pushsync,
                self.upload_first,
                len(self.pins.roots()),
                len(self.pins),
            ),
            proofs=self.proofs.snapshot(),
            live=self.live.statistics(),
        )
