"""The node as the Bee-shaped API sees it: a `BeeBackend` built from narrow functions.

The node hands this class the functions it needs (get a chunk through the network, ask the
store, store uploads through the intake, take a statistics snapshot) and its keys; the routes in
`swarm.api.bee` never see the node itself. The secp256k1 key that Bee shows as the node's
Ethereum address lives in ``DIR/eth.key`` beside the identity (made on first start, owner-only).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from chunks import Chunk
from chunks.ethkey import Secp256k1Key, load_key_file, save_key_file
from swarm.api.bee_types import BeeNodeInfo, BeePeer, BeeStatus

if TYPE_CHECKING:  # the node builds this backend before it dials: the statistics' types can wait
    from swarm.statistics import NodeStatistics

__all__ = ["ETH_KEY_FILE", "NodeBeeBackend", "load_or_create_eth_key"]

ETH_KEY_FILE = "eth.key"


def load_or_create_eth_key(data_dir: Path) -> Secp256k1Key:
    path = data_dir / ETH_KEY_FILE
    if not path.exists():
        save_key_file(Secp256k1Key.generate(), path)
    return load_key_file(path)


class NodeBeeBackend:
    """Implements `swarm.api.bee_types.BeeBackend` over the node's services."""

    def __init__(
        self,
        *,
        eth_key: Secp256k1Key,
        underlays: Callable[[], list[str]],
        get_chunk: Callable[[bytes], Awaitable[Chunk]],
        has_chunk: Callable[[bytes], bool],
        upload_chunks: Callable[..., Awaitable[object]],
        statistics: Callable[[], NodeStatistics],
        identity: Callable[[], tuple[bytes, int, int]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``identity``: the node's overlay, depth and chunk count, read without a statistics
        snapshot (``/health``, ``/node`` and ``/addresses`` need no more; probes poll ``/health``)."""
        self._eth_key = eth_key
        self._underlays = underlays
        self._get_chunk = get_chunk
        self._has_chunk = has_chunk
        self._upload_chunks = upload_chunks
        self._statistics = statistics
        self._identity = identity
        self._clock = clock
        self._rate_sample: tuple[float, int] | None = None  # (when, chunks delivered by sync)

    async def get_chunk(self, address: bytes) -> Chunk:
        return await self._get_chunk(address)

    def has_chunk(self, address: bytes) -> bool:
        return self._has_chunk(address)

    async def put_chunks(self, chunks: list[Chunk], *, deferred: bool = False, receipts: int = 2) -> None:
        await self._upload_chunks(chunks, wait=not deferred, receipts=receipts)

    def node_info(self) -> BeeNodeInfo:
        overlay, depth, chunks = self._identity()
        return BeeNodeInfo(
            overlay=overlay,
            underlays=self._underlays(),
            ethereum=self._eth_key.owner,
            public_key=self._eth_key.public_key_compressed,
            extras={"depth": depth, "chunks": chunks},
        )

    def status(self) -> BeeStatus:
        stats = self._statistics()
        depth = stats.depth
        neighbours = sum(1 for c in stats.connections if c.po >= depth)
        reserve = stats.reserve
        return BeeStatus(
            reserve_size=reserve.size,
            reserve_size_within_radius=reserve.size_within_radius,
            pullsync_rate=self._pullsync_rate(stats),
            storage_radius=reserve.radius,
            connected_peers=len(stats.connections),
            neighborhood_size=neighbours,
            is_warming_up=not stats.connections,
            extras={
                "fully_synced": stats.sync.fully_synced,
                "capacity": reserve.capacity,
                "depth": depth,
                "evicted": reserve.evicted,
                "pending_push": reserve.pending_push,
            },
        )

    def _pullsync_rate(self, stats: NodeStatistics) -> float:
        """Chunks per second delivered by pull sync since the previous call."""
        delivered = sum(s.counts["delivered"] for s in stats.sync.stats.values())
        now = self._clock()
        previous, self._rate_sample = self._rate_sample, (now, delivered)
        if previous is None or now <= previous[0]:
            return 0.0
        return max(0, delivered - previous[1]) / (now - previous[0])

    def peers(self) -> list[BeePeer]:
        return [BeePeer(c.overlay) for c in self._statistics().connections]

    def is_ready(self) -> bool:
        return True
