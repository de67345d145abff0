"""Push syncing between `swarm node` processes: uploads carried hop by hop by Kademlia forwarding,
receipts signed by the storer and relayed back, and `swarm upload --no-wait` saying which chunks
have no receipt yet while the uploader holds them and goes on pushing, around a silent storer.

Five nodes with static peering (``--no-gossip``), one under each of the 3-bit prefixes 000, 001,
100, 101, 110, neighbourhood size 1, connected as a tree::

    001 - 000 - 100 - 101
                 |
                110

The uploader 000 (depth 1: 001 is its neighbour) is not connected to 110. A chunk starting with
11 is outside 000's neighbourhood and outside 100's (depth 2: 101 is its neighbour), so 000
pushes it to 100, its only closer peer, and 100 forwards it to 110, which has no closer peer:
110 stores it and signs; its receipt travels back two hops unchanged.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from swarm.files.chunker import split_bytes
from swarm.testing import NodeProcess, poll
from tests.reserve_helpers import spread_identities, write_identity

pytestmark = pytest.mark.process

PREFIXES = (0b000, 0b001, 0b100, 0b101, 0b110)
PARENT = {0b001: 0b000, 0b100: 0b000, 0b101: 0b100, 0b110: 0b100}
PEERS = {0b000: 2, 0b001: 1, 0b100: 3, 0b101: 1, 0b110: 1}
DEPTHS = {0b000: 1, 0b100: 2, 0b110: 0}
ARGS = ["--no-gossip", "--neighbourhood-size", "1", "--channel", "plain", "--verify-workers", "0"]
TIMEOUT = 90.0


def sync_doc(node: NodeProcess) -> dict[str, Any]:
    doc: dict[str, Any] = node.get("/sync").json()
    return doc


def start_tree(tmp_path: Path) -> dict[int, NodeProcess]:
    identities = spread_identities(3)
    nodes: dict[int, NodeProcess] = {}
    for prefix in PREFIXES:
        write_identity(tmp_path / f"n{prefix:03b}", identities[prefix])
        peers = [nodes[PARENT[prefix]].p2p] if prefix in PARENT else []
        nodes[prefix] = NodeProcess(tmp_path / f"n{prefix:03b}", peers=peers, extra=ARGS).start()
    poll(
        lambda: (
            all(len(sync_doc(nodes[p])["peers"]) == n for p, n in PEERS.items())
            and all(sync_doc(nodes[p])["depth"] == d for p, d in DEPTHS.items())
        ),
        timeout=TIMEOUT,
    )
    return nodes


def head(node: NodeProcess, address: str) -> int:
    """Whether ``node`` holds the chunk (HEAD /chunks answers from the local store only)."""
    return httpx.head(f"{node.api}/chunks/{address}", timeout=10).status_code


def far(address: bytes) -> bool:
    """A chunk for 110: starting with bits 11."""
    return address[0] >> 6 == 0b11


def test_uploads_travel_hop_by_hop_and_wait_for_their_receipts(tmp_path: Path) -> None:
    nodes: dict[int, NodeProcess] = {}
    try:
        nodes = start_tree(tmp_path)
        uploader, forwarder, storer = nodes[0b000], nodes[0b100], nodes[0b110]
        storer_overlay = sync_doc(storer)["overlay"]
        assert storer_overlay not in {p["overlay"] for p in sync_doc(uploader)["peers"]}

        data = random.Random(21).randbytes(200 * 4096)
        reference, chunks = split_bytes(data)
        far_chunks = [c for c in chunks if far(c.address)]
        pushed = [c for c in chunks if c.address[0] >> 7 == 1]  # outside 000's neighbourhood
        assert far_chunks
        response = httpx.post(f"{uploader.api}/bytes", content=data, timeout=TIMEOUT)
        assert response.status_code == 201 and response.json()["reference"] == reference.hex()
        tag = response.json()["tag"]
        assert tag["without_receipt"] == 0 and tag["synced"] == tag["split"] == len(chunks)

        sent = sync_doc(uploader)["reserve"]
        # durable: two storers each, one of them not the uploader; a chunk of the uploader's own
        # neighbourhood counts its own receipt beside a peer's, every other needs two peers'
        assert sent["own_receipts"] <= len(chunks) - len(pushed)
        assert sent["receipts"] == 2 * len(chunks) - sent["own_receipts"]
        assert sent["receipts_rejected"] == 0 and sent["pending_push"] == 0
        assert sync_doc(forwarder)["reserve"]["pushes_forwarded"] >= len(far_chunks), "100 forwarded"
        assert sync_doc(storer)["reserve"]["pushes_stored"] >= len(far_chunks), "110 stored and signed"
        for chunk in far_chunks:
            assert head(storer, chunk.address.hex()) == 200

        # 110 stops answering: `swarm upload --no-wait` answers at once and names what has no
        # receipt; the uploader holds those chunks and goes on pushing them. With 110 silent its
        # pushes find other storers (001 and 100 each sign with radius 0: within their claim), so
        # the chunks become durable anyway; 110 gets them later by pull syncing from 100.
        assert storer.proc is not None
        storer.proc.send_signal(signal.SIGSTOP)
        try:
            second = tmp_path / "second.bin"
            second.write_bytes(random.Random(22).randbytes(100 * 4096))
            _, second_chunks = split_bytes(second.read_bytes())
            waiting = {c.address.hex() for c in second_chunks if far(c.address)}
            cli = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "swarm",
                    "upload",
                    "--no-wait",
                    "-q",
                    str(second),
                    "--api",
                    uploader.api,
                ],
                capture_output=True,
                timeout=TIMEOUT,
            )
            assert cli.returncode == 0, cli.stderr
            assert "chunks have no receipt yet" in cli.stderr.decode()
            for address in waiting:  # held while they wait
                assert head(uploader, address) == 200
            poll(lambda: sync_doc(uploader)["reserve"]["pending_push"] == 0, timeout=TIMEOUT)
            for address in waiting:  # durable without 110: two other nodes signed
                holders = [n for n in (nodes[0b001], forwarder) if head(n, address) == 200]
                assert len(holders) == 2, address
        finally:
            storer.proc.send_signal(signal.SIGCONT)
        poll(lambda: all(head(storer, a) == 200 for a in waiting), timeout=TIMEOUT)
    finally:
        for node in nodes.values():
            node.kill()
