"""GET/HEAD /bytes and /chunks of a node's HTTP API: ranges, sizes, and what a client sees when a
chunk is missing or the client goes away.

Nodes run in this process (the API served by hypercorn on loopback) so that the log records can
be read with caplog; BUFFERED_DOWNLOAD is lowered so that a file of a few MB takes the streamed
path that files over 32 MiB take in production.
"""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import trio

from chunks import Chunk
from swarm.api import downloads
from swarm.files.chunker import split_bytes
from swarm.node import Node
from swarm.testing import node_with_client, preload, wait_for

DATA = random.Random(5).randbytes(1_100_000)  # root -> 3 intermediate chunks -> 269 data chunks
REFERENCE, CHUNKS = split_bytes(DATA)
INTERMEDIATES = [c for c in CHUNKS if c.span > 4096 and c.address != REFERENCE]
LEAVES = [c for c in CHUNKS if c.span <= 4096]


@asynccontextmanager
async def node_holding(data_dir: Path, chunks: list[Chunk]) -> AsyncIterator[tuple[Node, httpx.AsyncClient]]:
    """A node (no peers) whose store holds `chunks`, and a client of its API."""
    preload(data_dir, chunks)
    async with node_with_client(data_dir, retrieve_timeout=2.0) as (node, client):
        yield node, client


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Downloads over 64 KiB are streamed after their status line, as those over 32 MiB are."""
    monkeypatch.setattr(downloads, "BUFFERED_DOWNLOAD", 64 * 1024)


def without(address: bytes) -> list[Chunk]:
    return [c for c in CHUNKS if c.address != address]


async def test_ranges_of_a_file_and_of_a_chunk(tmp_path: Path) -> None:
    async with node_holding(tmp_path / "a", CHUNKS) as (_, client):
        url = f"/bytes/{REFERENCE.hex()}"
        whole = await client.get(url)
        assert whole.status_code == 200 and whole.content == DATA
        assert whole.headers["accept-ranges"] == "bytes"
        for header, start, end in [
            ("bytes=0-0", 0, 1),
            ("bytes=5000-600000", 5000, 600001),  # across data chunks and intermediates
            ("bytes=1099990-", 1099990, len(DATA)),
            ("bytes=-10", len(DATA) - 10, len(DATA)),
            ("bytes=1000-99999999", 1000, len(DATA)),
        ]:
            part = await client.get(url, headers={"range": header})
            assert part.status_code == 206, (header, part.text)
            assert part.content == DATA[start:end], header
            assert part.headers["content-range"] == f"bytes {start}-{end - 1}/{len(DATA)}"
        refused = await client.get(url, headers={"range": f"bytes={len(DATA)}-"})
        assert refused.status_code == 416 and refused.headers["content-range"] == f"bytes */{len(DATA)}"
        ignored = await client.get(url, headers={"range": "bytes=0-1,5-6"})  # several: the whole file
        assert ignored.status_code == 200 and ignored.content == DATA

        head = await client.head(url)
        assert head.status_code == 200 and head.headers["content-length"] == str(len(DATA))
        assert head.content == b""

        leaf = LEAVES[7]
        chunk = await client.get(f"/chunks/{leaf.address.hex()}", headers={"range": "bytes=0-7"})
        assert chunk.status_code == 206 and chunk.content == leaf.data[:8]  # the span
        assert chunk.headers["content-range"] == f"bytes 0-7/{len(leaf.data)}"


async def test_a_streamed_range_is_served_from_its_own_chunks(tmp_path: Path, streamed: None) -> None:
    # every chunk outside the range is missing: a read that touched one would fail
    start, end = 700_000, 900_000
    keep = {REFERENCE} | {c.address for c in INTERMEDIATES}
    offset = 0
    for leaf in LEAVES:
        if offset < end and offset + leaf.span > start:
            keep.add(leaf.address)
        offset += leaf.span
    async with node_holding(tmp_path / "a", [c for c in CHUNKS if c.address in keep]) as (_, client):
        part = await client.get(f"/bytes/{REFERENCE.hex()}", headers={"range": f"bytes={start}-{end - 1}"})
        assert part.status_code == 206 and part.content == DATA[start:end]


async def test_a_missing_intermediate_chunk_is_a_404_before_any_byte(tmp_path: Path, streamed: None) -> None:
    missing = INTERMEDIATES[2]
    async with node_holding(tmp_path / "a", without(missing.address)) as (_, client):
        response = await client.get(f"/bytes/{REFERENCE.hex()}")
    assert response.status_code == 404
    assert missing.address.hex() in response.json()["message"]


async def test_a_missing_data_chunk_cuts_the_transfer_and_is_logged_once(
    tmp_path: Path, streamed: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    missing = LEAVES[200]
    async with node_holding(tmp_path / "a", without(missing.address)) as (_, client):
        with pytest.raises(httpx.RemoteProtocolError, match="without sending complete message body"):
            await client.get(f"/bytes/{REFERENCE.hex()}")
        # HEAD needs the root only: the size is known
        head = await client.head(f"/bytes/{REFERENCE.hex()}")
        assert head.status_code == 200 and head.headers["content-length"] == str(len(DATA))
    cut = [r for r in caplog.records if "cut short" in r.getMessage()]
    assert len(cut) == 1 and cut[0].levelno == logging.WARNING
    assert missing.address.hex() in cut[0].getMessage() and f"after {200 * 4096} of" in cut[0].getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


async def test_a_client_leaving_mid_upload_is_an_info_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with node_holding(tmp_path / "a", []) as (node, _):
        stream = await trio.open_tcp_stream("127.0.0.1", node.api_port)  # type: ignore[arg-type]
        head = b"POST /bytes HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 1000000\r\n\r\n"
        await stream.send_all(head + bytes(100_000))
        await trio.sleep(0.2)
        await stream.aclose()  # the client is gone, 900,000 bytes short

        def departed() -> bool:
            return any("went away" in r.getMessage() for r in caplog.records)

        await wait_for(departed, timeout=10)
    line = next(r for r in caplog.records if "went away" in r.getMessage())
    assert line.levelno == logging.INFO and "POST /bytes" in line.getMessage()
    assert "upload cut short after" in line.getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


async def test_a_crafted_root_of_the_largest_span_is_refused_without_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A root chunk uploaded through POST /chunks claiming 2**64 - 1 bytes under two children
    cannot be the root of any file: GET /bytes answers an error status, not a 200 with an empty
    body, and logs no traceback (issue 19, item 7)."""
    children = LEAVES[:2]
    root = Chunk.from_payload(b"".join(c.address for c in children), span=2**64 - 1)
    async with node_holding(tmp_path / "a", children) as (_, client):
        posted = await client.post("/chunks", content=root.data)
        assert posted.status_code == 201, posted.text
        with caplog.at_level(logging.DEBUG):
            got = await client.get(f"/bytes/{root.address.hex()}")
        assert got.status_code >= 400 and "span" in got.text.lower()
        assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
