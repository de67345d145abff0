"""Every bee-js 12.1.0 call of docs/bee-compat.md's table, made by bee-js against two real nodes.

tests/js/calls.cjs writes at one `swarm node` process and reads at another; this test reads the
table in docs/bee-compat.md and checks each row against what happened: a call marked *works* or
*differs* succeeded, one marked *absent* failed, and what the values say. `streamFiles` runs
only in a browser (bee-js's Node.js build refuses it), so it is made again in headless Chromium
from a page the writer serves; without Chromium its row is not judged. Then the postage refusals
as Bee makes them, uploads charged to their batch, and the error bodies of unknown routes and
wrong methods.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from chunks import bmt_address
from chunks.ethkey import Secp256k1Key, recover_owner
from swarm.testing import NodeProcess, poll
from tests.chromium import CHROMIUM, Chromium, DevToolsError
from tests.test_beejs_vectors import JS_DIR, bee_js_modules, run_bee_js
from tests.test_bzz_api import tar_of

pytestmark = pytest.mark.process

DOC = Path(__file__).resolve().parent.parent / "docs" / "bee-compat.md"
ROW = re.compile(r"^\| `(\w+)` \| (works|differs|absent)\b", re.MULTILINE)
# a directory whose files' types bee-js's table and the node's name alike, so hashDirectory agrees
SITE = {
    "index.html": b"<html><body>home</body></html>",
    "style.css": b"body { color: teal }",
    "img/logo.png": b"\x89PNG\r\n\x1a\n" + bytes(5000),
    "docs/guide/index.html": b"<html>the guide</html>",
}


def table() -> dict[str, str]:
    return dict(ROW.findall(DOC.read_text()))


def test_the_table_names_every_call_the_script_makes_and_no_other() -> None:
    made = set(re.findall(r"await run\('(\w+)'", (JS_DIR / "calls.cjs").read_text()))
    rows = table()
    assert len(rows) >= 57
    assert made == set(rows), f"only in the script: {made - set(rows)}; only in the table: {set(rows) - made}"


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[NodeProcess]]:
    tmp = tmp_path_factory.mktemp("beejs-calls")
    first = NodeProcess(tmp / "a").start()
    nodes = [first, NodeProcess(tmp / "b", peers=[first.p2p]).start()]
    try:
        poll(lambda: all(len(n.sync()["peers"]) == 1 for n in nodes), timeout=60)
        yield nodes
    finally:
        for node in nodes:
            node.stop()


def stream_files_in_chromium(writer: str, reader: str, batch: str, profile: Path) -> dict[str, object]:
    """bee-js's `streamFiles` in a page the writer serves (same origin, so no CORS): its outcome."""
    modules = bee_js_modules()
    bundle = profile.parent / "bee-js.min.js"
    esbuild = [str(modules / ".bin" / "esbuild"), str(JS_DIR / "browser-entry.cjs"), "--bundle"]
    subprocess.run(
        [*esbuild, "--platform=browser", "--minify", f"--outfile={bundle}"],
        check=True,
        capture_output=True,
        timeout=60,
        env={"NODE_PATH": str(modules), "PATH": "/usr/bin:/bin:/usr/local/bin"},
    )
    script = bundle.read_bytes()
    page = b'<html><head><script src="bee-js.min.js"></script></head><body>bee-js</body></html>'
    headers = {
        "swarm-collection": "true",
        "content-type": "application/x-tar",
        "swarm-index-document": "index.html",
    }
    body = tar_of({"index.html": page, "bee-js.min.js": script})
    site = httpx.post(f"{writer}/bzz", content=body, headers=headers, timeout=30).json()["reference"]
    files = "[new File(['<html>streamed</html>'], 'index.html'), new File(['streamed notes'], 'notes.txt')]"
    with Chromium(profile) as browser:
        browser.open(f"{writer}/bzz/{site}/")

        def ask(expression: str) -> object:
            try:
                return browser.evaluate(expression)
            except DevToolsError:  # asked while the page loads: ask again
                return None

        poll(lambda: ask("typeof BeeJs") == "object", timeout=30)
        browser.evaluate(
            f"new BeeJs.Bee(location.origin).streamFiles('{batch}', {files}).then("
            "r => { window.outcome = {ok: true, value: r.reference.toHex()} },"
            "e => { window.outcome = {ok: false, error: String(e.message || e)} })"
        )
        poll(lambda: ask("window.outcome") is not None, timeout=60)
        outcome = browser.evaluate("window.outcome")
    assert isinstance(outcome, dict)
    if outcome["ok"]:  # read back at the other node
        ref = outcome["value"]
        read = [httpx.get(f"{reader}/bzz/{ref}/{path}", timeout=30).text for path in ("", "notes.txt")]
        outcome["value"] = {"reference": ref, "files": read}
    return outcome


