"""Pusher: an upload's chunks held until two nodes of their neighbourhood have signed for them.

Every uploaded chunk is stored locally first (so the upload never waits for its own disk), then
it is *pending* until it is **durable**: held, each with a signed receipt, by at least two
distinct nodes of its neighbourhood, at least one of them not this node. A chunk of this node's
own neighbourhood (``responsible``) counts this node's own receipt as the first; every other
chunk needs two peers' receipts. A node with no connected peer is a swarm of one: its own copy is
all there is, and a chunk of its neighbourhood is durable at once; a chunk whose every reachable
node already signed is durable with what it has (the swarm has fewer nodes). So when
``POST /bytes`` answers, the uploader may die and nothing is lost.

A single-receipt upload (``Swarm-Receipts: 1``, as Bee's direct upload) asks less: a chunk is
settled by the first storer's receipt (this node's own for a chunk of its neighbourhood, as
Bee's push sync answers for itself when it is the closest), and its further copies are left to
the storer's pull syncing. Such a chunk is pushed once instead of twice.

A pending chunk is kept outside the reserve's accounting, never evicted, recorded in the state
namespace (``b"push/" + address``, with the storers that signed so far, so a restart goes on
where it was), and pushed: first in batches (swarm/net/push_batches.py) by `batch_workers` tasks,
each taking up to `BATCH_TAKE` chunks at once, to the peers that store them, for as many rounds
as it takes to make them durable; what that leaves pending is pushed one by one
(swarm/net/pushsync.py) by `workers` tasks, each push skipping the storers already counted. A
push that fails (no answer, a failure, a receipt that proves nothing) is tried again (batched
first) after a delay that doubles up to ``retry_max``, for as long as the node runs. Once
durable the chunk is an ordinary chunk, which the reserve may evict (first, if it lies outside
the radius).

While an upload is under way all its chunks are held (``uploading``), also the durable ones, so
that eviction cannot take one before the upload is done and pinned if asked. Each upload has a
`Tag` (Bee's word) counting its chunks as they are split, stored, sent and synced (durable),
which ``POST /bytes`` waits on and ``GET /tags/{uid}`` reports.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import trio

from chunks import Chunk
from localstore import ChunkDamaged, ChunkNotFound
from streamer.messages import MAX_PUSH_BATCH, PushReceipt
from swarm.net.push_batches import PushRound
from swarm.net.push_requests import PushFailed
from swarm.net.pushsync import NoCloserPeer
from swarm.reserve.push_state import (
    PENDING_PREFIX,
    PendingChunk,
    PendingState,
    needed_from,
    storers_from,
)
from swarm.reserve.tags import Tag

__all__ = ["PENDING_PREFIX", "Pusher", "PusherStatistics", "Tag"]

log = logging.getLogger(__name__)

MAX_TAGS = 256
"""Tags kept; beyond that the oldest finished uploads' tags are forgotten."""
BATCH_TAKE = 240
"""Pending chunks a batch worker takes at once (grouped by peer, 15 to a batch)."""
BATCH_ROUNDS = 2
"""Batch rounds per take: a chunk outside this node's neighbourhood needs two storers."""
BATCH_LINGER = 0.005
"""How long a batch worker waits for more chunks when it found fewer than a batch."""


@dataclass(frozen=True)
class PusherStatistics:
    pending: int  # chunks waiting for a receipt
    receipts: int  # receipts received (valid ones) since start
    own_receipts: int  # chunks this node signed for itself (its own neighbourhood)
    attempts: int  # pushes tried since start
    failures: int  # pushes that failed (tried again later)


