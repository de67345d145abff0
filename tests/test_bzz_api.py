"""POST and GET /bzz on one node in this process: a file under its name, a tar collection with
index and error documents, Bee's headers, ranges (also streamed), directories, redirects, 404s,
and a feed manifest that follows its feed's latest update."""

from __future__ import annotations

import io
import random
import tarfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import trio

from chunks.ethkey import Secp256k1Key
from chunks.feeds import make_update_v1, topic_from_text
from swarm.api import downloads
from swarm.manifest.paths import content_type_for, feed_manifest
from swarm.manifest.trie import save
from swarm.testing import node_with_client

BIG = random.Random(7).randbytes(300_000)
SITE = {
    "index.html": b'<html><a href="about/">about</a><img src="img/logo.png"></html>',
    "about/index.html": b"<html>about us</html>",
    "img/logo.png": b"\x89PNG\r\n\x1a\n" + bytes(100),
    "404.html": b"<html>not here</html>",
    "big.bin": BIG,
}


def tar_of(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


@asynccontextmanager
async def api(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with node_with_client(tmp_path / "n", retrieve_timeout=2.0) as (_, client):
        yield client


async def upload_site(client: httpx.AsyncClient, **headers: str) -> str:
    answer = await client.post(
        "/bzz",
        content=tar_of(SITE),
        headers={"swarm-collection": "true", "content-type": "application/x-tar", **headers},
    )
    assert answer.status_code == 201, answer.text
    assert answer.headers["swarm-tag"].isdigit()
    reference: str = answer.json()["reference"]
    return reference


async def test_a_file_under_its_name(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with api(tmp_path) as client:
            answer = await client.post(
                "/bzz?name=notes.txt", content=b"hello", headers={"content-type": "text/x-notes"}
            )
            assert answer.status_code == 201
            ref = answer.json()["reference"]
            for url in (f"/bzz/{ref}/", f"/bzz/{ref}/notes.txt"):
                got = await client.get(url)
                assert got.status_code == 200 and got.content == b"hello"
                assert got.headers["content-type"] == "text/x-notes"
                assert got.headers["content-disposition"] == 'inline; filename="notes.txt"'
                assert got.headers["etag"].strip('"') != ref  # the file's reference, not the manifest's
            # no name: the file's reference is its name; no content type: sniffed
            answer = await client.post("/bzz", content=b"<!DOCTYPE html><p>hi</p>")
            got = await client.get(f"/bzz/{answer.json()['reference']}/")
            assert got.headers["content-type"] == "text/html; charset=utf-8"
            name = got.headers["content-disposition"].split('"')[1]
            assert len(name) == 64 and got.headers["etag"] == f'"{name}"'
            bad = await client.post("/bzz?name=/abs", content=b"x")
            assert bad.status_code == 400 and "/abs" in bad.json()["message"]


async def test_swarm_receipts_asks_for_one_or_two_receipts_per_chunk(tmp_path: Path) -> None:
    """``Swarm-Receipts: 1`` (a single-receipt upload) or ``2`` (durable, the default); a lone
    node's own copy is all there is, so both answer with every chunk receipted."""
    with trio.fail_after(30):
        async with api(tmp_path) as client:
            for receipts in ("1", "2"):
                answer = await client.post(
                    f"/bzz?name=r{receipts}.bin", content=BIG, headers={"swarm-receipts": receipts}
                )
                assert answer.status_code == 201
                assert answer.json()["tag"]["without_receipt"] == 0
            bad = await client.post("/bzz?name=x", content=b"x", headers={"swarm-receipts": "two"})
            assert bad.status_code == 400 and "Swarm-Receipts" in bad.json()["message"]


async def test_a_collection_served_as_a_website(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(downloads, "BUFFERED_DOWNLOAD", 64 * 1024)  # big.bin is streamed
    with trio.fail_after(60):
        async with api(tmp_path) as client:
            ref = await upload_site(
                client, **{"swarm-index-document": "index.html", "swarm-error-document": "404.html"}
            )
            for path, data in SITE.items():
                got = await client.get(f"/bzz/{ref}/{path}")
                assert got.status_code == 200 and got.content == data, path
                assert got.headers.get("content-type") == (
                    content_type_for(path) or "application/octet-stream"
                )
                assert got.headers["content-disposition"] == f'inline; filename="{path.rsplit("/", 1)[-1]}"'
            assert (await client.get(f"/bzz/{ref}/")).content == SITE["index.html"]
            assert (await client.get(f"/bzz/{ref}/about/")).content == SITE["about/index.html"]
            redirect = await client.get(f"/bzz/{ref}/about")
            assert redirect.status_code == 308 and redirect.headers["location"] == "about/"
            bare = await client.get(f"/bzz/{ref}")
            assert bare.status_code == 308 and bare.headers["location"].endswith(f"/bzz/{ref}/")
            missing = await client.get(f"/bzz/{ref}/no/such/page")
            assert missing.status_code == 200 and missing.content == SITE["404.html"]  # as Bee
            part = await client.get(f"/bzz/{ref}/big.bin", headers={"range": "bytes=100000-200000"})
            assert part.status_code == 206 and part.content == BIG[100000:200001]
            assert part.headers["content-range"] == f"bytes 100000-200000/{len(BIG)}"
            head = await client.head(f"/bzz/{ref}/big.bin")
            assert head.headers["content-length"] == str(len(BIG))


async def test_what_is_not_there_is_a_json_404(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with api(tmp_path) as client:
            ref = await upload_site(client)  # no index, no error document
            for path in ("", "nothing.html"):
                got = await client.get(f"/bzz/{ref}/{path}")
                assert got.status_code == 404 and got.json()["code"] == 404, path
            bytes_ref = (await client.post("/bytes", content=b"not a manifest" * 10)).json()["reference"]
            got = await client.get(f"/bzz/{bytes_ref}/")
            assert got.status_code == 404 and "manifest" in got.json()["message"]
            empty = await client.post("/bzz", content=tar_of({}), headers={"swarm-collection": "true"})
            assert empty.status_code == 400 and "no files" in empty.json()["message"]
            slash = await client.post(
                "/bzz",
                content=tar_of(SITE),
                headers={"swarm-collection": "true", "swarm-index-document": "a/b"},
            )
            assert slash.status_code == 400
            junk = await client.post("/bzz", content=b"not a tar" * 100, headers={"swarm-collection": "true"})
            assert junk.status_code == 400 and "tar" in junk.json()["message"]


async def test_a_feed_manifest_serves_the_latest_update(tmp_path: Path) -> None:
    key = Secp256k1Key.from_hex("11" * 32)
    topic = topic_from_text("my site")
    with trio.fail_after(60):
        async with api(tmp_path) as client:
            feed = await client.post(f"/feeds/{key.owner.hex()}/{topic.hex()}")
            assert feed.status_code == 201
            feed_ref = feed.json()["reference"]
            assert (await client.get(f"/bzz/{feed_ref}/")).status_code == 404  # no update yet
            for index, text in enumerate([b"version one", b"version two"]):
                site = await client.post(
                    "/bzz?name=index.html", content=text, headers={"content-type": "text/html"}
                )
                update = make_update_v1(
                    key, topic, index, bytes.fromhex(site.json()["reference"]), 1_700_000_000
                )
                soc_url = f"/soc/{key.owner.hex()}/{update.id.hex()}?sig={update.signature.hex()}"
                posted = await client.post(soc_url, content=update.wrapped)
                assert posted.status_code == 201
                got = await client.get(f"/bzz/{feed_ref}/")
                assert got.status_code == 200 and got.content == text, got.text
                assert got.headers["swarm-feed-index"] == index.to_bytes(8, "big").hex()
                assert "etag" not in got.headers


async def test_bzz_and_feed_manifest_uploads_are_charged_to_their_batch(tmp_path: Path) -> None:
    async def used(client: httpx.AsyncClient, batch: str) -> tuple[int, int]:
        buckets = (await client.get(f"/stamps/{batch}/buckets")).json()["buckets"]
        state = (await client.get(f"/stamps/{batch}")).json()
        return state["utilization"], sum(bucket["collisions"] for bucket in buckets)

    with trio.fail_after(60):
        async with api(tmp_path) as client:
            made = await client.post("/stamps/1000000000/17")
            batch = made.json()["batchID"]
            assert await used(client, batch) == (0, 0)
            reference = await upload_site(client, **{"swarm-postage-batch-id": batch})
            utilization, stamps = await used(client, batch)
            # every chunk of the files (big.bin: 74 chunks) and of the manifest, once each
            assert utilization >= 1 and stamps >= 74 + len(SITE)
            assert (await client.get(f"/bzz/{reference}/big.bin")).content == BIG
            owner, topic = "ab" * 20, "cd" * 32
            feed = await client.post(f"/feeds/{owner}/{topic}", headers={"swarm-postage-batch-id": batch})
            assert feed.status_code == 201
            nodes = save(feed_manifest(bytes.fromhex(owner), bytes.fromhex(topic))).chunks
            assert (await used(client, batch))[1] == stamps + len(nodes) == stamps + 2  # its two nodes
            unknown = await client.post(
                f"/feeds/{owner}/{topic}", headers={"swarm-postage-batch-id": "ef" * 32}
            )
            assert unknown.status_code == 404 and "batch with id not found" in unknown.json()["message"]
