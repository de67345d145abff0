"""The Bee-shaped HTTP routes over an in-memory fake of their backend Protocol.

The HTTP layer alone: chunks, SOCs and feeds in and out, Bee's headers and error bodies, and
the status documents checked field by field the way bee-js 12.1.0 parses them. The same routes
driven by the real bee-js client against a node are the node's tests.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.applications import Starlette

from chunks.chunk import Chunk
from chunks.ethkey import Secp256k1Key
from chunks.feeds import make_update_v1, make_update_v2, topic_from_text, update_id
from chunks.soc import make_soc, validate_soc
from swarm.api.bee import bee_routes
from swarm.api.bee_types import BeeNodeInfo, BeePeer, BeeStatus
from swarm.files.chunker import split_bytes
from swarm.net.retrieval import ChunkUnavailable

KEY = Secp256k1Key.from_hex("33" * 32)
NODE_KEY = Secp256k1Key.from_hex("44" * 32)
TOPIC = topic_from_text("bee api test")
BEE_UPLOAD_HEADERS = {
    "swarm-postage-batch-id": "ab" * 32,
    "swarm-tag": "12",
    "swarm-pin": "true",
    "swarm-deferred-upload": "false",
    "swarm-encrypt": "false",
    "swarm-redundancy-level": "2",
    "swarm-act": "false",
    "content-type": "application/octet-stream",
}


class FakeNode:
    """The BeeBackend Protocol over a dict; every stored chunk is verified (a route bug shows)."""

    def __init__(self) -> None:
        self.chunks: dict[bytes, Chunk] = {}
        self.ready = True
        self.gets = 0
        self.receipts: list[int] = []  # what each upload asked for (Swarm-Receipts)

    async def get_chunk(self, address: bytes) -> Chunk:
        self.gets += 1
        chunk = self.chunks.get(address)
        if chunk is None:
            raise ChunkUnavailable(address, "no peer has it")
        return chunk

    def has_chunk(self, address: bytes) -> bool:
        return address in self.chunks

    async def put_chunks(self, chunks: list[Chunk], *, deferred: bool = False, receipts: int = 2) -> None:
        self.receipts.append(receipts)
        for chunk in chunks:
            chunk.verify()
            self.chunks[chunk.address] = chunk

    def node_info(self) -> BeeNodeInfo:
        return BeeNodeInfo(
            overlay=b"\x0a" * 32,
            underlays=["tcp://127.0.0.1:1634"],
            ethereum=NODE_KEY.owner,
            public_key=NODE_KEY.public_key_compressed,
            extras={"networkId": 7},
        )

    def status(self) -> BeeStatus:
        return BeeStatus(
            reserve_size=10,
            reserve_size_within_radius=8,
            pullsync_rate=1.5,
            storage_radius=3,
            connected_peers=4,
            neighborhood_size=2,
            extras={"fullySynced": True},
        )

    def peers(self) -> list[BeePeer]:
        return [BeePeer(b"\x01" * 32), BeePeer(b"\x02" * 32, full_node=False)]

    def is_ready(self) -> bool:
        return self.ready


@pytest.fixture
def node() -> FakeNode:
    return FakeNode()


@pytest.fixture
async def client(node: FakeNode) -> AsyncIterator[httpx.AsyncClient]:
    app = Starlette(routes=bee_routes(node, probe_timeout=5.0))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://node") as http:
        yield http


def assert_bee_error(response: httpx.Response, status: int, fragment: str) -> None:
    assert response.status_code == status
    body = response.json()
    assert body["code"] == status and fragment in body["message"]


async def publish(node: FakeNode, *socs: object) -> None:
    await node.put_chunks([Chunk.from_soc(s) for s in socs])  # type: ignore[arg-type]


# -- /chunks ----------------------------------------------------------------------------------------


async def test_post_and_get_a_content_chunk_with_bees_upload_headers(
    client: httpx.AsyncClient, node: FakeNode
) -> None:
    chunk = Chunk.from_payload(b"hello bee")
    response = await client.post("/chunks", content=chunk.data, headers=BEE_UPLOAD_HEADERS)
    assert response.status_code == 201 and response.json() == {"reference": chunk.address.hex()}
    assert node.chunks[chunk.address] == chunk
    got = await client.get(f"/chunks/{chunk.address.hex()}")
    assert got.status_code == 200 and got.content == chunk.data
    assert (await client.head(f"/chunks/{chunk.address.hex()}")).status_code == 200
    assert (await client.head(f"/chunks/{'00' * 32}")).status_code == 404


async def test_post_a_full_soc_and_get_its_raw_bytes(client: httpx.AsyncClient, node: FakeNode) -> None:
    soc = make_soc(KEY, os.urandom(32), os.urandom(4096))  # 4201 bytes: only a SOC is that long
    response = await client.post("/chunks", content=soc.data, headers=BEE_UPLOAD_HEADERS)
    assert response.status_code == 201 and response.json() == {"reference": soc.address.hex()}
    got = await client.get(f"/chunks/{soc.address.hex()}")
    assert got.content == soc.data  # id || signature || span || payload, as bee-js parses it


async def test_post_chunks_refusals(client: httpx.AsyncClient, node: FakeNode) -> None:
    assert_bee_error(await client.post("/chunks", content=b"1234567"), 400, "insufficient data length")
    assert_bee_error(await client.post("/chunks", content=bytes(4202)), 413, "payload too large")
    soc = make_soc(KEY, os.urandom(32), os.urandom(4096))
    bad_v = soc.data[:96] + b"\x05" + soc.data[97:]
    assert_bee_error(await client.post("/chunks", content=bad_v), 400, "v is 5")
    assert node.chunks == {}


async def test_get_chunk_errors(client: httpx.AsyncClient) -> None:
    assert_bee_error(await client.get(f"/chunks/{'ab' * 32}"), 404, "no peer has it")
    assert_bee_error(await client.get("/chunks/xyz"), 400, "not hexadecimal")
    assert_bee_error(await client.get("/chunks/abcd"), 400, "32 bytes")


# -- /soc -------------------------------------------------------------------------------------------


async def test_post_soc_as_bee_js_does(client: httpx.AsyncClient, node: FakeNode) -> None:
    soc = make_soc(KEY, os.urandom(32), b"soc payload")
    path = f"/soc/{KEY.owner.hex()}/{soc.id.hex()}"
    response = await client.post(
        path, params={"sig": soc.signature.hex()}, content=soc.wrapped, headers=BEE_UPLOAD_HEADERS
    )
    assert response.status_code == 201 and response.json() == {"reference": soc.address.hex()}
    assert validate_soc(soc.address, node.chunks[soc.address].data) == soc
    got = await client.get(path)
    assert got.status_code == 200 and got.content == b"soc payload"
    assert got.headers["swarm-soc-signature"] == soc.signature.hex()
    assert "swarm-soc-signature" in got.headers["access-control-expose-headers"]
    root = await client.get(path, headers={"swarm-only-root-chunk": "true"})
    assert root.content == soc.wrapped
    # Swarm-Receipts: 1 reaches the node (one storer's receipt); durable (2) otherwise; 3 is a 400
    single = make_soc(KEY, os.urandom(32), b"one receipt")
    path = f"/soc/{KEY.owner.hex()}/{single.id.hex()}"
    params = {"sig": single.signature.hex()}
    for header, status in (("1", 201), ("3", 400)):
        headers = {**BEE_UPLOAD_HEADERS, "swarm-receipts": header}
        answer = await client.post(path, params=params, content=single.wrapped, headers=headers)
        assert answer.status_code == status, answer.text
    assert node.receipts == [2, 1]


async def test_forged_socs_are_refused_with_a_message(client: httpx.AsyncClient, node: FakeNode) -> None:
    soc = make_soc(KEY, os.urandom(32), b"payload")
    other_owner = Secp256k1Key.generate().owner.hex()
    good_path = f"/soc/{KEY.owner.hex()}/{soc.id.hex()}"
    sig = {"sig": soc.signature.hex()}
    cases = [
        (f"/soc/{other_owner}/{soc.id.hex()}", sig, soc.wrapped, 401, "signature is by owner"),
        (good_path, sig, soc.wrapped[:-1] + b"X", 401, "signature is by owner"),
        (good_path, {"sig": soc.signature.hex()[:-2] + "00"}, soc.wrapped, 401, "v is 0"),
        (good_path, {"sig": "abcd"}, soc.wrapped, 400, "sig must be 65 bytes"),
        (good_path, {}, soc.wrapped, 400, "sig must be 65 bytes"),
        (f"/soc/{KEY.owner.hex()}/abcd", sig, soc.wrapped, 400, "id must be 32 bytes"),
        (f"/soc/xx/{soc.id.hex()}", sig, soc.wrapped, 400, "owner is not hexadecimal"),
        (good_path, sig, b"1234", 400, "short chunk data"),
        (good_path, sig, bytes(4105), 413, "payload too large"),
    ]
    for path, params, body, status, fragment in cases:
        assert_bee_error(await client.post(path, params=params, content=body), status, fragment)
    assert node.chunks == {}
    assert_bee_error(await client.get(good_path), 404, "no peer has it")


# -- /feeds -----------------------------------------------------------------------------------------


async def test_a_feed_without_updates_is_a_404_not_a_500(client: httpx.AsyncClient) -> None:
    response = await client.get(f"/feeds/{KEY.owner.hex()}/{TOPIC.hex()}")
    assert_bee_error(response, 404, "no update found")


async def test_latest_v1_update_resolves_its_reference(client: httpx.AsyncClient, node: FakeNode) -> None:
    contents = [Chunk.from_payload(f"version {i}".encode()) for i in range(3)]
    await node.put_chunks(contents)
    await publish(node, *(make_update_v1(KEY, TOPIC, i, c.address, 1000 + i) for i, c in enumerate(contents)))
    response = await client.get(f"/feeds/{KEY.owner.hex()}/{TOPIC.hex()}", params={"type": "sequence"})
    assert response.status_code == 200 and response.content == b"version 2"
    assert response.headers["swarm-feed-index"] == "0000000000000002"
    assert response.headers["swarm-feed-index-next"] == "0000000000000003"
    assert response.headers["swarm-feed-resolved-version"] == "v1"
    latest = make_update_v1(KEY, TOPIC, 2, contents[2].address, 1002)
    assert response.headers["swarm-soc-signature"] == latest.signature.hex()
    exposed = response.headers["access-control-expose-headers"]
    assert "swarm-feed-index" in exposed and "swarm-feed-index-next" in exposed


async def test_feed_queries_index_after_at(client: httpx.AsyncClient, node: FakeNode) -> None:
    contents = [Chunk.from_payload(f"v{i}".encode()) for i in range(5)]
    await node.put_chunks(contents)
    await publish(node, *(make_update_v1(KEY, TOPIC, i, c.address, 100 * i) for i, c in enumerate(contents)))
    path = f"/feeds/{KEY.owner.hex()}/{TOPIC.hex()}"
    by_index = await client.get(path, params={"index": "1"})
    assert by_index.content == b"v1" and by_index.headers["swarm-feed-index-next"] == "0000000000000002"
    assert_bee_error(await client.get(path, params={"index": "5"}), 404, "feed update 5 not found")
    at = await client.get(path, params={"at": "250"})
    assert at.content == b"v2" and at.headers["swarm-feed-index"] == "0000000000000002"
    assert_bee_error(await client.get(path, params={"at": "250", "after": "3"}), 404, "no update found")
    after = await client.get(path, params={"after": "3"})
    assert after.headers["swarm-feed-index"] == "0000000000000004"
    assert_bee_error(await client.get(path, params={"after": "9"}), 404, "no update found")
    for bad in ("-1", "²", "1.0", str(2**64)):
        assert_bee_error(await client.get(path, params={"index": bad}), 400, "index must be an integer")


async def test_v2_updates_inline_and_tree_root(client: httpx.AsyncClient, node: FakeNode) -> None:
    big = os.urandom(10_000)
    root, chunks = split_bytes(big)
    await node.put_chunks(chunks)
    root_chunk = node.chunks[root]
    await publish(
        node,
        make_update_v2(KEY, TOPIC, 0, b"small payload"),
        make_update_v2(KEY, TOPIC, 1, root_chunk.payload, span=root_chunk.span),
    )
    path = f"/feeds/{KEY.owner.hex()}/{TOPIC.hex()}"
    first = await client.get(path, params={"index": "0"})
    assert first.content == b"small payload" and first.headers["swarm-feed-resolved-version"] == "v2"
    latest = await client.get(path)
    assert latest.content == big and latest.headers["swarm-feed-index"] == "0000000000000001"
    # bee-js probeFeed sends Swarm-Only-Root-Chunk as a query parameter
    probe = await client.get(path, params={"Swarm-Only-Root-Chunk": "true"})
    assert probe.content == root_chunk.data
    assert probe.headers["swarm-feed-index-next"] == "0000000000000002"


async def test_a_forged_feed_update_is_a_404(client: httpx.AsyncClient, node: FakeNode) -> None:
    forged = make_update_v2(Secp256k1Key.generate(), TOPIC, 0, b"not yours")
    address = make_update_v2(KEY, TOPIC, 0, b"x").address
    node.chunks[address] = Chunk(address, forged.data)  # a backend that failed to verify
    response = await client.get(f"/feeds/{KEY.owner.hex()}/{TOPIC.hex()}")
    assert_bee_error(response, 404, "lookup at failed")
    assert update_id(TOPIC, 0) == forged.id


# -- node status ------------------------------------------------------------------------------------


def as_bee_js(body: dict[str, object], fields: dict[str, type]) -> None:
    """bee-js's Types.asString / asNumber / asBoolean on each field it reads."""
    for name, kind in fields.items():
        assert name in body, f"bee-js reads {name!r}"
        value = body[name]
        if kind is float:
            assert isinstance(value, int | float) and not isinstance(value, bool), name
        else:
            assert isinstance(value, kind), name


