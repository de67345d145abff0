"""Every bee-js 12.1.0 call of docs/bee-compat.md's table, made by bee-js against two real nodes.

tests/js/calls.cjs writes at one `swarm node` process and reads at another; this test reads the
table in docs/bee-compat.md and checks each row against what happened: a call marked *works* or
*differs* succeeded, one marked *absent* failed. Rows marked *other branch* (issue 27 items 1-3,
files and manifests) are recorded, not judged. Then the postage refusals as Bee makes them, and
the error bodies of unknown routes and wrong methods.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from chunks import bmt_address
from swarm.testing import NodeProcess, poll
from tests.test_beejs_vectors import JS_DIR, bee_js_modules, run_bee_js

pytestmark = pytest.mark.process

DOC = Path(__file__).resolve().parent.parent / "docs" / "bee-compat.md"
ROW = re.compile(r"^\| `(\w+)` \| (works|differs|absent|other branch)\b", re.MULTILINE)


def table() -> dict[str, str]:
    return dict(ROW.findall(DOC.read_text()))


def test_the_table_names_every_call_the_script_makes() -> None:
    made = set(re.findall(r"await run\('(\w+)'", (JS_DIR / "calls.cjs").read_text()))
    rows = table()
    assert len(rows) >= 57
    assert made <= set(rows), f"calls made but not in the table: {sorted(made - set(rows))}"


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


def test_bee_js_calls_across_two_nodes_do_what_the_table_says(two_nodes: list[NodeProcess]) -> None:
    bee_js_modules()  # skip early without Node.js
    writer, reader = two_nodes
    out = run_bee_js("calls.cjs", writer.api, reader.api)
    rows = table()
    wrong = {
        name: outcome
        for name, outcome in out.items()
        if (rows[name] in ("works", "differs")) != outcome["ok"] and rows[name] != "other branch"
    }
    assert not wrong, wrong
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
    assert out["pssSubscribe"]["value"] == "hello over pss" and out["pssReceive"]["value"] == "received once"
    assert out["gsocSubscribe"]["value"] == ["first", "second"]


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
