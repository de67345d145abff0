"""Single-owner chunks and feeds across real `swarm node` processes.

- The real bee-js client (tests/js/nodes.cjs, where Node.js is installed) checks a node, uploads and
  downloads bytes and a chunk, writes feed updates with makeFeedWriter at one node and reads the
  latest with makeFeedReader at another.
- `swarm feed` writes updates at node 0 of a small swarm; every other node reads the latest one, and
  the update chunks end up in their neighbourhoods, as content chunks do.
- Forged single-owner chunks are refused on upload with a message.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from chunks.ethkey import Secp256k1Key
from chunks.feeds import topic_from_text, update_address
from chunks.soc import make_soc
from pot import proximity
from swarm.testing import NodeProcess, poll, random_chunks
from tests.test_beejs_vectors import bee_js_modules, run_bee_js

pytestmark = pytest.mark.process


def swarm_cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "swarm", *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def start_swarm(tmp_path: Path, count: int) -> list[NodeProcess]:
    first = NodeProcess(tmp_path / "n0").start()
    nodes = [first] + [NodeProcess(tmp_path / f"n{i}", peers=[first.p2p]).start() for i in range(1, count)]
    poll(lambda: all(len(n.sync()["peers"]) == count - 1 for n in nodes), timeout=60)
    return nodes


def test_bee_js_writes_a_feed_at_one_node_and_reads_it_at_another(tmp_path: Path) -> None:
    bee_js_modules()  # skip early without Node.js
    nodes = start_swarm(tmp_path, 2)
    try:
        key = Secp256k1Key.generate()
        references = [chunk.address.hex() for chunk in random_chunks(3, seed=61)]
        chunk = random_chunks(1, seed=62, size=100)[0]
        data = bytes(range(256)) * 40  # 10 KiB: three chunks
        request = {
            "key": key.private_bytes().hex(),
            "topic": "bee-js against swarmpy",
            "references": references,
            "bytes": data.hex(),
            "chunk": chunk.data.hex(),
            "soc_id": "ab" * 32,
            "soc_payload": b"a single-owner chunk, read at the other node at once".hex(),
        }
        (tmp_path / "input.json").write_text(json.dumps(request))
        out = run_bee_js("nodes.cjs", nodes[0].api, nodes[1].api, str(tmp_path / "input.json"), timeout=120)
        assert out["connected"] and out["health"]["status"] == "ok"
        assert out["addresses"] == nodes[0].overlay
        assert bytes.fromhex(out["bytes_back"]) == data
        assert out["chunk_reference"] == chunk.address.hex()
        assert out["chunk_back"] == chunk.data.hex()
        assert out["soc_payload"] == request["soc_payload"]
        # the reader saw each update as the latest right after it was written: no waiting
        assert out["each_latest"] == ["0", "1", "2"]
        assert out["latest"] == {"index": "2", "reference": references[-1]}
    finally:
        for node in nodes:
            node.stop()


def test_a_feed_updated_at_one_node_is_read_everywhere_and_lands_in_its_neighbourhood(
    tmp_path: Path,
) -> None:
    nodes = start_swarm(tmp_path, 3)
    try:
        key_file = tmp_path / "feed.key"
        owner = swarm_cli("feed", "key", "new", "--out", str(key_file)).strip()
        assert owner.startswith("0x") and len(owner) == 42
        contents = [f"version {i} of the page\n".encode() * 50 for i in range(3)]
        for i, content in enumerate(contents):
            path = tmp_path / f"page-{i}.txt"
            path.write_bytes(content)
            api = nodes[0].api
            key = str(key_file)
            line = swarm_cli("feed", "update", "--key", key, "pages", str(path), "--api", api)
            feed = f"{owner[2:].lower()}/{topic_from_text('pages').hex()}"
            address = update_address(bytes.fromhex(owner[2:]), topic_from_text("pages"), i).hex()
            assert re.fullmatch(rf"update {i} of feed {feed}: {address} \(points to [0-9a-f]{{64}}\)\n", line)
        for node in nodes[1:]:
            got = swarm_cli("feed", "get", owner, "pages", "--api", node.api)
            assert got.encode() == contents[-1]
        history = json.loads(swarm_cli("feed", "history", owner, "pages", "--json", "--api", nodes[2].api))
        assert [row["index"] for row in history] == [0, 1, 2] and all("reference" in row for row in history)
        owner_bytes, topic = bytes.fromhex(owner[2:]), topic_from_text("pages")
        updates = [update_address(owner_bytes, topic, i) for i in range(3)]
        # `feed publish` (live) prints the same format as `feed update`
        line = swarm_cli("feed", "publish", "pages", "live words", "--key", key, "--api", nodes[0].api)
        address = update_address(owner_bytes, topic, 3).hex()
        assert re.fullmatch(rf"update 3 of feed {feed}: {address} \(pushed to \d+ peers\)\n", line), line

        def in_neighbourhoods() -> bool:
            for node in nodes:
                doc = node.sync()
                overlay = bytes.fromhex(doc["overlay"])
                for address in updates:
                    responsible = proximity(overlay, address) >= doc["depth"]
                    held = httpx.head(f"{node.api}/chunks/{address.hex()}").status_code == 200  # local only
                    if responsible and not held:
                        return False
            return True

        poll(in_neighbourhoods, timeout=60)
    finally:
        for node in nodes:
            node.stop()


def test_forged_single_owner_chunks_are_refused_on_upload(tmp_path: Path) -> None:
    """Each forgery is a 4xx naming the problem; nothing is stored. (POST /chunks carries no
    address, so data whose signature recovers *some* owner is that owner's valid SOC; a forgery
    shows where the owner or the id is given: POST /soc.)"""
    with NodeProcess(tmp_path / "n") as node:
        key, other = Secp256k1Key.generate(), Secp256k1Key.generate()
        soc = make_soc(key, bytes(32), b"x" * 4096)  # over 4104 bytes: POST /chunks takes it as a SOC
        bad_v = soc.data[: 32 + 64] + bytes([31]) + soc.data[32 + 65 :]
        response = httpx.post(f"{node.api}/chunks", content=bad_v, timeout=10)
        assert response.status_code == 400 and "invalid" in response.json()["message"]
        response = httpx.post(f"{node.api}/chunks", content=soc.data + b"!", timeout=10)
        assert response.status_code == 413 and "longer than" in response.json()["message"]

        def post_soc(owner: bytes, id: bytes, sig: bytes, body: bytes) -> httpx.Response:
            url = f"{node.api}/soc/{owner.hex()}/{id.hex()}"
            return httpx.post(url, params={"sig": sig.hex()}, content=body, timeout=10)

        forgeries = {
            "another owner's address": post_soc(other.owner, soc.id, soc.signature, soc.wrapped),
            "another id": post_soc(key.owner, b"\x01" * 32, soc.signature, soc.wrapped),
            "a mangled signature": post_soc(key.owner, soc.id, bytes(64) + b"\x1b", soc.wrapped),
            "too short": post_soc(key.owner, soc.id, soc.signature, b"abc"),
        }
        for name, response in forgeries.items():
            assert 400 <= response.status_code < 500 and response.json()["message"], name
        assert httpx.head(f"{node.api}/chunks/{soc.address.hex()}").status_code == 404, "nothing stored"
        assert post_soc(key.owner, soc.id, soc.signature, soc.wrapped).status_code == 201
        assert httpx.head(f"{node.api}/chunks/{soc.address.hex()}").status_code == 200
