"""PullSyncClient on its own: a scripted upstream on a fake connection, a real intake and verifier.

The fake connection records what the client sends and runs its tasks in the test's nursery; the
store behind the intake is an in-memory double (the store has its own suites).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio
import trio.testing

from chunks import Chunk
from chunks.merkle import Frontier, range_nodes
from streamer.errors import RemoteProtocolError
from streamer.messages import (
    ChunkDelivery,
    CursorsReply,
    CursorsRequest,
    GoodbyeCode,
    Message,
    OfferedHashes,
    StateReply,
    StateRequest,
    Subscribe,
    Unsubscribe,
    Unsubscribed,
    WantedHashes,
)
from streamer.outbox import Priority
from streamer.requests import RetrieveFailed
from swarm.testing import random_chunks
from syncer.intake import ChunkIntake
from syncer.proof_store import ProofStore
from syncer.provable import ProvenLogs
from syncer.proving import state_reply
from syncer.pull_config import PullerConfig
from syncer.pullsync import PullSyncClient
from syncer.stats import PeerStats
from syncer.takeover import Verifying
from syncer.transfers import Transfers
from tests.test_receipts import DOWN_SIGNER, DictState
from tests.test_session_proofs import BIN, OVERLAY, SIGNER, UP, make_log, signed

EPOCH = 1_700_000_000
# bin 0 of every upstream here (their overlays start with a 0 bit, these chunks with a 1)
CHUNKS = [c for c in random_chunks(40, seed=77, size=64) if c.address[0] >= 0x80][:6]
STEP = 5.0


class MemoryStore:
    """What the intake needs of a store: put_many, has, get and cursors."""

    def __init__(self) -> None:
        self.chunks: dict[bytes, bytes] = {}

    def put_many(self, chunks: list[Chunk], *, verified: bool = False) -> int:
        new = 0
        for chunk in chunks:
            if not verified:
                chunk.verify()
            new += chunk.address not in self.chunks
            self.chunks[chunk.address] = chunk.data
        return new

    def has(self, address: bytes) -> bool:
        return address in self.chunks

    def get(self, address: bytes) -> Chunk:
        return Chunk(address, self.chunks[address])

    def cursors(self) -> list[int]:
        return [0] * 32  # keeps no bins


@dataclass
class FakeConnection:
    overlay: bytes
    nursery: trio.Nursery
    violations: list[RemoteProtocolError] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.outgoing, self.sent = trio.open_memory_channel[Message](100)

    async def send(self, msg: Message, priority: Priority = Priority.RETRIEVAL) -> None:
        self.outgoing.send_nowait(msg)

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        self.nursery.start_soon(fn, *args)

    def broke_protocol(self, violation: RemoteProtocolError) -> None:
        self.violations.append(violation)

    async def next(self) -> Message:
        with trio.fail_after(STEP):
            return await self.sent.receive()


@dataclass
class Rig:
    client: PullSyncClient
    conn: FakeConnection
    store: MemoryStore
    transfers: Transfers
    completed: list[tuple[int, int, int]]
    stats: PeerStats


@asynccontextmanager
async def rig(
    *,
    overlay: bytes = b"U" * 32,
    store: MemoryStore | None = None,
    transfers: Transfers | None = None,
    fetch: Callable[[bytes], Awaitable[bytes]] | None = None,
    config: PullerConfig | None = None,
    verifying: Verifying | None = None,
) -> AsyncIterator[Rig]:
    store = store or MemoryStore()
    transfers = transfers or Transfers()
    completed: list[tuple[int, int, int]] = []
    stats = PeerStats()

    async def no_fetch(address: bytes) -> bytes:
        raise RetrieveFailed("no", "not found")

    async with trio.open_nursery() as nursery:
        conn = FakeConnection(overlay, nursery)
        client = PullSyncClient(
            conn,
            EPOCH,
            transfers=transfers,
            intake=ChunkIntake(store, stored=transfers.stored),
            stats=stats,
            fetch=fetch or no_fetch,
            completed=lambda bin, start, end: completed.append((bin, start, end)),
            config=config or PullerConfig(batch_timeout=2.0, cursor_timeout=1.0),
            verifying=verifying,
        )
        nursery.start_soon(client.deliveries.run)
        yield Rig(client, conn, store, transfers, completed, stats)
        client.deliveries.close()
        nursery.cancel_scope.cancel()


async def cursors(r: Rig, cursors: tuple[int, ...]) -> None:
    """Answer the client's cursors request."""
    async with trio.open_nursery() as n:
        n.start_soon(r.client.cursors)
        assert await r.conn.next() == CursorsRequest()
        await r.client.receive(CursorsReply(EPOCH, cursors))