class Pusher:
    """Uploads' chunks: own receipts, pushes, retries; a `Holder` for the reserve."""

    def __init__(
        self,
        state: PendingState,
        *,
        overlay: bytes,
        get_chunk: Callable[[bytes], Chunk],
        push: Callable[..., Awaitable[tuple[bytes, PushReceipt]]],
        push_batch: PushRound | None = None,
        responsible: Callable[[bytes], bool],
        has_peers: Callable[[], bool],
        own_radius: Callable[[], int] = lambda: 0,
        released: Callable[[], None] = lambda: None,
        workers: int = 16,
        batch_workers: int = 4,
        retry_min: float = 0.5,
        retry_max: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._state = state
        self.overlay = overlay
        self._get_chunk = get_chunk
        self._push = push
        self._push_batch = push_batch
        self._responsible = responsible
        self._has_peers = has_peers
        self._own_radius = own_radius  # this node's storage radius: what its own receipt names
        self._released = released  # chunks left the holder: the reserve may be over capacity
        self.workers = workers
        self.batch_workers = batch_workers if push_batch is not None else 0
        self.retry_min = retry_min
        self.retry_max = retry_max
        self._clock = clock
        self._pending: dict[bytes, PendingChunk] = {
            key[len(PENDING_PREFIX) :]: PendingChunk(
                0, storers=storers_from(value), needed=needed_from(value)
            )
            for key, value in state.iter_state(PENDING_PREFIX)
        }
        self._uploading: dict[bytes, int] = {}  # address -> uploads under way holding it
        self._tags: dict[int, Tag] = {}
        self._uids = itertools.count(1)
        self._send, self._receive = trio.open_memory_channel[bytes](float("inf"))
        # what the batches leave pending, for the single pushes (all of it without batches)
        self._single_send, self._single = (
            trio.open_memory_channel[bytes](float("inf"))
            if self.batch_workers
            else (self._send, self._receive)
        )
        self._in_flight: set[bytes] = set()
        self._retries: list[tuple[float, int, bytes]] = []  # (due, order, address): a heap
        self._retry_added = trio.Event()
        self._order = itertools.count()
        self.version = 0
        self.receipts = self.own_receipts = self.attempts = self.failures = 0
        for address in self._pending:
            self._send.send_nowait(address)

    # -- the reserve's view (a Holder) ----------------------------------------------------------

    def __contains__(self, address: object) -> bool:
        return address in self._pending or address in self._uploading

    def addresses(self) -> Iterable[bytes]:
        return itertools.chain(self._pending, (a for a in self._uploading if a not in self._pending))

    # -- uploads --------------------------------------------------------------------------------

    def new_tag(self) -> Tag:
        tag = Tag(next(self._uids), self._clock())
        self._tags[tag.uid] = tag
        done = [uid for uid, old in self._tags.items() if old.complete]
        for uid in done[: max(0, len(self._tags) - MAX_TAGS)]:  # the oldest finished ones go
            del self._tags[uid]
        return tag

    def tag(self, uid: int) -> Tag | None:
        return self._tags.get(uid)

    def tags(self) -> list[Tag]:
        """The tags kept, oldest first."""
        return sorted(self._tags.values(), key=lambda tag: tag.uid)

    def forget_tag(self, uid: int) -> bool:
        """Delete a tag (its chunks are still pushed until durable); False if there is none."""
        return self._tags.pop(uid, None) is not None

    def add(self, tag: Tag, addresses: list[bytes], *, receipts: int = 2) -> None:
        """Chunks of ``tag``'s upload were just stored: count this node's own receipt for those of
        its neighbourhood, and queue every chunk not yet durable (recorded first, so a restart
        goes on). ``receipts=1``: one storer's receipt settles a chunk (a single-receipt upload);
        a chunk already pending for a durable upload stays so."""
        if receipts not in (1, 2):
            raise ValueError(f"an upload waits for 1 or 2 receipts per chunk, not {receipts}")
        new = [a for a in dict.fromkeys(addresses) if a not in tag.waiting]
        tag.split += len(new)
        tag.stored += len(new)
        for address in new:
            self._uploading[address] = self._uploading.get(address, 0) + 1
        own = {a for a in new if self._responsible(a)}
        self.own_receipts += len(own)
        # alone, its own copy is durable; its own receipt is the one a single-receipt upload needs
        settled = own if receipts == 1 or not self._has_peers() else set()
        to_push = [a for a in new if a not in settled]
        tag.synced += len(new) - len(to_push)
        fresh = {
            a: PendingChunk(tag.uid, storers={self.overlay}, near=self._own_radius(), needed=receipts)
            if a in own
            else PendingChunk(tag.uid, needed=receipts)
            for a in to_push
            if a not in self._pending
        }
        raised = [a for a in to_push if a not in fresh and self._pending[a].needed < receipts]
        for address in raised:  # pending for a single-receipt upload, now wanted durable
            self._pending[address].needed = receipts
        changed = {**fresh, **{a: self._pending[a] for a in raised}}
        self._state.write_state_batch({PENDING_PREFIX + a: entry.value for a, entry in changed.items()})
        for address in to_push:
            tag.waiting.add(address)
            if address in fresh:
                self._pending[address] = fresh[address]
                self._send.send_nowait(address)
        self.version += 1
        tag._changed()

    def finish(self, tag: Tag, reference: bytes, addresses: Iterable[bytes]) -> None:
        """``tag``'s upload is done (and pinned, if asked): its chunks are no longer held as
        uploading (the pending ones stay held until their receipts)."""
        tag.address = reference
        tag.done_splitting = True
        for address in dict.fromkeys(addresses):
            count = self._uploading.get(address, 0) - 1
            if count <= 0:
                self._uploading.pop(address, None)
            else:
                self._uploading[address] = count
        self.version += 1
        self._released()
        tag._changed()

    def waiting(self, tag: Tag) -> list[bytes]:
        return sorted(tag.waiting)

    def last_error(self, address: bytes) -> str:
        entry = self._pending.get(address)
        return entry.error if entry is not None else ""

    # -- pushing --------------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Push pending chunks until cancelled: `workers` pushers and the retry timer."""
        if self._pending:
            log.info("%d uploaded chunks still wait for a receipt: pushing them", len(self._pending))
        async with trio.open_nursery() as nursery:
            for _ in range(self.workers):
                nursery.start_soon(self._worker)
            for _ in range(self.batch_workers):
                nursery.start_soon(self._batch_worker)
            nursery.start_soon(self._retry_timer)
            task_status.started()

    async def _worker(self) -> None:
        async for address in self._single:
            if address in self._pending and address not in self._in_flight:
                self._in_flight.add(address)
                try:
                    await self._push_one(address)
                finally:
                    self._in_flight.discard(address)

    async def _batch_worker(self) -> None:
        async for address in self._receive:
            taken = await self._take_more(address)
            mine = [a for a in dict.fromkeys(taken) if a in self._pending and a not in self._in_flight]
            self._in_flight.update(mine)
            try:
                await self._push_batches(mine)
            finally:
                self._in_flight.difference_update(mine)
            for address in mine:
                if address in self._pending:
                    self._single_send.send_nowait(address)

    async def _take_more(self, first: bytes) -> list[bytes]:
        """``first`` and what else is queued, up to BATCH_TAKE, lingering once for a batch's worth."""
        taken, lingered = [first], False
        while len(taken) < BATCH_TAKE:
            try:
                taken.append(self._receive.receive_nowait())
            except trio.WouldBlock:
                if lingered or len(taken) >= MAX_PUSH_BATCH:
                    break
                lingered = True
                await trio.sleep(BATCH_LINGER)
        return taken

    async def _push_batches(self, addresses: list[bytes]) -> None:
        """Batch rounds for ``addresses`` until they are durable or a round brings nothing."""
        chunks = {a: chunk for a in addresses if (chunk := self._chunk_to_push(a)) is not None}
        for _ in range(BATCH_ROUNDS):
            todo = [
                (chunk, frozenset(self._pending[a].storers), self._pending[a].near)
                for a, chunk in chunks.items()
                if a in self._pending and not self.settled(self._pending[a])
            ]
            if not todo or not self._has_peers():
                break
            attested = await self._push_batch(todo)  # type: ignore[misc]  # set when batch_workers
            for address, storer, radius in attested:
                entry = self._pending.get(address)
                if entry is not None and storer not in entry.storers:
                    entry.storers.add(storer)
                    entry.near = radius if entry.near is None else min(entry.near, radius)
                    self.receipts += 1
            if not attested:
                break
        pending = [a for a in chunks if a in self._pending]
        self._settle_many([a for a in pending if self.settled(self._pending[a])])
        signed = {PENDING_PREFIX + a: self._pending[a].value for a in pending if a in self._pending}
        if signed:  # signed for by some: a restart goes on from there
            self._state.write_state_batch(signed)

    def _chunk_to_push(self, address: bytes) -> Chunk | None:
        """The pending chunk, counted as an attempt; None (and settled) if it is gone."""
        entry = self._pending[address]
        try:
            chunk = self._get_chunk(address)
        except (ChunkNotFound, ChunkDamaged) as exc:
            log.error("uploaded chunk %s is gone before a receipt came (%s)", address.hex(), exc)
            self._settle_many([address])
            return None
        entry.attempts += 1
        self.attempts += 1
        for tag in self._tags_waiting(address):
            tag.sent += entry.attempts == 1
        return chunk

    async def _push_one(self, address: bytes) -> None:
        entry = self._pending[address]
        chunk = self._chunk_to_push(address)
        if chunk is None:
            return
        try:
            await self._push_until_durable(address, chunk, entry)
        except PushFailed as exc:
            entry.error = str(exc)
            self.failures += 1
            delay = min(self.retry_max, self.retry_min * 2 ** (entry.attempts - 1))
            log.debug("push of %s failed (%s); again in %.1f s", address.hex()[:12], exc, delay)
            heapq.heappush(self._retries, (trio.current_time() + delay, next(self._order), address))
            self._retry_added.set()
            return
        self._settle_many([address])

    def durable(self, storers: set[bytes]) -> bool:
        """Two distinct storers, at least one of them not this node."""
        return len(storers) >= 2 and any(storer != self.overlay for storer in storers)

    def settled(self, entry: PendingChunk) -> bool:
        """As many receipts as the chunk's upload asked: durable, or one storer's for a
        single-receipt upload."""
        return self.durable(entry.storers) if entry.needed >= 2 else bool(entry.storers)

    async def _push_until_durable(self, address: bytes, chunk: Chunk, entry: PendingChunk) -> None:
        """Push until enough storers signed; raises PushFailed to be tried again later."""
        while not self.settled(entry):
            if not self._has_peers():
                if self.overlay in entry.storers:
                    return  # alone: this node's own copy is all the swarm has
                raise PushFailed("no connected peer")
            try:
                storer, receipt = await self._push(chunk, storers=frozenset(entry.storers), near=entry.near)
            except NoCloserPeer:
                if not entry.storers:  # connected, and no peer is closer: this node is the closest
                    self.own_receipts += 1
                return  # every peer it can reach has signed already: the swarm has no more nodes
            if storer in entry.storers:
                raise PushFailed(f"storer {storer.hex()[:12]} signed for {address.hex()[:12]} again")
            entry.storers.add(storer)
            entry.near = receipt.radius if entry.near is None else min(entry.near, receipt.radius)
            self.receipts += 1
            if not self.settled(entry):
                self._state.write_state_batch({PENDING_PREFIX + address: entry.value})

    def _tags_waiting(self, address: bytes) -> list[Tag]:
        return [tag for tag in self._tags.values() if address in tag.waiting]

    def _settle_many(self, addresses: list[bytes]) -> None:
        """Durable (or gone): no longer pending."""
        if not addresses:
            return
        for address in addresses:
            self._pending.pop(address, None)
        self._state.write_state_batch({}, [PENDING_PREFIX + a for a in addresses])
        for tag in self._tags.values():
            settled = [a for a in addresses if a in tag.waiting]
            if settled:
                tag.waiting.difference_update(settled)
                tag.synced += len(settled)
                tag._changed()
        self.version += 1
        self._released()

    async def _retry_timer(self) -> None:
        while True:
            if not self._retries:
                await self._retry_added.wait()
                self._retry_added = trio.Event()
                continue
            due = self._retries[0][0]
            with trio.move_on_at(due):
                await self._retry_added.wait()
                self._retry_added = trio.Event()
                continue
            while self._retries and self._retries[0][0] <= trio.current_time():
                _, _, address = heapq.heappop(self._retries)
                self._send.send_nowait(address)

    def statistics(self) -> PusherStatistics:
        return PusherStatistics(
            len(self._pending), self.receipts, self.own_receipts, self.attempts, self.failures
        )
