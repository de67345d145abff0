"""The bounded reserve at the process level (issue 17): eight `swarm node` processes of small
capacity (2,000 chunks) take an upload three times one node's capacity.

The nodes' overlays are spread, one under each 3-bit prefix, and their neighbourhood size is 1,
so every node has depth 2 and shares its neighbourhood with one other node: each chunk belongs to
a pair, a quarter of the upload to each pair (three quarters of a node's capacity). The upload
goes to node 0 without waiting for receipts, and while it is being pushed every chunk without a
receipt is still held there, and no node's reserve exceeds its capacity by more than a bounded
margin while it evicts. Once it is done and syncing has settled:

- no node holds more than its capacity (the pushed chunks the uploader kept until their receipts
  are evicted again), and the storage radius of every node rose to its depth;
- every chunk is held by both nodes of its neighbourhood, and every node downloads the file
  byte-identical (fetching what it lacks);
- no evicted chunk came back: no address appears twice in any node's pull index (an evicted
  chunk's entry stays as a hole; synced back, it would get a second one);
- the counts stay still once syncing is done, and Bee's /status, the metrics and
  `swarm sync-status` report the uploader's reserve and receipts as /sync does;
- a node at capacity stopped cleanly, then SIGKILLed, comes back each time with its radius and
  every chunk it was responsible for.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from localstore.pullindex import ENTRY_SIZE, pull_file_name
from localstore.store import LocalStore
from localstore.storefiles import BINS
from pot import proximity
from swarm.files.chunker import split_bytes
from swarm.testing import NodeProcess, poll
from tests.reserve_helpers import spread_identities, write_identity

pytestmark = pytest.mark.process

NODES = 8
CAPACITY = 2000
UPLOAD_CHUNKS = 3 * CAPACITY
TIMEOUT = 240.0
MARGIN = CAPACITY // 6
"""How far a reserve may exceed its capacity while it evicts: what pull syncing stores and
receipts release in the worker's tenth of a second between rounds, and the chunks of offers in
flight (leased: swarm/reserve/offer_leases.py). Measured at load 7-10: 97 over 1,200 and 79 over 2,000."""


def node_args() -> list[str]:
    """Small reserves; live offers at once (``--replication-wait 0``): the storers fill up and evict
    here because they pull every chunk from the uploader while it still holds them all (radius 0
    wants everything). With uploads first the uploader, at capacity, evicts receipted chunks
    before its held offers go out, and each storer keeps little beyond its neighbourhood's
    quarter, under capacity: no storer would be at capacity to restart below."""
    return [
        "--replication-wait",
        "0",
        "--capacity",
        str(CAPACITY),
        "--neighbourhood-size",
        "1",
        "--verify-workers",
        "0",
        "--channel",
        "plain",
    ]


def sync_doc(node: NodeProcess) -> dict[str, Any]:
    doc: dict[str, Any] = node.get("/sync").json()
    return doc


def settled(nodes: list[NodeProcess]) -> bool:
    docs = [sync_doc(node) for node in nodes]
    return all(
        doc["fully_synced"]
        and len(doc["peers"]) == NODES - 1
        and doc["depth"] == 2
        and doc["reserve"]["radius"] <= 2
        and doc["reserve"]["pending_push"] == 0
        and doc["reserve"]["size"] <= CAPACITY
        for doc in docs
    )


def wait_settled(nodes: list[NodeProcess]) -> None:
    try:
        poll(lambda: settled(nodes), timeout=TIMEOUT, interval=1.0)
    except TimeoutError:
        docs = [sync_doc(node) for node in nodes]
        states = [(d["chunks"], d["fully_synced"], len(d["peers"]), d["depth"], d["reserve"]) for d in docs]
        raise AssertionError(f"not settled: {states}") from None


def snapshot(nodes: list[NodeProcess]) -> list[tuple[int, int]]:
    """Each node's chunk count and how many chunks it has evicted."""
    docs = [sync_doc(node) for node in nodes]
    return [(doc["chunks"], doc["reserve"]["evicted"]) for doc in docs]


def check_reports(uploader: NodeProcess, pushed_at_most: int) -> None:
    """Bee's /status, the metrics and `swarm sync-status` report the uploader's reserve as /sync does."""
    reserve = sync_doc(uploader)["reserve"]
    status = uploader.get("/status").json()
    assert (status["reserveSize"], status["storageRadius"]) == (reserve["size"], reserve["radius"])
    assert status["reserveSizeWithinRadius"] == reserve["size_within_radius"] <= CAPACITY
    assert status["pullsyncRate"] >= 0
    metrics = uploader.get("/metrics").text
    for line in (
        f"swarm_reserve_capacity {CAPACITY}.0",
        f"swarm_storage_radius {reserve['radius']}.0",
        f"swarm_reserve_evicted_total {reserve['evicted']}.0",
        f'swarm_push_receipts_total{{signer="peer"}} {reserve["receipts"]}.0',
        "swarm_push_pending 0.0",
    ):
        assert line in metrics.splitlines(), line
    assert 0 < reserve["receipts"] <= 2 * pushed_at_most  # two storers a chunk at most
    shown = subprocess.run(
        [sys.executable, "-m", "swarm", "sync-status", "--api", uploader.api],
        capture_output=True,
        timeout=60,
        check=True,
    ).stdout.decode()
    assert f"reserve {reserve['size']}/{CAPACITY} chunks" in shown
    assert f"evicted {reserve['evicted']}" in shown and f"receipts {reserve['receipts']}" in shown


