"""What the Bee-shaped HTTP API (`swarm.api.bee`) needs from a node, as a small Protocol.

The routes depend on `BeeBackend` only, never on the node class: the node (or a test's in-memory
fake) hands an object with these methods to `swarm.api.bee.bee_routes`. The value types carry
what Bee's status endpoints report, in this project's words; `extras` are project-specific
fields, shown under a separate ``"swarmpy"`` key so that Bee clients (whose schemas drop unknown
keys) never see them mixed with Bee's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from chunks.chunk import Chunk

__all__ = ["BeeBackend", "BeeNodeInfo", "BeePeer", "BeeStatus"]


@dataclass(frozen=True)
class BeeNodeInfo:
    """Who the node is (``/addresses``, ``/node``, ``/health``)."""

    overlay: bytes
    underlays: Sequence[str]
    """How peers reach the node, e.g. ``"tcp://127.0.0.1:1634"`` (Bee shows multiaddrs)."""
    ethereum: bytes
    """The node's 20-byte owner address (from its secp256k1 key)."""
    public_key: bytes
    """The node's secp256k1 public key: 33 bytes compressed (or 64, x || y)."""
    pss_public_key: bytes | None = None
    """Defaults to ``public_key``: this node has no separate PSS key."""
    bee_mode: str = "full"
    """One of Bee's modes: ``full``, ``light``, ``ultra-light``, ``dev``."""
    extras: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class BeeStatus:
    """The node's storage and sync state as Bee's ``/status`` reports it."""

    reserve_size: int
    """Chunks stored."""
    reserve_size_within_radius: int
    """Chunks stored that lie within the storage radius (the node's neighbourhood)."""
    pullsync_rate: float
    """Chunks per second of historical pull sync (0 once caught up)."""
    storage_radius: int
    """Bee's storage radius: here the Kademlia depth."""
    connected_peers: int
    neighborhood_size: int
    """Connected peers within the storage radius."""
    is_reachable: bool = True
    is_warming_up: bool = False
    committed_depth: int | None = None
    """Defaults to ``storage_radius``."""
    extras: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class BeePeer:
    """A connected peer (``/peers``)."""

    overlay: bytes
    full_node: bool = True


class BeeBackend(Protocol):
    """What the Bee-shaped routes need from a node."""

    async def get_chunk(self, address: bytes) -> Chunk:
        """The verified chunk at ``address``, from the local store or through the network.

        Raises ``swarm.net.retrieval.ChunkUnavailable`` (``timed_out`` set if no answer came in
        time) when it cannot be had.
        """
        ...

    def has_chunk(self, address: bytes) -> bool:
        """Whether the local store holds the chunk (never asks the network)."""
        ...

    async def put_chunks(self, chunks: list[Chunk], *, deferred: bool = False, receipts: int = 2) -> None:
        """Store chunks a client uploaded (each already verified by the route) and push them; return
        once they are durable (two nodes of their neighbourhood signed; ``receipts=1``: one
        storer, ``Swarm-Receipts: 1``), or at once if ``deferred``
        (``Swarm-Deferred-Upload: true``)."""
        ...

    def node_info(self) -> BeeNodeInfo: ...

    def status(self) -> BeeStatus: ...

    def peers(self) -> list[BeePeer]: ...

    def is_ready(self) -> bool:
        """Whether the node is ready to serve (started, connected): ``/readiness``."""
        ...
