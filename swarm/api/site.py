"""What `GET /bzz/{reference}/{path}` answers: a manifest walked as Bee walks it (pkg/api/bzz.go).

1. If the root path "/" names a feed (``swarm-feed-owner``, ``swarm-feed-topic``), the feed's
   latest update is looked up and its content, a manifest, is walked instead (once).
2. An empty path answers the index document (``website-index-document`` on "/"), else 404.
3. A path naming a file answers it. Otherwise: a directory without its slash is redirected to
   it (308), a directory answers its index document, and a missing path answers the error
   document (``website-error-document``) when there is one (with 200, as Bee), else 404.

An answer carries the file's ``Content-Type`` (its metadata; application/octet-stream when it
has none), ``Content-Disposition: inline; filename="NAME"``, the file's reference as ``ETag``
(not when reached through a feed, whose content changes) and Range support, through
swarm.api.downloads (bounded streaming, status before the body tells the truth).
"""

from __future__ import annotations

import posixpath
from collections.abc import Awaitable, Callable

from starlette.responses import RedirectResponse, Response

from chunks import Chunk
from chunks.feeds import FeedUpdate
from swarm.api.downloads import TreeResponse, file_response
from swarm.api.input import HttpError
from swarm.feeds.finder import find_latest, resolve_root
from swarm.files.transfer import read_file, tree_fetch
from swarm.manifest.paths import (
    CONTENT_TYPE,
    ERROR_DOCUMENT,
    FEED_OWNER,
    FEED_TOPIC,
    FILENAME,
    INDEX_DOCUMENT,
    ROOT,
)
from swarm.manifest.reader import ManifestReader
from swarm.manifest.trie import Entry
from swarm.net.retrieval import ChunkUnavailable

__all__ = ["Site"]

Fetch = Callable[[bytes], Awaitable[Chunk]]
FEED_PROBE_TIMEOUT = 5.0


class Site:
    """One manifest, answering paths under it."""

    def __init__(self, fetch: Fetch, reference: bytes) -> None:
        self._network = fetch
        self._held: dict[bytes, Chunk] = {}  # a feed's content root (v2: wrapped, stored nowhere else)
        self.reader = ManifestReader(self.read_node, reference)
        self.feed_headers: dict[str, str] = {}

    async def fetch(self, address: bytes) -> Chunk:
        held = self._held.get(address)
        return held if held is not None else await self._network(address)

    async def read_node(self, reference: bytes) -> bytes:
        return await read_file(reference, tree_fetch(reference, self.fetch))  # 64 bytes: decrypted

    async def answer(self, path: str, *, head: bool, range: str | None) -> Response | TreeResponse:
        root = await self.reader.lookup(ROOT)
        metadata = (root.metadata if root else None) or {}
        if metadata.get(FEED_OWNER) and metadata.get(FEED_TOPIC):
            await self._follow_feed(metadata)
            root = await self.reader.lookup(ROOT)
            metadata = (root.metadata if root else None) or {}
        index, error = metadata.get(INDEX_DOCUMENT), metadata.get(ERROR_DOCUMENT)
        if not path:
            entry = await self.reader.entry(index.encode()) if index else None
            if entry is None:
                raise HttpError(404, "address not found or incorrect: the manifest has no index document")
            return await self._serve(entry, head, range)
        entry = await self.reader.entry(path.encode())
        if entry is not None:
            return await self._serve(entry, head, range)
        if not path.startswith("/") and await self.reader.has_prefix(path.encode() + b"/"):
            return RedirectResponse(posixpath.basename(path) + "/", status_code=308)
        if index and not path.endswith(index):
            entry = await self.reader.entry(posixpath.join(path, index).encode())
            if entry is not None:
                return await self._serve(entry, head, range)
        if error and path != error:
            entry = await self.reader.entry(error.encode())
            if entry is not None:
                return await self._serve(entry, head, range)
        raise HttpError(404, f"path address not found: {path!r} is not in manifest {self.reader.root.hex()}")

    async def _follow_feed(self, metadata: dict[str, str]) -> None:
        try:
            owner, topic = bytes.fromhex(metadata[FEED_OWNER]), bytes.fromhex(metadata[FEED_TOPIC])
        except ValueError:
            raise HttpError(404, "feed manifest names an owner or topic that is not hex") from None
        update = await find_latest(self._data, owner, topic, probe_timeout=FEED_PROBE_TIMEOUT)
        if update is None:
            raise HttpError(404, f"no update found: feed {owner.hex()}/{topic.hex()} has none yet")
        content, version = await resolve_root(update, self._chunk)
        self._held[content.address] = content
        self.reader = ManifestReader(self.read_node, content.address)
        self.feed_headers = _feed_headers(update, version)

    async def _chunk(self, address: bytes) -> Chunk | None:
        try:
            return await self.fetch(address)
        except ChunkUnavailable:
            return None

    async def _data(self, address: bytes) -> bytes | None:
        chunk = await self._chunk(address)
        return None if chunk is None else chunk.data

    async def _serve(self, entry: Entry, head: bool, range: str | None) -> Response | TreeResponse:
        metadata = entry.metadata or {}
        fetch = tree_fetch(entry.reference, self.fetch)
        response = await file_response(entry.reference, fetch, head=head, range=range)
        headers = {"content-type": metadata.get(CONTENT_TYPE) or "application/octet-stream"}
        if FILENAME in metadata:
            name = posixpath.basename(metadata[FILENAME]).replace('"', '\\"')
            headers["content-disposition"] = f'inline; filename="{name}"'
        headers["access-control-expose-headers"] = "content-disposition, swarm-feed-index"
        headers.update(self.feed_headers)
        response.headers.update(headers)
        if self.feed_headers:
            del response.headers["etag"]
        return response


def _feed_headers(update: FeedUpdate, version: str) -> dict[str, str]:
    return {"swarm-feed-index": update.index.to_bytes(8, "big").hex(), "swarm-feed-resolved-version": version}