def stored_addresses(data_dir: Path, overlay: bytes) -> tuple[set[bytes], list[bytes]]:
    """A stopped node's stored addresses, and every address its pull index ever named (an evicted
    chunk's entry is a hole that keeps its address)."""
    named: list[bytes] = []
    with LocalStore(data_dir / "localstore", overlay) as store:
        held = {a for b in range(BINS) for _, a in store.iter_bin(b, 1)}
        for b in range(BINS):
            path = data_dir / "localstore" / pull_file_name(b)
            raw = path.read_bytes()[: store.cursor(b) * ENTRY_SIZE] if path.exists() else b""
            named += [raw[at : at + 32] for at in range(0, len(raw), ENTRY_SIZE)]
    return held, named


def test_eight_small_nodes_take_an_upload_three_times_a_capacity(tmp_path: Path) -> None:
    identities = spread_identities(3)
    overlays = [identity.overlay(1) for identity in identities]
    data = random.Random(17).randbytes(UPLOAD_CHUNKS * 4096 - 100)
    reference, chunks = split_bytes(data)
    nodes: list[NodeProcess] = []
    try:
        for i, identity in enumerate(identities):
            write_identity(tmp_path / f"n{i}", identity)
            peers = [nodes[0].p2p] if nodes else []
            nodes.append(NodeProcess(tmp_path / f"n{i}", peers=peers, extra=node_args()).start())
        poll(lambda: all(len(sync_doc(n)["peers"]) == NODES - 1 for n in nodes), timeout=60)

        uploader = nodes[0]
        started = time.monotonic()
        with httpx.Client(base_url=uploader.api, timeout=120) as client:
            response = client.post("/bytes", content=data, headers={"swarm-deferred-upload": "true"})
            assert response.status_code == 201
            assert response.json()["reference"] == reference.hex()
            uid = response.json()["tag"]["uid"]
            checked = 0
            # the largest reserve of a storer while chunks are pushed (held ones do not count). Not
            # the uploader's: it offers every new chunk to all 7 peers (depth 0 here), and an
            # offered chunk is leased until delivered, so it stays over capacity (measured: up
            # to 2.2x) until its peers have pulled; it must be back within it once settled (below)
            fullest = 0
            while True:  # until every chunk has a receipt: the ones without are held here
                tag = client.get(f"/tags/{uid}").json()
                sizes = [sync_doc(n)["reserve"]["size"] for n in nodes[1:]]
                fullest = max(fullest, *sizes)
                for missing in tag["missing"][:10]:
                    if client.head(f"/chunks/{missing['address']}").status_code != 200:
                        # evicted: only allowed if its receipt came in since (then it is not listed)
                        listed = {m["address"] for m in client.get(f"/tags/{uid}").json()["missing"]}
                        assert missing["address"] not in listed, "a chunk without a receipt is gone"
                    checked += 1
                if tag["without_receipt"] == 0:
                    break
                assert time.monotonic() - started < TIMEOUT, tag
                time.sleep(0.2)
            assert tag["synced"] == tag["split"] == len(chunks)
        assert checked > 0, "some chunks waited for their receipts"
        assert fullest <= CAPACITY + MARGIN, f"a reserve reached {fullest} chunks while evicting"

        wait_settled(nodes)
        before = snapshot(nodes)
        time.sleep(3)
        assert snapshot(nodes) == before, "counts are stable once syncing is done"
        for doc in map(sync_doc, nodes):
            assert doc["chunks"] <= CAPACITY, doc["reserve"]
        assert sync_doc(uploader)["reserve"]["evicted"] > 0, "the uploader let go of receipted chunks"

        check_reports(uploader, len(chunks))

        for i, node in enumerate(nodes):  # every node serves the whole file, fetching what it lacks
            got = httpx.get(f"{node.api}/bytes/{reference.hex()}", timeout=120)
            assert got.status_code == 200, (i, got.text[:300])
            assert got.content == data

        # a node at capacity restarts, cleanly then after SIGKILL, keeping what it is responsible for
        # (not node 0: the others' bootnode, whose new port they would not learn)
        k = max(range(1, NODES), key=lambda i: sync_doc(nodes[i])["reserve"]["evicted"])
        node, overlay = nodes[k], overlays[k]
        radius = sync_doc(node)["reserve"]["radius"]
        assert radius == 2, "the node that evicted most is at capacity, its radius at its depth"
        node.stop()
        held, named = stored_addresses(node.data_dir, overlay)
        responsible = {c.address for c in chunks if proximity(overlay, c.address) >= 2}
        assert responsible <= held
        for restart in ("clean", "kill"):
            node.start()
            poll(
                lambda: sync_doc(node)["reserve"]["radius"] == 2 and sync_doc(node)["fully_synced"],
                timeout=60,
            )
            assert sync_doc(node)["reserve"]["radius"] == 2
            if restart == "clean":
                node.stop()
            else:
                node.kill()
            again, named = stored_addresses(node.data_dir, overlay)
            assert responsible <= again, restart
            assert len(named) == len(set(named)), f"{restart}: an evicted chunk was synced back"
        node.start()
        wait_settled(nodes)

        for node in nodes:  # all at once: a node whose peers go away would pull more
            assert node.proc is not None
            node.proc.send_signal(signal.SIGTERM)
        for i, node in enumerate(nodes):
            node.stop()
            held, named = stored_addresses(node.data_dir, overlays[i])
            assert len(named) == len(set(named)), f"node {i}: an evicted chunk was synced back"
            assert len(held) <= CAPACITY, f"node {i} holds {len(held)} chunks"
            mine = {c.address for c in chunks if proximity(overlays[i], c.address) >= 2}
            assert mine <= held, f"node {i} lacks {len(mine - held)} chunks of its neighbourhood"
    finally:
        for node in nodes:
            node.kill()
