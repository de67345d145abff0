"""POST /bytes and /bzz with `Swarm-Encrypt: true`, GET /bytes/{128 hex} and /bzz/{128 hex}/: a
node (in this process, served on loopback) stores encrypted files and manifests as Bee does and
reads them back, whole, by range and streamed after the status line; a missing or unknown chunk
is a 404, a bad reference a 400."""

from __future__ import annotations

import random
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import httpx
import pytest
import trio

from chunks import CHUNK_SIZE, Chunk
from swarm.api import downloads
from swarm.files.encryption import open_encrypted
from swarm.node import Node
from swarm.testing import node_with_client
from tests.test_bzz_api import tar_of

DATA = random.Random(11).randbytes(600_000)  # 147 data chunks: root -> 3 intermediates (64 refs each)
ENCRYPT = {"swarm-encrypt": "true"}


def api(data_dir: Path) -> AbstractAsyncContextManager[tuple[Node, httpx.AsyncClient]]:
    return node_with_client(data_dir, retrieve_timeout=1.0)


async def test_encrypted_upload_and_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with trio.fail_after(60):
        async with api(tmp_path / "a") as (node, client):
            posted = await client.post("/bytes", content=DATA, headers=ENCRYPT)
            assert posted.status_code == 201, posted.text
            body = posted.json()
            ref = bytes.fromhex(body["reference"])
            assert len(ref) == 64 and body["size"] == len(DATA)
            assert body["chunks"] == 147 + 3 + 1
            # stored encrypted: the root chunk is a full chunk that does not hold the data
            root = await node.retrieval.get(ref[:32])
            assert len(root.data) == 8 + CHUNK_SIZE and DATA[:64] not in root.data
            assert open_encrypted(root, ref).span == len(DATA)

            url = f"/bytes/{ref.hex()}"
            got = await client.get(url)
            assert got.status_code == 200 and got.content == DATA
            assert got.headers["etag"] == f'"{ref.hex()}"'
            part = await client.get(url, headers={"range": "bytes=300000-400000"})
            assert part.status_code == 206 and part.content == DATA[300000:400001]
            head = await client.head(url)
            assert head.headers["content-length"] == str(len(DATA))

            monkeypatch.setattr(downloads, "BUFFERED_DOWNLOAD", 64 * 1024)  # the streamed path
            streamed = await client.get(url)
            assert streamed.status_code == 200 and streamed.content == DATA

            plain = (await client.post("/bytes", content=DATA)).json()["reference"]
            assert len(plain) == 64  # without the header: a plain 32-byte reference
            assert (await client.post("/bytes", content=b"", headers=ENCRYPT)).status_code == 201


async def test_unknown_and_malformed_encrypted_references(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with api(tmp_path / "a") as (_, client):
            ref = bytes.fromhex(
                (await client.post("/bytes", content=b"secret", headers=ENCRYPT)).json()["reference"]
            )
            assert (await client.get(f"/bytes/{ref.hex()}")).content == b"secret"

            missing = await client.get(f"/bytes/{'ab' * 64}")
            assert missing.status_code == 404 and missing.json()["code"] == 404

            bad = await client.get(f"/bytes/{'ab' * 40}")
            assert bad.status_code == 400 and "80 hex characters" in bad.json()["message"]

            # the right chunk with a wrong key decrypts to garbage: refused, never served
            wrong = await client.get(f"/bytes/{ref[:32].hex()}{'00' * 32}")
            assert wrong.status_code in (404, 413, 502) and wrong.content != b"secret"  # 413: garbage span

            # the encrypted chunk itself is an ordinary chunk, served as stored
            raw = await client.get(f"/chunks/{ref[:32].hex()}")
            assert raw.status_code == 200 and Chunk(ref[:32], raw.content).span != len(b"secret")


async def test_encrypted_bzz_file_and_site(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with api(tmp_path / "a") as (_, client):
            one = await client.post(
                "/bzz?name=notes.txt",
                content=b"secret notes",
                headers={**ENCRYPT, "content-type": "text/plain"},
            )
            assert one.status_code == 201, one.text
            ref = one.json()["reference"]
            assert len(ref) == 128
            got = await client.get(f"/bzz/{ref}/")
            assert got.status_code == 200 and got.content == b"secret notes"
            assert got.headers["content-type"] == "text/plain"
            assert (await client.get(f"/bzz/{ref}/notes.txt")).content == b"secret notes"
            # the manifest's root node is stored encrypted: its chunk shows no path
            raw = await client.get(f"/chunks/{ref[:64]}")
            assert raw.status_code == 200 and b"notes.txt" not in raw.content

            site = {"index.html": b"<html>home</html>", "docs/a.txt": b"page a" * 2000}
            made = await client.post(
                "/bzz",
                content=tar_of(site),
                headers={**ENCRYPT, "swarm-collection": "true", "swarm-index-document": "index.html"},
            )
            assert made.status_code == 201, made.text
            sref = made.json()["reference"]
            assert len(sref) == 128
            assert (await client.get(f"/bzz/{sref}/")).content == site["index.html"]
            assert (await client.get(f"/bzz/{sref}/docs/a.txt")).content == site["docs/a.txt"]
            assert (await client.get(f"/bzz/{sref}/nothing")).status_code == 404
