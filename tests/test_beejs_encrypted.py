"""bee-js 12.1.0 uploads with `{encrypt: true}` at one `swarm node` process and downloads at
another (tests/js/encrypted.cjs): 64-byte references, and the reader decrypts what it retrieved,
bytes (`uploadData`) and a file under an encrypted manifest (`uploadFile`); and a reference
uploaded with `{act: true}` under a grantee list naming the reader's node, which decrypts it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from swarm.testing import NodeProcess, poll
from tests.test_beejs_vectors import run_bee_js

pytestmark = pytest.mark.process


@pytest.fixture
def two_nodes(tmp_path: Path) -> Iterator[list[NodeProcess]]:
    first = NodeProcess(tmp_path / "a").start()
    nodes = [first]
    try:
        nodes.append(NodeProcess(tmp_path / "b", peers=[first.p2p]).start())
        poll(lambda: all(len(n.sync()["peers"]) == 1 for n in nodes), timeout=60)
        yield nodes
    finally:
        for node in nodes:
            node.stop()


def test_bee_js_encrypted_upload_is_read_at_another_node(two_nodes: list[NodeProcess]) -> None:
    writer, reader = two_nodes
    out = run_bee_js("encrypted.cjs", writer.api, reader.api)
    act = out.pop("act")
    assert act["history"] is True and act["same"] is True  # granted: the reader's node decrypts it
    assert act["withoutAct"] is not True  # without the ACT headers: not the secret
    assert act["file"] == {"name": "shared.txt", "text": "a file for the reader"}  # /bzz under ACT
    file = out.pop("file")
    assert len(file["reference"]) == 128
    assert file | {"reference": ""} == {
        "reference": "",
        "name": "notes.txt",
        "contentType": "text/plain",
        "text": "encrypted notes",
    }
    assert set(out) == {"5", "10000", str(70 * 4096 + 17)}
    for size, got in out.items():
        assert got["same"] is True, size
        reference = bytes.fromhex(got["reference"])
        assert len(reference) == 64
        # the reader holds (or fetched) the encrypted root; as a chunk it does not say the size
        raw = httpx.get(f"{reader.api}/chunks/{reference[:32].hex()}", timeout=30)
        assert raw.status_code == 200 and len(raw.content) == 8 + 4096
        assert int.from_bytes(raw.content[:8], "little") != int(size)