def test_bee_js_calls_across_two_nodes_do_what_the_table_says(
    two_nodes: list[NodeProcess], tmp_path: Path
) -> None:
    bee_js_modules()  # skip early without Node.js
    writer, reader = two_nodes
    for path, data in SITE.items():
        (tmp_path / "site" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "site" / path).write_bytes(data)
    (tmp_path / "paths.json").write_text(json.dumps(sorted(SITE)))
    out = run_bee_js("calls.cjs", writer.api, reader.api, str(tmp_path))
    assert out["streamFiles"] == {"ok": False, "error": "Streaming files is not supported in Node.js"}
    del out["streamFiles"]
    if CHROMIUM is not None:
        batch = out["createPostageBatch"]["value"]
        out["streamFiles"] = stream_files_in_chromium(writer.api, reader.api, batch, tmp_path / "profile")
    rows = table()
    wrong = {name: got for name, got in out.items() if (rows[name] in ("works", "differs")) != got["ok"]}
    assert not wrong, wrong
    absent = {name: got["error"] for name, got in out.items() if rows[name] == "absent"}
    assert all(error.endswith("status code 404") for error in absent.values()), absent  # no such route
    # what the values say, beyond "no error"
    assert out["downloadData"]["value"] is True and out["downloadReadableData"]["value"] is True
    assert out["getTopology"]["value"] == {
        "reachability": "Public",
        "networkAvailability": "Available",
        "connected": 1,
    }
    assert out["topUpBatch"]["value"] == "500001000" and out["diluteBatch"]["value"] == 21
    assert out["getPostageBatchBuckets"]["value"] == {"upper": 32, "used": 3}  # the 3 chunks of the bytes
    assert out["createTag"]["value"] == [
        "address",
        "seen",
        "sent",
        "split",
        "startedAt",
        "stored",
        "synced",
        "uid",
    ]
    assert out["getAllTags"]["value"] is True and out["deleteTag"]["value"] is False
    assert out["isReferenceRetrievable"]["value"] is True
    assert out["makeSOCReader"]["value"] == "a single-owner chunk"
    assert out["makeFeedReader"]["value"] == out["uploadData"]["value"]
    # to the reader's neighbourhood, sealed for its key (the one to another neighbourhood, sent
    # just before each, never handed on); pssReceive's is sent in the clear
    assert set(out["pssSubscribe"]["value"]) == {"hello over pss"}
    assert out["pssReceive"]["value"] == "received once"
    assert out["gsocSubscribe"]["value"] == ["first", "second"]
    # files and manifests: written at the writer, every one read back at the reader
    payload_name = {"name": "a.txt", "same": True}
    assert out["downloadFile"]["value"] == {**payload_name, "contentType": "text/plain"}
    assert out["downloadReadableFile"]["value"] == payload_name
    assert out["uploadFiles"]["value"] == {"one.txt": "first file", "two.html": "second file"}
    assert out["uploadCollection"]["value"] == {"b/c.txt": "second", "no/such/path": "sorry"}
    texts = {path: data.decode("utf-8", "replace") for path, data in SITE.items()}
    directory = out["uploadFilesFromDirectory"]["value"]
    assert directory["files"] == texts
    assert out["hashDirectory"]["value"] == directory["reference"]  # computed by bee-js alone
    streamed = out["streamDirectory"]["value"]
    assert streamed["files"] == {**texts, "": texts["index.html"]}  # "" : the index document
    cli = [sys.executable, "-m", "swarm", "upload", str(tmp_path / "site"), "--index-document", "index.html"]
    ours = subprocess.run([*cli, "--api", writer.api], capture_output=True, text=True, timeout=60, check=True)
    assert ours.stdout.strip() == streamed["reference"]  # chunk by chunk over /chunks, the same manifest
    assert out["createFeedManifest"]["value"]["same"] is True  # the feed's update, a file, through /bzz
    # grantee lists: an encrypted list reference (64 bytes) and a history (32); add and revoke
    signer = Secp256k1Key.from_hex("634fb5a872396d9693e5c9f9d7233cfa93f395c093371017ff44aa9ae6564cdd")
    other = Secp256k1Key.from_hex("22" * 32)
    assert out["createGrantees"]["value"] == {"status": 201, "ref": 128, "historyref": 64}
    assert out["getGrantees"]["value"] == [signer.public_key_compressed.hex()]
    assert out["patchGrantees"]["value"] == {"status": 200, "grantees": [other.public_key_compressed.hex()]}
    if "streamFiles" in out:
        assert out["streamFiles"]["value"]["files"] == ["<html>streamed</html>", "streamed notes"]
    # a stamp signed by the writer's key: bee-js verified it; so does chunks.ethkey here
    envelope = out["createEnvelope"]["value"]
    assert envelope["verified"] is True
    ethereum = bytes.fromhex(writer.get("/addresses").json()["ethereum"][2:])
    chunk_address = bytes.fromhex(out["uploadChunk"]["value"])
    batch_id = bytes.fromhex(out["createPostageBatch"]["value"])
    signed = chunk_address + batch_id + bytes.fromhex(envelope["index"] + envelope["timestamp"])
    assert envelope["issuer"] == ethereum.hex()
    assert recover_owner(bytes.fromhex(envelope["signature"]), signed) == ethereum
    assert envelope["index"][:8] == "0000" + chunk_address[:2].hex()  # the chunk's bucket
    # peers: a round trip over the session, then the session closed (Kademlia dials it again)
    assert re.fullmatch(r"\d+(\.\d+)?(ns|µs|ms|s)", out["pingPeer"]["value"]["rtt"]), out["pingPeer"]
    assert out["removePeer"]["value"] == {"message": "OK", "code": 200}
    reader_overlay = reader.sync()["overlay"]

    def removed() -> list[dict[str, object]]:
        return [d for d in writer.sync()["disconnected"] if d["reason"] == "user requested disconnect"]

    poll(lambda: bool(removed()), timeout=10)
    assert removed()[0]["overlay"] == reader_overlay and removed()[0]["by"] == "local"
    poll(lambda: all(len(n.sync()["peers"]) == 1 for n in two_nodes), timeout=60)  # connected again


