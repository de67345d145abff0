"""Batch pushes: one receipt for many chunks (pure), the uploader's batches and the storer's side
over doubles of peers (tests/test_pushsync.py has them through nodes)."""

from __future__ import annotations

import random
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from chunks import Chunk
from localstore.store import LocalStore
from pot import proximity
from streamer.errors import RemoteProtocolError
from streamer.identity import NodeIdentity
from streamer.messages import (
    MAX_PUSH_BATCH,
    GoodbyeCode,
    PushBatch,
    PushBatchReceipt,
    PushedChunk,
    PushReceipt,
)
from streamer.push_receipts import BadReceipt, make_batch_receipt, verify_batch_receipt
from swarm.net.push_batches import BatchPushes
from swarm.reserve.pusher import PENDING_PREFIX, Pusher

NETWORK = 1
STORER = NodeIdentity.from_private_bytes(bytes(range(1, 33)))
OVERLAY = STORER.overlay(NETWORK)
ADDRESSES = [Chunk.from_payload(random.Random(7).randbytes(40) + bytes([i])).address for i in range(64)]


def receipt_for(named: list[bytes], radius: int = 0, network_id: int = NETWORK) -> PushBatchReceipt:
    return make_batch_receipt(STORER, network_id=network_id, request_id=3, addresses=named, radius=radius)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(ADDRESSES), min_size=1, max_size=MAX_PUSH_BATCH, unique=True),
    st.data(),
    st.integers(0, 3),
)
def test_a_batch_receipt_attests_exactly_what_it_names_within_the_radius(
    pushed: list[bytes], data: st.DataObject, radius: int
) -> None:
    named = data.draw(st.lists(st.sampled_from(pushed), unique=True))
    storer, covered = verify_batch_receipt(receipt_for(named, radius), network_id=NETWORK, pushed=pushed)
    assert storer == OVERLAY
    # the naive model: a chunk is attested iff the receipt names it and it lies within the radius
    assert set(covered) == {a for a in pushed if a in named and proximity(OVERLAY, a) >= radius}


def test_a_chunk_the_receipt_does_not_name_is_not_covered() -> None:
    pushed = ADDRESSES[:5]
    _, covered = verify_batch_receipt(receipt_for(pushed[:4]), network_id=NETWORK, pushed=pushed)
    assert covered == pushed[:4]
    assert pushed[4] not in covered


@pytest.mark.parametrize(
    "change",
    [
        {"addresses": tuple(ADDRESSES[:3])},  # one address dropped after signing
        {"addresses": tuple(reversed(ADDRESSES[:4]))},  # reordered: another hash
        {"radius": 1},
        {"public_key": NodeIdentity.generate().public_key},
        {"signature": bytes(64)},
    ],
)
def test_a_changed_batch_receipt_proves_nothing(change: dict[str, Any]) -> None:
    receipt = receipt_for(ADDRESSES[:4])
    with pytest.raises(BadReceipt, match="bad signature"):
        verify_batch_receipt(replace(receipt, **change), network_id=NETWORK, pushed=ADDRESSES[:8])
    with pytest.raises(BadReceipt, match="bad signature"):
        verify_batch_receipt(receipt, network_id=NETWORK + 1, pushed=ADDRESSES[:8])


def test_a_batch_receipt_naming_a_chunk_not_pushed_is_refused() -> None:
    receipt = receipt_for(ADDRESSES[:4])
    with pytest.raises(BadReceipt, match="which the batch did not hold"):
        verify_batch_receipt(receipt, network_id=NETWORK, pushed=ADDRESSES[1:4])


# -- the uploader's batches and the storer's side, over doubles of connected peers ----------------


class _Conn:
    closed = False

    def __init__(self) -> None:
        self.sent: list[object] = []
        self.started: list[tuple[Any, tuple[Any, ...]]] = []

    async def send(self, msg: object, priority: object) -> None:
        self.sent.append(msg)

    def start_soon(self, fn: Any, *args: Any) -> None:
        self.started.append((fn, args))

    async def run_started(self) -> None:
        for fn, args in self.started:
            await fn(*args)


