"""The spaces a node follows (trio shell): a `Replica` per space, opened on first use, reopened
after a restart (the list lives in ``DIR/spaces.json``), and the chunk source they read from.

A replica reads everything again from the node's store when the node starts: its processing
order (the causal log) is the order of this run; the total order and the shared map do not
depend on it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import trio

from chunks import Chunk
from chunks.feeds import parse_update
from chunks.soc import InvalidSoc
from localstore import ChunkDamaged, ChunkNotFound
from swarm.net.retrieval import ChunkUnavailable
from swarm.spaces.config import SpaceConfig
from swarm.spaces.messages import (
    MEMBERS_TOPIC,
    InvalidSpaceMessage,
    decode_member_entry,
    decode_message,
    message_topic,
)
from swarm.spaces.replica import Replica, ReplicaStatistics
from swarm.spaces.sources import FeedFollow

__all__ = ["NodeChunks", "RefusedWrite", "SpaceService", "SpaceServiceStatistics"]

log = logging.getLogger(__name__)
SPACES_FILE = "spaces.json"


class NodeChunks:
    """A `ChunkSource` over a node: its store, its retrieval, its intake."""

    def __init__(
        self,
        store_get: Callable[[bytes], Chunk],
        retrieve: Callable[[bytes], Awaitable[Chunk]],
        store_chunks: Callable[[list[Chunk]], object],
        *,
        timeout: float = 3.0,
    ) -> None:
        self._store_get = store_get
        self._retrieve = retrieve
        self._store_chunks = store_chunks
        self.timeout = timeout

    def local(self, address: bytes) -> bytes | None:
        try:
            return self._store_get(address).data
        except (ChunkNotFound, ChunkDamaged):
            return None

    async def remote(self, address: bytes) -> bytes | None:
        with trio.move_on_after(self.timeout):
            try:
                return (await self._retrieve(address)).data
            except ChunkUnavailable:
                return None
        return None

    def keep(self, chunk: Chunk) -> None:
        self._store_chunks([chunk])


class RefusedWrite(Exception):
    """A message or member entry a node will not take; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class SpaceServiceStatistics:
    """The spaces open at this node."""

    replicas: dict[bytes, ReplicaStatistics]  # by space id: where each replica stands


class SpaceService:
    """The node's spaces. Start with ``await nursery.start(service.run)``."""

    def __init__(
        self,
        source: NodeChunks,
        data_dir: Path | None,
        config: SpaceConfig | None = None,
        *,
        follow: FeedFollow | None = None,
    ) -> None:
        self.source = source
        self.follow = follow
        self.data_dir = data_dir
        self.config = config or SpaceConfig()
        self.replicas: dict[bytes, Replica] = {}
        self._nursery: trio.Nursery | None = None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for space in self._saved():
                await self.open(space)
            task_status.started()
            await trio.sleep_forever()

    async def open(self, space: bytes) -> Replica:
        """The replica of ``space``, started (and remembered across restarts) if new."""
        replica = self.replicas.get(space)
        if replica is None:
            if self._nursery is None:
                raise RuntimeError("the space service is not running")
            replica = Replica(space, self.source, self.config, on_genesis=self._save, follow=self.follow)
            self.replicas[space] = replica  # before it starts: a concurrent open finds it
            await self._nursery.start(replica.run)
        return replica

    # -- writes through this node ------------------------------------------------------------

    async def publish_member_entry(self, space: bytes, index: int, data: bytes) -> bytes:
        """Store update ``index`` of the member list of ``space`` (SOC data, signed by the space
        key); returns its address. RefusedWrite if it is not one or another is there."""
        try:
            update = parse_update(space, MEMBERS_TOPIC, index, data)
            decode_member_entry(update.soc.payload, index)
        except (InvalidSoc, InvalidSpaceMessage) as exc:
            raise RefusedWrite(400, f"not member list update {index} of space {space.hex()}: {exc}") from None
        replica = await self.open(space)
        await replica.wait_settled(self.config.tick * 4)
        if index != replica.member_entries:
            raise RefusedWrite(
                409,
                f"this node has read {replica.member_entries} member list updates: {index} is not the next",
            )
        if self.source.local(update.soc.address) is None and await self.source.remote(update.soc.address):
            raise RefusedWrite(409, f"member list update {index} exists already")
        self._store_new(update.soc.address, update.soc.data)
        replica.wake()
        return update.soc.address

    async def publish_message(self, space: bytes, owner: bytes, index: int, data: bytes) -> bytes:
        """Store message ``index`` of member ``owner`` (SOC data signed by the member) and offer it
        to the replica at once; returns its address."""
        replica = await self.open(space)
        member = replica.reader.orderer.member_of(owner)
        if member is None:  # a replica just opened may not have read the member list yet
            await replica.wait_settled(self.config.tick * 4)
            member = replica.reader.orderer.member_of(owner)
        if member is None:
            raise RefusedWrite(403, f"{owner.hex()} is not a member of space {space.hex()} (join it first)")
        try:
            update = parse_update(owner, message_topic(space), index, data)
            decode_message(update.soc.payload)
        except (InvalidSoc, InvalidSpaceMessage) as exc:
            raise RefusedWrite(
                400, f"not message {index} of {owner.hex()} in space {space.hex()}: {exc}"
            ) from None
        self._store_new(update.soc.address, update.soc.data)
        replica.publish(member, index, update.soc.data)
        return update.soc.address

    def _store_new(self, address: bytes, data: bytes) -> None:
        stored = self.source.local(address)
        if stored is not None and stored != data:
            raise RefusedWrite(409, f"another update is stored at {address.hex()}: the index is taken")
        if stored is None:
            self.source.keep(Chunk(address, data))

    # -- the list of spaces ------------------------------------------------------------------

    def _saved(self) -> list[bytes]:
        if self.data_dir is None:
            return []
        try:
            return [bytes.fromhex(s) for s in json.loads((self.data_dir / SPACES_FILE).read_text())]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, TypeError) as exc:
            log.error("cannot read %s (%s): no space is reopened", self.data_dir / SPACES_FILE, exc)
            return []

    def _save(self) -> None:
        """Remember the spaces whose member list this node has found (a mistyped id is not kept)."""
        if self.data_dir is None:
            return
        tmp = self.data_dir / (SPACES_FILE + ".tmp")
        known = sorted(space.hex() for space, replica in self.replicas.items() if replica.name is not None)
        tmp.write_text(json.dumps(known) + "\n")
        tmp.replace(self.data_dir / SPACES_FILE)

    def statistics(self) -> SpaceServiceStatistics:
        return SpaceServiceStatistics({space: r.statistics() for space, r in self.replicas.items()})
