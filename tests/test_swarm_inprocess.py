"""A swarm of 8 nodes in one trio run over loopback TCP: gossip, depth, upload, retrieval."""

from __future__ import annotations

import random
from pathlib import Path

import httpx
import trio

from pot import proximity
from swarm.files.chunker import split_bytes
from swarm.node import Node
from swarm.testing import node_config, start_node, wait_for

N = 8


def settled(nodes: list[Node]) -> bool:
    """Everyone knows everyone else and the connection managers have nothing left to dial."""
    from kademlia import is_settled

    return all(n.table.known_count() == N - 1 and is_settled(n.table, n.manager.callable) for n in nodes)


def in_neighbourhood(node: Node, address: bytes) -> bool:
    return proximity(node.overlay, address) >= node.depth()


async def test_gossip_depth_upload_and_retrieval_across_eight_nodes(tmp_path: Path) -> None:
    data = random.Random(7).randbytes(1024 * 1024)
    reference, chunks = split_bytes(data)
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            boot = await start_node(nursery, node_config(tmp_path / "n0", gossip_interval=0.5))
            nodes = [boot]
            for i in range(1, N):
                cfg = node_config(
                    tmp_path / f"n{i}", peers=[("127.0.0.1", boot.p2p_port)], gossip_interval=0.5
                )
                nodes.append(await start_node(nursery, cfg))
            # gossip: from one bootnode, every node learns every other
            await wait_for(lambda: settled(nodes), timeout=60)
            for node in nodes:
                # the depth rule on the settled table: at least neighbourhood_size peers at po >= depth
                assert (
                    sum(1 for p in node.table.connected_peers() if node.table.bin_of(p) >= node.depth()) >= 3
                )

            async with httpx.AsyncClient(timeout=30) as client:
                upload = await client.post(f"http://127.0.0.1:{nodes[3].api_port}/bytes", content=data)
                assert upload.status_code == 201
                assert upload.json()["reference"] == reference.hex()

                # pull syncing alone moves every chunk to its whole neighbourhood
                def placed() -> bool:
                    return all(
                        n.store.has(c.address)
                        for c in chunks
                        for n in nodes
                        if in_neighbourhood(n, c.address)
                    )

                await wait_for(placed, timeout=60)
                # every node can download the file, byte-identical, fetching what it lacks
                for node in nodes:
                    got = await client.get(f"http://127.0.0.1:{node.api_port}/bytes/{reference.hex()}")
                    assert got.status_code == 200, (node.api_port, got.text[:200])
                    assert got.content == data
                # HEAD answers from the local store alone: it says exactly where chunks live
                for node in nodes:
                    for chunk in chunks[:20]:
                        url = f"http://127.0.0.1:{node.api_port}/chunks/{chunk.address.hex()}"
                        head = await client.head(url)
                        assert head.status_code == (200 if node.store.has(chunk.address) else 404)
                # a chunk nobody has: HEAD says 404, GET gives a clear 404 naming it
                missing = "ab" * 32
                head = await client.head(f"http://127.0.0.1:{nodes[5].api_port}/chunks/{missing}")
                assert head.status_code == 404
                got = await client.get(f"http://127.0.0.1:{nodes[5].api_port}/bytes/{missing}")
                assert got.status_code == 404 and missing in got.json()["message"]
            nursery.cancel_scope.cancel()