class _BatchPeer:
    """A connected peer that stores what a batch brings and signs for it, leaving out ``skip``;
    signed by ``signer`` (its own identity unless told otherwise)."""

    def __init__(
        self, identity: NodeIdentity, skip: Collection[bytes] = (), signer: NodeIdentity | None = None
    ):
        self.identity, self.skip, self.signer = identity, set(skip), signer or identity
        self.overlay = identity.overlay(NETWORK)
        self.conn = _Conn()
        self.batches: list[tuple[PushedChunk, ...]] = []

    async def push_batch(
        self, chunks: tuple[PushedChunk, ...], *, direct: bool, timeout: float
    ) -> PushBatchReceipt:
        self.batches.append(chunks)
        named = [c.address for c in chunks if c.address not in self.skip]
        return make_batch_receipt(self.signer, network_id=NETWORK, request_id=1, addresses=named, radius=0)


def batch_pushes(peers: list[Any], **options: Any) -> BatchPushes:
    options = {"store_many": lambda chunks: None, "radius": lambda: 0, "known": lambda: (), **options}
    return BatchPushes(
        NodeIdentity.generate(), NETWORK, peers=lambda: peers, credible_within=5, timeout=5, **options
    )


def content(n: int, seed: int = 1) -> list[Chunk]:
    rng = random.Random(seed)
    return [Chunk.from_payload(rng.randbytes(100)) for _ in range(n)]


async def test_a_chunk_the_batch_receipt_leaves_out_is_not_credited() -> None:
    data = content(20)
    peer = _BatchPeer(NodeIdentity.generate(), skip={data[3].address})
    pushes = batch_pushes([peer])
    with trio.fail_after(10):
        attested = await pushes.push_round([(c, frozenset(), None) for c in data])
    assert sorted(a for a, _, _ in attested) == sorted(c.address for c in data if c != data[3])
    assert {storer for _, storer, _ in attested} == {peer.overlay}
    assert sorted(len(b) for b in peer.batches) == [5, MAX_PUSH_BATCH]  # 20 chunks: two frames
    assert pushes.sent == 2 and pushes.attested == 19


async def test_a_batch_receipt_signed_by_another_node_credits_nothing() -> None:
    data = content(4)
    peer = _BatchPeer(NodeIdentity.generate(), signer=NodeIdentity.generate())
    pushes = batch_pushes([peer])
    with trio.fail_after(10):
        assert await pushes.push_round([(c, frozenset(), None) for c in data]) == []
    assert pushes.refused == 1


async def test_a_chunk_goes_to_the_closest_peer_that_has_not_signed_and_is_credible() -> None:
    data = content(30, seed=2)
    a, b = _BatchPeer(NodeIdentity.generate()), _BatchPeer(NodeIdentity.generate())
    pushes = batch_pushes([a, b])
    with trio.fail_after(10):
        attested = await pushes.push_round([(c, frozenset({a.overlay}), None) for c in data])
    assert {storer for _, storer, _ in attested} == {b.overlay} and len(attested) == 30
    # the naive model of credibility: the storer must be among the 5 closest nodes known
    crowd = [NodeIdentity.generate().overlay(NETWORK) for _ in range(40)]
    pushes = batch_pushes([a], known=lambda: crowd)
    plan = pushes.plan([(c, frozenset(), None) for c in data])
    expected = [
        c for c in data if sum(_closer(o, a.overlay, c.address) for o in [*crowd, pushes.overlay]) < 5
    ]
    assert plan.get((a.overlay, False), []) == expected


def _closer(other: bytes, node: bytes, target: bytes) -> bool:
    distance = lambda x: int.from_bytes(x, "big") ^ int.from_bytes(target, "big")  # noqa: E731
    return distance(other) < distance(node)


async def test_the_storer_verifies_what_it_does_not_hold_and_signs_for_all() -> None:
    data = content(6, seed=3)
    stored: list[Chunk] = []
    verified: list[Chunk] = []

    async def verify(chunks: list[Chunk]) -> list[str | None]:
        verified.extend(chunks)
        return [None] * len(chunks)

    uploader = _BatchPeer(NodeIdentity.generate())
    pushes = batch_pushes([], store_many=stored.extend, verify=verify, held=lambda c: c == data[0])
    msg = PushBatch(7, True, tuple(PushedChunk(c.address, c.data) for c in data))
    pushes.on_batch(uploader, msg)  # type: ignore[arg-type]  # a double of a connected peer
    with trio.fail_after(10):
        await uploader.conn.run_started()
    (receipt,) = uploader.conn.sent
    assert isinstance(receipt, PushBatchReceipt) and receipt.request_id == 7
    storer, covered = verify_batch_receipt(receipt, network_id=NETWORK, pushed=[c.address for c in data])
    assert storer == pushes.overlay and covered == [c.address for c in data]
    assert verified == stored == data[1:], "a chunk it holds is neither verified nor stored again"
    assert (pushes.received, pushes.held) == (6, 1)  # /sync: reserve.pushes_held


