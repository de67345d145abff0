"""Pins over HTTP and the command line: a pinned upload outlives a reserve far smaller than it,
unpinned it is evicted down to the capacity; `swarm pin add|ls|rm` talk to a node."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import httpx
import trio

from swarm.testing import node_config, start_node, wait_for

CAPACITY = 10


async def test_a_pinned_upload_is_kept_whatever_the_capacity(tmp_path: Path) -> None:
    data = random.Random(3).randbytes(40 * 4096)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            node = await start_node(nursery, node_config(tmp_path / "n", capacity=CAPACITY))
            api = f"http://127.0.0.1:{node.api_port}"
            async with httpx.AsyncClient(base_url=api, timeout=30) as client:
                pinned = await client.post("/bytes", content=data, headers={"swarm-pin": "true"})
                assert pinned.status_code == 201
                reference = pinned.json()["reference"]
                chunks = pinned.json()["chunks"]
                assert (await client.get("/pins")).json()["references"] == [reference]
                assert (await client.get(f"/pins/{reference}")).json()["chunks"] == chunks
                other = await client.post("/bytes", content=random.Random(4).randbytes(30 * 4096))
                await wait_for(lambda: node.statistics().reserve.size <= CAPACITY, timeout=20)
                status = node.statistics().reserve
                assert status.pinned == chunks and status.evicted > 0
                got = await client.get(f"/bytes/{reference}")
                assert got.content == data, "every chunk of the pinned file is still here"

                # the command line: ls shows it, rm unpins it, and then it is evicted too
                listed = await trio.run_process(
                    [sys.executable, "-m", "swarm", "pin", "ls", "--api", api], capture_stdout=True
                )
                assert listed.stdout.decode().split() == [reference, str(chunks), "chunks"]
                await trio.run_process([sys.executable, "-m", "swarm", "pin", "rm", reference, "--api", api])
                assert (await client.get("/pins")).json()["references"] == []
                await wait_for(lambda: len(node.store) <= CAPACITY, timeout=20)
                # a file the node cannot get whole cannot be pinned: one line, a non-zero status
                failed = await trio.run_process(
                    [sys.executable, "-m", "swarm", "pin", "add", other.json()["reference"], "--api", api],
                    capture_stderr=True,
                    check=False,
                )
                assert failed.returncode != 0
                assert len(failed.stderr.decode().strip().splitlines()) == 1
                assert "pin add failed with 404" in failed.stderr.decode()
                missing = await client.post(f"/pins/{'ab' * 32}")
                assert missing.status_code == 404 and "cannot pin" in missing.json()["message"]
            nursery.cancel_scope.cancel()