def test_uploads_are_charged_to_their_batch_as_bee_does(two_nodes: list[NodeProcess]) -> None:
    api = two_nodes[0].api
    made = httpx.post(f"{api}/stamps/1000000000/17", headers={"immutable": "true"}, timeout=10)
    assert made.status_code == 201
    batch = made.json()["batchID"]
    # depth 17: two stamps per bucket; three chunks whose addresses share a bucket fill it
    by_bucket: dict[bytes, list[bytes]] = {}
    for i in range(1_000_000):  # addresses computed here: a few thousand hashes find three
        body = (8).to_bytes(8, "little") + i.to_bytes(8, "little")
        same = by_bucket.setdefault(bmt_address(body[8:], 8)[:2], [])
        same.append(body)
        if len(same) == 3:
            break
    headers = {"swarm-postage-batch-id": batch}
    for body in same[:2]:
        assert httpx.post(f"{api}/chunks", content=body, headers=headers, timeout=10).status_code == 201
    full = httpx.post(f"{api}/chunks", content=same[2], headers=headers, timeout=10)
    assert full.status_code == 402 and full.json()["message"].startswith("batch is overissued")
    again = httpx.post(f"{api}/chunks", content=same[0], headers=headers, timeout=10)
    assert again.status_code == 201  # a chunk stamped before keeps its stamp
    assert httpx.get(f"{api}/stamps/{batch}", timeout=10).json()["utilization"] == 2
    unknown = httpx.post(
        f"{api}/bytes", content=b"x", headers={"swarm-postage-batch-id": "ab" * 32}, timeout=10
    )
    assert unknown.status_code == 404 and "batch with id not found" in unknown.json()["message"]
    bad = httpx.post(f"{api}/bytes", content=b"x", headers={"swarm-postage-batch-id": "xyz"}, timeout=10)
    assert bad.status_code == 400 and "invalid batch id" in bad.json()["message"]
    # the batch survives a restart of its node, with its buckets
    node = two_nodes[0]
    node.stop()
    node.start()
    state = httpx.get(f"{node.api}/stamps/{batch}", timeout=10).json()
    assert state["utilization"] == 2 and state["depth"] == 17 and state["immutableFlag"] is True


def test_unknown_routes_and_wrong_methods_get_bee_error_bodies(two_nodes: list[NodeProcess]) -> None:
    api = two_nodes[1].api
    missing = httpx.get(f"{api}/no/such/route", timeout=10)
    assert missing.status_code == 404 and missing.json() == {
        "code": 404,
        "message": "Not Found: GET /no/such/route",
    }
    wrong = httpx.put(f"{api}/health", timeout=10)
    assert (
        wrong.status_code == 405 and wrong.json()["code"] == 405 and "PUT /health" in wrong.json()["message"]
    )
    assert "GET" in wrong.headers["allow"]
    no_tag = httpx.delete(f"{api}/tags/99999", timeout=10)
    assert no_tag.status_code == 404 and no_tag.json()["code"] == 404