async def test_a_batch_with_an_invalid_chunk_drops_the_uploader() -> None:
    data = content(3, seed=4)
    forged = PushedChunk(data[2].address, data[1].data)
    msg = PushBatch(1, True, (PushedChunk(data[0].address, data[0].data), forged))
    stored: list[Chunk] = []
    uploader = _BatchPeer(NodeIdentity.generate())
    pushes = batch_pushes([], store_many=stored.extend)
    pushes.on_batch(uploader, msg)  # type: ignore[arg-type]  # a double of a connected peer
    with trio.fail_after(10), pytest.raises(RemoteProtocolError, match="invalid pushed chunk") as caught:
        await uploader.conn.run_started()
    assert caught.value.code == GoodbyeCode.INVALID_CHUNK
    assert stored == [] and uploader.conn.sent == []


async def test_the_pusher_pushes_one_by_one_what_batches_leave_out(tmp_path: Path) -> None:
    """Two peers sign batches but never for chunk X: every other chunk is durable by batches (a
    receipt from each peer), X by single pushes (two storers), and the upload completes."""
    data = content(40, seed=5)
    left_out = data[7].address
    peers: list[Any] = [_BatchPeer(NodeIdentity.generate(), skip={left_out}) for _ in range(2)]
    pushes = batch_pushes(peers)
    singles: list[bytes] = []

    async def push(chunk: Chunk, *, storers: frozenset[bytes], near: int | None) -> tuple[bytes, PushReceipt]:
        singles.append(chunk.address)
        return NodeIdentity.generate().overlay(NETWORK), PushReceipt(
            0, chunk.address, bytes(32), 0, bytes(64)
        )

    store = LocalStore(tmp_path / "s", bytes(32))
    try:
        store.put_many(data)
        pusher = Pusher(
            store,
            overlay=bytes(32),
            get_chunk=store.get,
            push=push,
            push_batch=pushes.push_round,
            responsible=lambda address: False,
            has_peers=lambda: True,
        )
        tag = pusher.new_tag()
        pusher.add(tag, [c.address for c in data])
        pusher.finish(tag, data[0].address, [c.address for c in data])
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                await nursery.start(pusher.run)
                assert await tag.wait(20)
                nursery.cancel_scope.cancel()
        assert singles == [left_out, left_out]
        assert pushes.attested == 2 * (len(data) - 1) == pusher.statistics().receipts - 2
        assert tag.synced == len(data) and pusher.statistics().pending == 0
        assert not list(store.iter_state(PENDING_PREFIX)), "nothing left to push after a restart"
    finally:
        store.close()


async def test_a_batch_not_direct_leaves_out_what_the_storer_would_forward() -> None:
    """Not responsible for a chunk and connected to a peer closer to it: the storer leaves the
    chunk out (the uploader pushes it one by one, to be forwarded); asked to store directly, it
    stores them all."""
    data = content(15, seed=6)
    neighbour = _BatchPeer(NodeIdentity.generate())
    mine = {c.address for c in data[:8]}
    stored: list[Chunk] = []
    pushes = batch_pushes([neighbour], store_many=stored.extend, responsible=lambda a: a in mine)
    far = [c for c in data[8:] if _closer(neighbour.overlay, pushes.overlay, c.address)]
    assert far, "some chunk is closer to the neighbour"
    uploader = _BatchPeer(NodeIdentity.generate())
    for direct in (False, True):
        pushes.on_batch(uploader, PushBatch(1, direct, tuple(PushedChunk(c.address, c.data) for c in data)))  # type: ignore[arg-type]
        with trio.fail_after(10):
            await uploader.conn.run_started()
        uploader.conn.started.clear()
    first, second = uploader.conn.sent
    assert isinstance(first, PushBatchReceipt) and isinstance(second, PushBatchReceipt)
    assert set(first.addresses) == {c.address for c in data} - {c.address for c in far}
    assert set(second.addresses) == {c.address for c in data}