async def test_a_historical_range_is_pulled_stored_and_reported() -> None:
    async with rig() as r:
        r.store.chunks[CHUNKS[1].address] = CHUNKS[1].data  # already held: not wanted
        await cursors(r, (3,))
        done = trio.Event()

        async def pull() -> None:
            await r.client.sync(0, False, 1, 3)
            done.set()

        r.conn.nursery.start_soon(pull)
        assert await r.conn.next() == Subscribe(0, False, 1, 3)
        hashes = tuple(c.address for c in CHUNKS[:3])
        await r.client.receive(OfferedHashes(0, False, 1, 3, hashes))
        assert await r.conn.next() == WantedHashes.from_indices(0, False, 1, 3, [0, 2])
        for index in (0, 2):
            await r.client.receive(ChunkDelivery(0, False, 1, index, CHUNKS[index].data))
        with trio.fail_after(STEP):
            await done.wait()
        assert r.completed == [(0, 1, 3)]
        assert all(r.store.has(c.address) for c in CHUNKS[:3])
        assert (r.stats["offered"], r.stats["wanted"], r.stats["delivered"]) == (3, 2, 2)
        assert r.conn.violations == []


async def _offer_one_by_one(r: Rig, offers: int) -> list[int]:
    """Offer bin 0's chunks 1..`offers` one per offer, each as soon as the window allows; the
    offers answered by the time the client waits."""
    answered = []
    for k in range(1, offers + 1):
        if k > 2 and k - 2 not in answered:
            break  # two offers unanswered: the window is full
        await r.client.receive(OfferedHashes(0, False, k, k, (CHUNKS[k - 1].address,)))
        await trio.testing.wait_all_tasks_blocked()
        while r.conn.sent.statistics().current_buffer_used:
            want = await r.conn.next()
            assert isinstance(want, WantedHashes) and want.wanted_indices() == [0]
            answered.append(want.start)
    return answered


@pytest.mark.parametrize(
    ("cursors_", "answered"),
    [
        ((6,), [1, 2]),  # one stream: max_incomplete (2) batches
        ((6, 9), [1, 2, 3, 4]),  # bin 1 has room it does not use: lent, up to the pool (4)
        ((6, 9, 9), [1, 2, 3, 4]),  # the pool has 6: the stream stops at max_incomplete_lent (4)
    ],
)
async def test_a_stream_borrows_batches_the_peers_other_streams_leave(
    cursors_: tuple[int, ...], answered: list[int]
) -> None:
    """A peer's streams together hold at most max_incomplete batches per non-empty bin; one
    stream may take up to max_incomplete_lent of them. Each delivery frees one."""
    async with rig() as r:
        await cursors(r, cursors_)
        r.conn.nursery.start_soon(r.client.sync, 0, False, 1, 6)
        assert await r.conn.next() == Subscribe(0, False, 1, 6)
        assert await _offer_one_by_one(r, 6) == answered
        assert r.client.open_batches() == len(answered)
        await r.client.receive(ChunkDelivery(0, False, 1, 0, CHUNKS[0].data))
        want = await r.conn.next()  # batch 1 is complete: the next offer is answered
        assert isinstance(want, WantedHashes) and want.start == len(answered) + 1
        assert r.completed == [(0, 1, 1)]


async def test_stopping_a_live_stream_unsubscribes_and_a_restart_waits_for_the_ack() -> None:
    async with rig() as r:
        await cursors(r, (3,))
        first = trio.CancelScope()
        r.conn.nursery.start_soon(_run_in, first, r.client.sync, 0, True, 4, 0)
        assert await r.conn.next() == Subscribe(0, True, 4, 0)
        first.cancel()
        assert await r.conn.next() == Unsubscribe(0, True)
        r.conn.nursery.start_soon(r.client.sync, 0, True, 4, 0)
        await trio.sleep(0.1)
        assert r.conn.sent.statistics().current_buffer_used == 0, "no Subscribe before the ack"
        crossed = OfferedHashes(0, True, 4, 4, (CHUNKS[3].address,))
        await r.client.receive(crossed)  # crossed the Unsubscribe: ignored, not answered
        await r.client.receive(Unsubscribed(0, True))
        assert await r.conn.next() == Subscribe(0, True, 4, 0)


