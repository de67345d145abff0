"""`--provable-sync off|sign|verify` between two in-process nodes (swarm/proofs/service.py).

verify pulling from verify checks every proof and leaves receipts at the upstream; sign pulls
from a provable upstream without checking (no receipts); off pulls plain offers from off, with
no bin logs on disk; and a verifying node cannot pull from one that keeps no logs: it is told so
and stores nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from swarm.node import Node
from swarm.testing import node_config, random_chunks, start_node, wait_for

CHUNKS = random_chunks(400, seed=181)


async def pair(nursery: trio.Nursery, tmp: Path, up_mode: str, down_mode: str) -> tuple[Node, Node]:
    up = await start_node(nursery, node_config(tmp / "up", api_port=None, provable_sync=up_mode))
    up.store_chunks(CHUNKS)
    peers = [("127.0.0.1", up.p2p_port)]
    down = await start_node(
        nursery, node_config(tmp / "down", api_port=None, peers=peers, provable_sync=down_mode)
    )
    return up, down


@pytest.mark.parametrize(("up_mode", "down_mode"), [("verify", "verify"), ("verify", "sign"), ("off", "off")])
async def test_modes_that_can_sync_do(tmp_path: Path, up_mode: str, down_mode: str) -> None:
    with trio.fail_after(40):
        async with trio.open_nursery() as nursery:
            up, down = await pair(nursery, tmp_path, up_mode, down_mode)
            await wait_for(lambda: len(down.store) == len(CHUNKS) and down.puller.fully_synced())
            assert down.sessions.violations == up.sessions.violations == 0
            states = down.statistics().states or {}
            if down_mode == "verify":
                bins = {b for b, c in enumerate(up.store.cursors()) if c}
                assert set(states[up.overlay]) == bins
                assert all(states[up.overlay][b].size == up.store.cursor(b) for b in bins)
                await wait_for(lambda: {k.receipt.bin for k in up.proofs.store.receipts()} == bins)
            else:
                assert states.get(up.overlay) == {}
                assert up.proofs.store.receipts() == []
            tree_files = list((tmp_path / "up" / "localstore").glob("TREE-*"))
            assert bool(tree_files) == (up_mode != "off")
            nursery.cancel_scope.cancel()


async def test_a_verifying_node_cannot_pull_from_one_without_logs(tmp_path: Path) -> None:
    with trio.fail_after(40):
        async with trio.open_nursery() as nursery:
            up, down = await pair(nursery, tmp_path, "off", "verify")

            def told() -> bool:
                records = list(down.sessions.disconnections) + list(up.sessions.disconnections)
                return any("keeps no bin logs" in r.reason or "without a proof" in r.reason for r in records)

            await wait_for(told)
            assert len(down.store) == 0
            nursery.cancel_scope.cancel()
