"""Push syncing: receipts (pure), the pusher's holding and retries, and a swarm of nodes in one
trio run where uploads reach their neighbourhoods and come back receipted."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trio.testing

from chunks import Chunk
from localstore.reserve import Reserve
from localstore.store import LocalStore
from pot import proximity
from streamer.identity import NodeIdentity
from streamer.messages import PushReceipt
from streamer.push_receipts import BadReceipt, make_receipt, verify_receipt
from swarm.files.chunker import split_bytes
from swarm.net.push_requests import PushFailed
from swarm.net.pushsync import NoCloserPeer, PushSync
from swarm.node import Node
from swarm.reserve.pusher import Pusher, Tag
from swarm.testing import node_config, start_node, wait_for
from tests.reserve_helpers import spread_identities, write_identity

NETWORK = 1
RECEIPT = PushReceipt(0, bytes(32), bytes(32), 0, bytes(64))


def chunks(n: int, seed: int) -> list[Chunk]:
    rng = random.Random(seed)
    return [Chunk.from_payload(rng.randbytes(64)) for _ in range(n)]


# -- receipts -----------------------------------------------------------------------------------


def storer_and_chunk(radius: int) -> tuple[NodeIdentity, Chunk]:
    """An identity and a chunk within ``radius`` of its overlay."""
    identity = NodeIdentity.generate()
    overlay = identity.overlay(NETWORK)
    for chunk in chunks(5000, seed=radius):
        if proximity(overlay, chunk.address) >= radius:
            return identity, chunk
    raise AssertionError("no chunk close enough")


def test_a_receipt_proves_who_stores_what() -> None:
    identity, chunk = storer_and_chunk(3)
    receipt = make_receipt(identity, network_id=NETWORK, request_id=9, address=chunk.address, radius=3)
    assert verify_receipt(receipt, network_id=NETWORK, address=chunk.address) == identity.overlay(NETWORK)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"radius": 2}, "bad signature"),
        ({"public_key": NodeIdentity.generate().public_key}, "bad signature"),
        ({"signature": bytes(64)}, "bad signature"),
        ({"address": bytes(32)}, "names chunk"),
    ],
)
def test_a_changed_receipt_proves_nothing(change: dict[str, object], problem: str) -> None:
    identity, chunk = storer_and_chunk(3)
    receipt = make_receipt(identity, network_id=NETWORK, request_id=1, address=chunk.address, radius=3)
    with pytest.raises(BadReceipt, match=problem):
        verify_receipt(replace(receipt, **change), network_id=NETWORK, address=chunk.address)  # type: ignore[arg-type]
    with pytest.raises(BadReceipt, match="bad signature"):
        verify_receipt(receipt, network_id=NETWORK + 1, address=chunk.address)


def test_a_shallow_receipt_is_refused() -> None:
    identity = NodeIdentity.generate()
    overlay = identity.overlay(NETWORK)
    far = next(c for c in chunks(100, seed=1) if proximity(overlay, c.address) == 0)
    receipt = make_receipt(identity, network_id=NETWORK, request_id=1, address=far.address, radius=2)
    with pytest.raises(BadReceipt, match="shallow receipt"):
        verify_receipt(receipt, network_id=NETWORK, address=far.address)


# -- the pusher ---------------------------------------------------------------------------------


OWN = bytes(32)


def storer(n: int) -> bytes:
    return bytes([n + 1]) * 32


def pusher_over(
    store: LocalStore, push: object, *, responsible: bool, peers: bool, **options: object
) -> Pusher:
    """A pusher of this node (overlay OWN) over ``store``, pushing with ``push``."""
    return Pusher(
        store,
        overlay=OWN,
        get_chunk=store.get,
        push=push,  # type: ignore[arg-type]
        responsible=lambda address: responsible,
        has_peers=lambda: peers,
        **options,  # type: ignore[arg-type]
    )


def upload(pusher: Pusher, data: list[Chunk]) -> Tag:
    """An upload of ``data`` (already stored), from its first chunk to its end."""
    tag = pusher.new_tag()
    pusher.add(tag, [c.address for c in data])
    pusher.finish(tag, data[0].address, [c.address for c in data])
    return tag


async def test_an_upload_is_held_until_two_storers_signed_then_evictable(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Pushes fail three times (retried with growing delays), then receipts come: a chunk of the
    node's own neighbourhood needs one peer's receipt beside its own, every other chunk two
    peers'. Until then the chunk is held (never evicted, outside the reserve's size)."""
    data = chunks(4, seed=2)
    outcomes: dict[bytes, int] = {}
    skipped: dict[bytes, list[frozenset[bytes]]] = {}
    nears: dict[bytes, list[int | None]] = {}

    async def push(
        chunk: Chunk, *, storers: frozenset[bytes], near: int | None = None
    ) -> tuple[bytes, PushReceipt]:
        outcomes[chunk.address] = outcomes.get(chunk.address, 0) + 1
        if outcomes[chunk.address] <= 3:
            raise PushFailed("no receipt")
        skipped.setdefault(chunk.address, []).append(storers)
        nears.setdefault(chunk.address, []).append(near)
        return storer(len(storers)), replace(RECEIPT, radius=3)

    released: list[int] = []  # the pending count each time the pusher let chunks go
    store = LocalStore(tmp_path / "s", bytes(32))
    try:
        pusher = Pusher(
            store,
            overlay=OWN,
            get_chunk=store.get,
            push=push,
            responsible=lambda address: address == data[0].address,
            has_peers=lambda: True,
            own_radius=lambda: 2,
            released=lambda: released.append(pusher.statistics().pending),
            retry_min=1.0,
        )
        reserve = Reserve(store, 1, [pusher])
        store.put_many(data)
        tag = pusher.new_tag()
        pusher.add(tag, [c.address for c in data])
        assert all(c.address in pusher for c in data), "while the upload runs, all its chunks are held"
        pusher.finish(tag, data[0].address, [c.address for c in data])
        assert tag.synced == 0, "its own receipt alone does not make a chunk durable"
        assert all(c.address in pusher for c in data)
        assert reserve.size() == 0 and reserve.evict(10) == 0
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                await nursery.start(pusher.run)
                assert not await tag.wait(2.5), "three failures, 1 + 2 + 4 s of delays"
                assert all(c.address in pusher for c in data)
                assert await tag.wait(30)
                nursery.cancel_scope.cancel()
        assert outcomes[data[0].address] == 4, "one peer's receipt beside its own"
        assert all(outcomes[c.address] == 5 for c in data[1:]), "two peers' receipts"
        # each push skips the storers that already signed
        assert skipped[data[0].address] == [frozenset({OWN})]
        assert all(skipped[c.address] == [frozenset(), frozenset({storer(0)})] for c in data[1:])
        # a second storer is sought among the peers within the radius the first one named
        assert nears[data[0].address] == [2], "its own radius"
        assert all(nears[c.address] == [None, 3] for c in data[1:]), "the first receipt's radius"
        stats = pusher.statistics()
        assert stats.failures == 12 and stats.receipts == 7 and stats.own_receipts == 1
        assert tag.synced == 4 and not any(c.address in pusher for c in data)
        assert reserve.size() == 4 and reserve.evict(10) == 3, "durable: ordinary chunks now"
        assert released == [4, 3, 2, 1, 0], "the reserve is told at the upload's end and at each settling"
    finally:
        store.close()