async def _run_in(scope: trio.CancelScope, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
    with scope:
        await fn(*args)


async def test_chunks_not_delivered_in_time_drop_the_peer() -> None:
    async with rig() as r:
        await cursors(r, (1,))
        r.conn.nursery.start_soon(_expect_violation, r, r.client.sync, 0, False, 1, 1)
        assert await r.conn.next() == Subscribe(0, False, 1, 1)
        await r.client.receive(OfferedHashes(0, False, 1, 1, (CHUNKS[0].address,)))
        assert isinstance(await r.conn.next(), WantedHashes)
        with trio.fail_after(STEP):
            while not r.conn.violations:
                await trio.sleep(0.05)
        (violation,) = r.conn.violations
        assert "wanted chunks of bin 0 historical" in str(violation)
        assert r.completed == []


async def _expect_violation(r: Rig, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
    try:
        await fn(*args)
    except RemoteProtocolError as exc:
        r.conn.broke_protocol(exc)


async def test_a_bad_message_from_the_upstream_raises_and_counts_unsolicited_deliveries() -> None:
    async with rig() as r:
        with pytest.raises(RemoteProtocolError, match="not subscribed"):
            await r.client.receive(OfferedHashes(0, False, 1, 1, (CHUNKS[0].address,)))
        with pytest.raises(RemoteProtocolError) as info:
            await r.client.receive(ChunkDelivery(0, False, 1, 0, CHUNKS[0].data))
        assert info.value.code == GoodbyeCode.UNSOLICITED_DELIVERY
        assert r.stats["unsolicited"] == 1


async def test_no_cursors_reply_in_time_is_a_violation() -> None:
    async with rig() as r:
        with pytest.raises(RemoteProtocolError, match="no cursors reply within"):
            await r.client.cursors()


async def test_a_peer_that_leaves_owes_its_chunk_and_another_offerer_is_asked_directly() -> None:
    """A and B offer the same chunk; it is wanted from A only. A goes away without delivering:
    the chunk is fetched from B by a direct request, which completes B's batch, and A's
    undelivered want is counted as missing."""
    transfers, store = Transfers(), MemoryStore()
    fetched: list[bytes] = []

    async def fetch_from_b(address: bytes) -> bytes:
        fetched.append(address)
        return CHUNKS[0].data

    async with (
        rig(overlay=b"A" * 32, store=store, transfers=transfers) as a,
        rig(overlay=b"B" * 32, store=store, transfers=transfers, fetch=fetch_from_b) as b,
    ):
        offer = OfferedHashes(0, True, 1, 1, (CHUNKS[0].address,))
        for r, wanted in ((a, [0]), (b, [])):
            await cursors(r, (0,))
            r.conn.nursery.start_soon(r.client.sync, 0, True, 1, 0)
            assert await r.conn.next() == Subscribe(0, True, 1, 0)
            await r.client.receive(offer)
            assert await r.conn.next() == WantedHashes.from_indices(0, True, 1, 1, wanted)
        a.client.close()
        with trio.fail_after(STEP):
            while not b.completed:
                await trio.sleep(0.01)
        assert fetched == [CHUNKS[0].address] and store.has(CHUNKS[0].address)
        assert b.completed == [(0, 1, 1)] and a.completed == []
        assert a.stats["missing"] == 1


async def test_a_sync_cancelled_while_its_state_request_waits_leaves_the_next_one_to_take_the_reply() -> None:
    """Verifying: a historical sync first asks for the upstream's state at its end. Cancelled
    before the reply (the puller restarts a bin's syncs when the depth changes), it leaves the
    request outstanding (one per bin); the next sync of the bin takes that reply instead of
    asking again (which the session refuses), then subscribes."""
    log = make_log(5)
    logs = ProvenLogs(OVERLAY, UP.public_key, EPOCH)
    verifying = Verifying(logs, DOWN_SIGNER, ProofStore(DictState()))
    async with rig(overlay=OVERLAY, verifying=verifying) as r:
        await cursors(r, (0, 0, 0, 5))
        first = trio.CancelScope()

        async def first_sync() -> None:
            with first:
                await r.client.sync(BIN, False, 1, 5)

        r.conn.nursery.start_soon(first_sync)
        request = await r.conn.next()
        assert isinstance(request, StateRequest) and (request.bin, request.size) == (BIN, 5)
        first.cancel()
        await trio.testing.wait_all_tasks_blocked()
        r.conn.nursery.start_soon(r.client.sync, BIN, False, 1, 5)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(trio.WouldBlock):  # it asked nothing new: it waits for the reply
            r.conn.sent.receive_nowait()
        await r.client.receive(state_reply(log, request, signed(log, 5)))
        assert await r.conn.next() == Subscribe(BIN, False, 1, 5)
        assert logs.holds(BIN, 5, frontier=False)


async def test_a_state_reply_whose_sync_was_cancelled_is_kept_not_an_error() -> None:
    """Issue 30 item 10: a restarted verifying node stops a bin's sync while its state request
    waits, and no other sync of the bin follows. The reply is an answer to our own request: the
    state is accepted and kept, and the peer is not dropped (it was an AssertionError)."""
    log = make_log(5)
    logs = ProvenLogs(OVERLAY, UP.public_key, EPOCH)
    proofs = ProofStore(DictState())
    verifying = Verifying(logs, DOWN_SIGNER, proofs)
    async with rig(overlay=OVERLAY, verifying=verifying) as r:
        await cursors(r, (0, 0, 0, 5))
        scope = trio.CancelScope()
        r.conn.nursery.start_soon(_run_in, scope, r.client.sync, BIN, False, 1, 5)
        request = await r.conn.next()
        assert isinstance(request, StateRequest)
        scope.cancel()
        await trio.testing.wait_all_tasks_blocked()
        await r.client.receive(state_reply(log, request, signed(log, 5)))
        assert logs.holds(BIN, 5, frontier=False)
        assert [s.size for s in proofs.accepted(OVERLAY, EPOCH).values()] == [5]
        assert r.conn.violations == []


async def test_a_cursors_reply_after_its_request_was_cancelled_serves_the_next_request() -> None:
    """The cursors call that asked is cancelled; its reply is no error, and a later call that
    comes before the reply waits for it instead of asking twice (which the session forbids)."""
    async with rig() as r:
        with trio.move_on_after(0.05):
            await r.client.cursors()
        assert await r.conn.next() == CursorsRequest()
        await r.client.receive(CursorsReply(EPOCH, (3,)))  # nothing waits: ignored
        assert r.client.cursor(0) == 3
        with trio.move_on_after(0.05):
            await r.client.cursors()
        assert await r.conn.next() == CursorsRequest()
        async with trio.open_nursery() as n:
            n.start_soon(r.client.cursors)
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(trio.WouldBlock):  # the request still waits: not sent again
                r.conn.sent.receive_nowait()
            await r.client.receive(CursorsReply(EPOCH, (4,)))
        assert r.client.cursor(0) == 4


async def test_an_offer_unsettles_until_the_next_cursors_reply() -> None:
    """`settled` (what fully_synced needs): a cursors reply with no offer after it."""
    async with rig() as r:
        assert not r.client.settled()  # nothing heard yet
        await cursors(r, (0,))
        assert r.client.settled()
        r.store.put_many([CHUNKS[0]])
        r.conn.nursery.start_soon(r.client.sync, 0, True, 1, 0)
        assert await r.conn.next() == Subscribe(0, True, 1, 0)
        await r.client.receive(OfferedHashes(0, True, 1, 1, (CHUNKS[0].address,)))
        assert await r.conn.next() == WantedHashes.from_indices(0, True, 1, 1, [])
        assert r.completed == [(0, 1, 1)]  # caught up with what the offer showed ...
        assert not r.client.settled()  # ... but more may come
        await cursors(r, (1,))
        assert r.client.settled()


@pytest.mark.parametrize("verifying", [False, True])
async def test_a_cursor_never_offered_drops_the_peer(verifying: bool) -> None:
    """Issue 30 item 10: an upstream claims bin 3 holds 2^64 - 2 chunks (verifying: with a signed
    state of that size, which its own key can sign whatever the log) and offers nothing. The
    historical stream is owed its first offer: after the batch timeout the peer is dropped,
    instead of holding the sync (and fully_synced) for good."""
    huge = 2**64 - 2
    logs = ProvenLogs(OVERLAY, UP.public_key, EPOCH)
    mode = Verifying(logs, DOWN_SIGNER, ProofStore(DictState())) if verifying else None
    async with rig(overlay=OVERLAY, verifying=mode, config=PullerConfig(batch_timeout=0.3)) as r:
        await cursors(r, (0, 0, 0, huge))
        r.conn.nursery.start_soon(_expect_violation, r, r.client.sync, BIN, False, 1, huge)
        if verifying:
            request = await r.conn.next()
            assert isinstance(request, StateRequest) and request.size == huge
            nodes = tuple(bytes([i]) * 32 for i in range(len(range_nodes(0, huge))))
            frontier = Frontier(0, ())
            frontier.append_range(huge, nodes)  # a log nobody has: any hashes fold to a root
            made_up = SIGNER.state(BIN, EPOCH, huge, frontier.root())
            await r.client.receive(StateReply(made_up, 0, nodes))
            assert logs.latest_size(BIN) == huge
        assert await r.conn.next() == Subscribe(BIN, False, 1, huge)
        with trio.fail_after(STEP):
            while not r.conn.violations:
                await trio.sleep(0.02)
        (violation,) = r.conn.violations
        assert "no offer of bin 3 historical within 0.3s" in str(violation)
