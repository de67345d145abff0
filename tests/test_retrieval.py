"""Retrieval hop by hop on a fixed line of nodes A - B - C (static peering, no syncing)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import trio

from chunks import Chunk
from localstore.chunkfile import CHUNK_FILE_NAME, SLOT_SIZE
from streamer.requests import RetrieveFailed
from swarm.node import Node
from swarm.testing import node_config, start_node, wait_for


def no_sync(peer_po: int, depth: int) -> list[int]:
    return []


def distance(a: bytes, b: bytes) -> int:
    return int.from_bytes(a, "big") ^ int.from_bytes(b, "big")


CHUNK = Chunk.from_payload(b"a chunk that only one node holds")


async def line(
    nursery: trio.Nursery, tmp_path: Path, *, nearest: str, cache_bytes: int | None = None
) -> tuple[Node, Node, Node]:
    """Three nodes wired A - B - C (static peering, no syncing).

    nearest="A": distances to CHUNK grow along the line, d(A) < d(B) < d(C);
    nearest="C": C is the node closest to CHUNK, so its only peer B is farther than itself.
    """
    nodes = []
    for name in "xyz":
        if cache_bytes is None:
            cfg = node_config(tmp_path / name, gossip=False)
        else:
            cfg = node_config(tmp_path / name, gossip=False, cache_bytes=cache_bytes)
        nodes.append(await start_node(nursery, cfg, sync_rule=no_sync))
    nodes.sort(key=lambda n: distance(n.overlay, CHUNK.address))
    a, b, c = nodes if nearest == "A" else (nodes[1], nodes[2], nodes[0])
    await b.connect("127.0.0.1", a.p2p_port)
    await c.connect("127.0.0.1", b.p2p_port)
    await wait_for(lambda: len(a.peers) == 1 and len(b.peers) == 2 and len(c.peers) == 1)
    return a, b, c


async def test_request_travels_two_hops_towards_the_chunk_and_back_verified(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a, b, c = await line(nursery, tmp_path, nearest="A")
            chunk = CHUNK
            a.intake.store(chunk)
            async with httpx.AsyncClient(timeout=20) as client:
                got = await client.get(f"http://127.0.0.1:{c.api_port}/chunks/{chunk.address.hex()}")
                assert got.status_code == 200 and got.content == chunk.data
                # C asked B, B forwarded to A, A served it; B and C cache it, nobody stores it
                assert (c.retrieval.fetched, b.retrieval.forwarded, a.retrieval.served) == (1, 1, 1)
                assert not b.store.has(chunk.address) and not c.store.has(chunk.address)
                assert chunk.address in b.retrieval.cache and chunk.address in c.retrieval.cache
                # what retrieval hands its users was verified on arrival, so the joiner need not hash it
                assert (await c.retrieval.get(chunk.address)).verified
                head = await client.head(f"http://127.0.0.1:{c.api_port}/chunks/{chunk.address.hex()}")
                assert head.status_code == 404
            nursery.cancel_scope.cancel()


async def test_the_origin_asks_a_peer_farther_than_itself(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a, b, c = await line(nursery, tmp_path, nearest="C")  # C is closer than its only peer B
            chunk = CHUNK
            a.intake.store(chunk)
            async with httpx.AsyncClient(timeout=20) as client:
                got = await client.get(f"http://127.0.0.1:{c.api_port}/chunks/{chunk.address.hex()}")
            # C's own request may go to B though B is farther; B forwards only closer: to A
            assert got.status_code == 200 and got.content == chunk.data
            assert (b.retrieval.forwarded, a.retrieval.served) == (1, 1)
            nursery.cancel_scope.cancel()


async def test_forwarders_ask_only_closer_peers_and_a_miss_is_a_clear_404(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a, b, c = await line(nursery, tmp_path, nearest="C")  # distances: C < A < B
            async with httpx.AsyncClient(timeout=20) as client:
                got = await client.get(f"http://127.0.0.1:{c.api_port}/chunks/{CHUNK.address.hex()}")
            assert got.status_code == 404
            assert "not found (asked 1 peer)" in got.json()["message"]
            # B forwarded to A (closer than B; C, which asked, is skipped); A's only peer B is
            # farther than A, so A answered not found without asking anyone
            assert a.retrieval.failed == 1 and a.retrieval.forwarded == 0
            assert b.retrieval.failed == 1
            nursery.cancel_scope.cancel()


async def test_a_node_alone_answers_404_naming_why(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            node = await start_node(nursery, node_config(tmp_path / "alone", gossip=False), sync_rule=no_sync)
            async with httpx.AsyncClient(timeout=20) as client:
                got = await client.get(f"http://127.0.0.1:{node.api_port}/chunks/{CHUNK.address.hex()}")
            assert got.status_code == 404
            assert "no connected peer" in got.json()["message"]
            nursery.cancel_scope.cancel()


async def test_reusing_an_open_request_id_drops_the_peer(tmp_path: Path) -> None:
    from streamer.messages import GoodbyeCode, RetrieveRequest

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a, b, c = await line(nursery, tmp_path, nearest="A")
            chunk = CHUNK
            a.intake.store(chunk)
            link = c.peers[b.overlay].conn
            # two requests under one ID while the first is still being forwarded
            await link.send(RetrieveRequest(7, chunk.address, 3))
            await link.send(RetrieveRequest(7, chunk.address, 3))
            reason = await link.wait_closed()
            assert reason.code == GoodbyeCode.PROTOCOL_ERROR and "reused" in reason.reason
            while b.sessions.violations == 0:  # B counts it once its side of the session has ended
                await trio.sleep(0.01)
            assert b.sessions.violations == 1
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("hops", [0])
async def test_hop_limit_zero_answers_from_the_local_store_only(tmp_path: Path, hops: int) -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a, b, c = await line(nursery, tmp_path, nearest="A")
            chunk = CHUNK
            a.intake.store(chunk)
            peer_b = c.peers[b.overlay]
            from streamer.requests import RetrieveFailed

            with pytest.raises(RetrieveFailed, match="not found"):
                await peer_b.requests.retrieve(peer_b.conn, chunk.address, hop_limit=hops, timeout=10)
            assert b.retrieval.forwarded == 0
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("cache_bytes", [None, 0], ids=["default-cache", "no-cache"])
async def test_repeat_requests_are_answered_from_the_cache(tmp_path: Path, cache_bytes: int | None) -> None:
    """After one retrieval C-B-A, C's cache answers C's users again, and B's cache answers B's
    users and C's requests, without asking A. With the cache off, every answer needs A."""
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a, b, c = await line(nursery, tmp_path, nearest="A", cache_bytes=cache_bytes)
            a.intake.store(CHUNK)
            url = f"/chunks/{CHUNK.address.hex()}"
            async with httpx.AsyncClient(timeout=20) as client:
                first = await client.get(f"http://127.0.0.1:{c.api_port}{url}")
                assert first.status_code == 200 and first.content == CHUNK.data
                again = await client.get(f"http://127.0.0.1:{c.api_port}{url}")
                assert again.status_code == 200 and again.content == CHUNK.data
                if cache_bytes is None:
                    assert (c.retrieval.fetched, a.retrieval.served) == (1, 1)  # no second trip
                    assert c.retrieval.cache.hits == 1
                else:
                    assert (c.retrieval.fetched, a.retrieval.served) == (2, 2)
                    assert len(c.retrieval.cache) == len(b.retrieval.cache) == 0
                # B's own users, and a peer's request that may not be forwarded (hop limit 0)
                from_b = await client.get(f"http://127.0.0.1:{b.api_port}{url}")
                assert from_b.status_code == 200 and from_b.content == CHUNK.data
                peer_b = c.peers[b.overlay]
                if cache_bytes is None:
                    assert (b.retrieval.fetched, a.retrieval.served) == (0, 1)  # A never asked again
                    data = await peer_b.requests.retrieve(peer_b.conn, CHUNK.address, hop_limit=0, timeout=10)
                    assert data == CHUNK.data and b.retrieval.cache.hits == 2
                else:
                    assert (b.retrieval.fetched, a.retrieval.served) == (1, 3)
                    with pytest.raises(RetrieveFailed, match="not found"):
                        await peer_b.requests.retrieve(peer_b.conn, CHUNK.address, hop_limit=0, timeout=10)
                assert b.retrieval.forwarded == (1 if cache_bytes is None else 2)
                metrics = (await client.get(f"http://127.0.0.1:{c.api_port}/metrics")).text
                hits = 1 if cache_bytes is None else 0
                assert f'swarm_cache_lookups_total{{result="hit"}} {hits}.0' in metrics
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("waiters", [2, 5])
async def test_concurrent_requests_for_one_chunk_share_one_trip(tmp_path: Path, waiters: int) -> None:
    """Several users of C ask for the same chunk at once: one request goes C-B-A, the others wait for
    it (the cache is off, so only the sharing can save the trips)."""
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a, b, c = await line(nursery, tmp_path, nearest="A", cache_bytes=0)
            a.intake.store(CHUNK)
            got: list[Chunk] = []

            async def user() -> None:
                got.append(await c.retrieval.get(CHUNK.address))

            async with trio.open_nursery() as users:
                for _ in range(waiters):
                    users.start_soon(user)
            assert got == [CHUNK] * waiters
            assert (a.retrieval.served, b.retrieval.forwarded, c.retrieval.joined) == (1, 1, waiters - 1)
            # once it is over, a new request makes a new trip
            assert await c.retrieval.get(CHUNK.address) == CHUNK
            assert (a.retrieval.served, c.retrieval.joined) == (2, waiters - 1)
            nursery.cancel_scope.cancel()