async def test_a_node_alone_holds_its_own_chunks_durable_at_once(tmp_path: Path) -> None:
    data = chunks(3, seed=4)
    pushed: list[bytes] = []

    async def push(
        chunk: Chunk, *, storers: frozenset[bytes], near: int | None = None
    ) -> tuple[bytes, PushReceipt]:
        pushed.append(chunk.address)
        raise PushFailed("unreachable")

    with LocalStore(tmp_path / "s", bytes(32)) as store:
        pusher = pusher_over(store, push, responsible=True, peers=False)
        store.put_many(data)
        tag = upload(pusher, data)
        assert tag.complete and tag.synced == 3 and pusher.statistics().pending == 0
        assert not pushed


async def test_the_same_storer_signing_twice_is_not_durable(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    data = chunks(1, seed=6)

    async def push(
        chunk: Chunk, *, storers: frozenset[bytes], near: int | None = None
    ) -> tuple[bytes, PushReceipt]:
        return storer(0), RECEIPT

    with LocalStore(tmp_path / "s", bytes(32)) as store:
        pusher = pusher_over(store, push, responsible=False, peers=True)
        store.put_many(data)
        tag = upload(pusher, data)
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                await nursery.start(pusher.run)
                assert not await tag.wait(20)
                nursery.cancel_scope.cancel()
        assert pusher.statistics().pending == 1 and "signed for" in pusher.last_error(data[0].address)
    # the storer that signed is remembered across a restart
    with LocalStore(tmp_path / "s", bytes(32)) as store:
        seen: list[frozenset[bytes]] = []

        async def record(
            chunk: Chunk, *, storers: frozenset[bytes], near: int | None = None
        ) -> tuple[bytes, PushReceipt]:
            seen.append(storers)
            return storer(len(seen)), RECEIPT

        pusher = pusher_over(store, record, responsible=False, peers=True)
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                await nursery.start(pusher.run)
                await wait_for(lambda: pusher.statistics().pending == 0)
                nursery.cancel_scope.cancel()
        assert seen == [frozenset({storer(0)})]


async def test_pending_pushes_survive_a_restart(tmp_path: Path) -> None:
    data = chunks(3, seed=3)

    async def never(
        chunk: Chunk, *, storers: frozenset[bytes], near: int | None = None
    ) -> tuple[bytes, PushReceipt]:
        raise NoCloserPeer("alone")

    with LocalStore(tmp_path / "s", bytes(32)) as store:
        pusher = pusher_over(store, never, responsible=False, peers=False)
        store.put_many(data)
        pusher.add(pusher.new_tag(), [c.address for c in data])
    with LocalStore(tmp_path / "s", bytes(32)) as store:
        pusher = pusher_over(store, never, responsible=False, peers=True)
        assert all(c.address in pusher for c in data), "still held after a restart"
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                await nursery.start(pusher.run)
                await wait_for(lambda: pusher.statistics().pending == 0)
                nursery.cancel_scope.cancel()
        assert pusher.statistics().own_receipts == 3, "no closer peer: this node is the closest"


async def test_a_single_receipt_upload_settles_each_chunk_at_its_first_storer(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """``receipts=1`` (``Swarm-Receipts: 1``): a chunk of the node's own neighbourhood is settled
    by its own receipt without a push, every other chunk by one peer's receipt (pushed once);
    the need survives a restart, and a durable upload of a pending chunk raises it to two."""
    data = chunks(4, seed=8)
    pushed: list[tuple[bytes, frozenset[bytes]]] = []

    async def push(
        chunk: Chunk, *, storers: frozenset[bytes], near: int | None = None
    ) -> tuple[bytes, PushReceipt]:
        pushed.append((chunk.address, storers))
        return storer(len(storers)), RECEIPT

    async def never(
        chunk: Chunk, *, storers: frozenset[bytes], near: int | None = None
    ) -> tuple[bytes, PushReceipt]:
        raise PushFailed("not yet")

    def over(store: LocalStore, pushing: object) -> Pusher:
        return Pusher(
            store,
            overlay=OWN,
            get_chunk=store.get,
            push=pushing,  # type: ignore[arg-type]
            responsible=lambda address: address == data[0].address,
            has_peers=lambda: True,
        )

    with LocalStore(tmp_path / "s", bytes(32)) as store:
        store.put_many(data)
        pusher = over(store, never)
        tag = pusher.new_tag()
        pusher.add(tag, [c.address for c in data[:3]], receipts=1)
        assert tag.synced == 1, "its own neighbourhood: its own receipt is the one asked for"
        durable = pusher.new_tag()
        pusher.add(durable, [data[2].address, data[3].address])  # data[2] now wanted durable
        with pytest.raises(ValueError):
            pusher.add(pusher.new_tag(), [data[3].address], receipts=3)
    with LocalStore(tmp_path / "s", bytes(32)) as store:  # a restart: the needs were kept
        pusher = over(store, push)
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                await nursery.start(pusher.run)
                await wait_for(lambda: pusher.statistics().pending == 0)
                nursery.cancel_scope.cancel()
    assert sorted(pushed) == sorted(
        [
            (data[1].address, frozenset()),
            (data[2].address, frozenset()),
            (data[2].address, frozenset({storer(0)})),
            (data[3].address, frozenset()),
            (data[3].address, frozenset({storer(0)})),
        ]
    ), "one push for the single-receipt chunk, two for the durable ones, none for its own"
    assert pusher.statistics().receipts == 5


# -- nodes ----------------------------------------------------------------------------------------


async def test_uploads_reach_their_neighbourhood_and_come_back_receipted(tmp_path: Path) -> None:
    """Four nodes, one under each 2-bit prefix, neighbourhood size 1 (so depth 1): a file uploaded
    at node 0 (prefix 00) answers once every chunk is durable; the chunks starting with bit 1
    are outside its neighbourhood, pushed to both nodes 10 and 11, which store them and sign;
    the others are pushed to node 01, whose receipt joins the uploader's own."""
    identities = spread_identities(2)
    data = random.Random(5).randbytes(300 * 4096)
    reference, file_chunks = split_bytes(data)
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            nodes: list[Node] = []
            for i, identity in enumerate(identities):
                write_identity(tmp_path / f"n{i}", identity)
                peers = [("127.0.0.1", nodes[0].p2p_port)] if nodes else []
                config = node_config(
                    tmp_path / f"n{i}", peers=peers, gossip_interval=0.3, neighbourhood_size=1
                )
                nodes.append(await start_node(nursery, config))
            await wait_for(
                lambda: all(len(node.peers) == 3 and node.depth() == 1 for node in nodes), timeout=60
            )
            uploader = nodes[0]
            async with httpx.AsyncClient(timeout=90) as client:
                response = await client.post(f"http://127.0.0.1:{uploader.api_port}/bytes", content=data)
            assert response.status_code == 201
            doc = response.json()
            assert doc["reference"] == reference.hex()
            tag = doc["tag"]
            assert tag["without_receipt"] == 0 and tag["synced"] == tag["split"] == doc["chunks"]
            assert response.headers["swarm-tag"] == str(tag["uid"])
            assert tag["seen"] == 0
            far = [c for c in file_chunks if c.address[0] >> 7 == 1]
            status = uploader.statistics().reserve
            assert status.pending_push == 0
            near = [c for c in file_chunks if c.address[0] >> 7 == 0]
            # durable: two storers each, one not the uploader; far chunks need two peers' receipts
            assert status.own_receipts == len(near)
            assert status.receipts == 2 * len(far) + len(near)
            for chunk in far:
                storers = [n for n in nodes[2:] if n.store.has(chunk.address)]
                assert len(storers) == 2, chunk.address.hex()
            for chunk in near:
                assert nodes[1].store.has(chunk.address), chunk.address.hex()
            stored = [n.pushsync.statistics().stored for n in nodes]
            assert stored[2] + stored[3] >= 2 * len(far)
            # connected to every storer, the uploader sent them batches: one receipt per batch
            batches = uploader.pushsync.batches
            assert batches.attested == 2 * len(far) + len(near) and batches.sent < batches.attested / 4
            async with httpx.AsyncClient(timeout=90) as client:  # the same file again: all seen
                again = await client.post(f"http://127.0.0.1:{uploader.api_port}/bytes", content=data)
            assert again.json()["tag"]["seen"] == again.json()["tag"]["split"] == len(file_chunks)
            # a single-receipt upload: one storer's receipt per chunk, its own for the near ones
            single = random.Random(6).randbytes(100 * 4096)
            _, single_chunks = split_bytes(single)
            before = uploader.statistics().reserve
            url = f"http://127.0.0.1:{uploader.api_port}/bytes"
            async with httpx.AsyncClient(timeout=90) as client:
                bad = await client.post(url, content=b"x", headers={"swarm-receipts": "3"})
                assert bad.status_code == 400
                response = await client.post(url, content=single, headers={"swarm-receipts": "1"})
            tag = response.json()["tag"]
            assert tag["without_receipt"] == 0 and tag["synced"] == tag["split"] == len(single_chunks)
            after = uploader.statistics().reserve
            far = [c for c in single_chunks if c.address[0] >> 7 == 1]
            assert after.receipts - before.receipts == len(far), "one peer's receipt per far chunk"
            assert after.own_receipts - before.own_receipts == len(single_chunks) - len(far)
            assert after.pending_push == 0
            for chunk in far:
                assert any(n.store.has(chunk.address) for n in nodes[2:]), chunk.address.hex()
            # one chunk by POST /chunks: one peer's receipt when asked for one, two by default
            rng = random.Random(7)
            candidates = (Chunk.from_payload(rng.randbytes(4096)) for _ in range(10**4))
            far_chunks = (c for c in candidates if c.address[0] >> 7)
            chunks_url = f"http://127.0.0.1:{uploader.api_port}/chunks"
            for receipts in (1, 2):
                chunk = next(far_chunks)
                before = uploader.statistics().reserve
                async with httpx.AsyncClient(timeout=90) as client:
                    headers = {"swarm-receipts": str(receipts)}
                    posted = await client.post(chunks_url, content=chunk.data, headers=headers)
                assert posted.status_code == 201, posted.text
                assert uploader.statistics().reserve.receipts - before.receipts == receipts
            nursery.cancel_scope.cancel()


class _Conn:
    closed = False


class _SigningPeer:
    """A peer that answers every push with a receipt signed by ``signer`` (radius 0), storing nothing."""

    def __init__(self, signer: NodeIdentity) -> None:
        self.signer = signer
        self.overlay = signer.overlay(NETWORK)
        self.conn = _Conn()

    async def push(self, address: bytes, data: bytes, *, hop_limit: int, timeout: float) -> PushReceipt:
        return make_receipt(self.signer, network_id=NETWORK, request_id=0, address=address, radius=0)


@pytest.mark.parametrize("closer", [0, 4, 5, 9])
async def test_a_receipt_from_outside_the_neighbourhood_we_know_is_refused(closer: int) -> None:
    """A throwaway identity signs with radius 0 (a valid signature, not shallow by its own claim);
    the uploader refuses it once it knows five or more nodes closer to the chunk."""
    throwaway = NodeIdentity.generate()
    peer = _SigningPeer(throwaway)
    chunk = chunks(1, seed=9)[0]
    target = int.from_bytes(chunk.address, "big")
    own_distance = int.from_bytes(throwaway.overlay(NETWORK), "big") ^ target
    # known nodes closer to the chunk than the signer: its distance with lower bits cleared
    nearer = [(target ^ (own_distance >> (k + 1))).to_bytes(32, "big") for k in range(closer)]
    uploader = NodeIdentity.generate()
    peers: list[Any] = [peer]  # a double of a connected peer
    pushsync = PushSync(
        uploader,
        NETWORK,
        peers=lambda: peers,
        store=lambda chunk: None,
        responsible=lambda address: False,
        radius=lambda: 0,
        known=lambda: nearer,
        credible_within=5,
    )
    own = int.from_bytes(uploader.overlay(NETWORK), "big") ^ target
    closer_than_signer = closer + (own < own_distance)
    with trio.fail_after(10):
        if closer_than_signer >= 5:
            with pytest.raises(PushFailed, match="not in the neighbourhood"):
                await pushsync.push(chunk)
            assert pushsync.statistics().rejected == 1
        else:
            storer, _ = await pushsync.push(chunk)
            assert storer == throwaway.overlay(NETWORK) and pushsync.statistics().rejected == 0