async def test_health_and_readiness(client: httpx.AsyncClient, node: FakeNode) -> None:
    health = (await client.get("/health")).json()
    as_bee_js(health, {"status": str, "version": str, "apiVersion": str})
    assert health["status"] == "ok" and health["apiVersion"].split(".")[0] == "7"  # bee-js 12.1.0: 7.3.0
    assert health["swarmpy"] == {"overlay": "0a" * 32}
    ready = await client.get("/readiness")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    node.ready = False
    not_ready = await client.get("/readiness")
    assert not_ready.status_code == 400 and not_ready.json()["status"] == "notReady"


async def test_node_addresses_peers(client: httpx.AsyncClient) -> None:
    assert (await client.get("/node")).json() == {
        "beeMode": "full",
        "chequebookEnabled": False,
        "swapEnabled": False,
    }
    addresses = (await client.get("/addresses")).json()
    as_bee_js(
        addresses, {"overlay": str, "underlay": list, "ethereum": str, "publicKey": str, "pssPublicKey": str}
    )
    assert (
        addresses["ethereum"].lower() == "0x" + NODE_KEY.owner.hex()
        and addresses["ethereum"] != addresses["ethereum"].lower()
    )
    assert bytes.fromhex(addresses["publicKey"]) == NODE_KEY.public_key_compressed
    assert addresses["pssPublicKey"] == addresses["publicKey"]
    assert addresses["swarmpy"] == {"networkId": 7}
    peers = (await client.get("/peers")).json()
    assert peers == {
        "peers": [{"address": "01" * 32, "fullNode": True}, {"address": "02" * 32, "fullNode": False}]
    }


async def test_status_has_every_field_bee_js_requires(client: httpx.AsyncClient) -> None:
    status = (await client.get("/status")).json()
    numbers = [
        "proximity", "reserveSize", "reserveSizeWithinRadius", "pullsyncRate", "storageRadius",
        "connectedPeers", "neighborhoodSize", "batchCommitment", "lastSyncedBlock", "committedDepth",
    ]  # fmt: skip
    as_bee_js(
        status,
        {"overlay": str, "beeMode": str, "isReachable": bool, "isWarmingUp": bool}
        | dict.fromkeys(numbers, float),
    )
    assert (
        status["reserveSize"],
        status["storageRadius"],
        status["committedDepth"],
        status["pullsyncRate"],
    ) == (10, 3, 3, 1.5)
    assert status["swarmpy"] == {"fullySynced": True}