async def test_a_waiter_takes_over_when_the_first_request_is_cancelled(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a, _b, c = await line(nursery, tmp_path, nearest="A", cache_bytes=0)
            a.intake.store(CHUNK)
            got: list[Chunk] = []

            async def waiter() -> None:
                got.append(await c.retrieval.get(CHUNK.address))

            async def cancel_once_joined(first: trio.CancelScope) -> None:
                while not c.retrieval.joined:  # the waiter joins in the round the request is sent
                    await trio.lowlevel.checkpoint()
                first.cancel()  # so the first request is cancelled before its answer comes

            async with trio.open_nursery() as users:
                with trio.CancelScope() as first:
                    users.start_soon(waiter)  # runs once the first request below waits for its answer
                    users.start_soon(cancel_once_joined, first)
                    await c.retrieval.get(CHUNK.address)
                assert first.cancelled_caught
            assert got == [CHUNK]
            assert c.retrieval.joined == 1 and a.retrieval.served >= 1
            nursery.cancel_scope.cancel()


async def test_a_damaged_local_copy_is_not_served_but_fetched_from_the_network(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a, b, c = await line(nursery, tmp_path, nearest="A")
            a.intake.store(CHUNK)
            b.intake.store(CHUNK)
            with open(Path(b.store.path) / CHUNK_FILE_NAME, "r+b") as file:
                file.write(bytes(SLOT_SIZE))  # B's only slot, as a power cut could leave it
            async with httpx.AsyncClient(timeout=20) as client:
                got = await client.get(f"http://127.0.0.1:{c.api_port}/chunks/{CHUNK.address.hex()}")
            assert got.status_code == 200 and got.content == CHUNK.data
            assert (b.retrieval.served, b.retrieval.forwarded) == (0, 1)
            assert f"should hold chunk {CHUNK.address.hex()}" in caplog.text
            # the damaged copy was dropped, and B's repair fetched a good one from A (A served the
            # forwarded request and the repair)
            await wait_for(lambda: b.store.has(CHUNK.address) and b.repair.repaired == 1)
            assert b.store.get(CHUNK.address) == CHUNK and a.retrieval.served == 2
            nursery.cancel_scope.cancel()
