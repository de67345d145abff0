"""Answers to GET and HEAD /bytes/{reference}: a file or a byte range of it, verified chunk by
chunk, with a status line that tells the truth as far as HTTP allows.

A download (or range) of up to BUFFERED_DOWNLOAD bytes is read whole before the status line, so a
missing or bad chunk becomes a 404/504/502 naming it. A larger one cannot be held, so its
intermediate chunks (1/128 of it) are fetched and verified first (swarm.files.transfer.fetch_intermediates)
and only then is the status line sent and the data streamed: after it, only a data chunk can be
missing, and then the connection is closed short of the Content-Length (`TreeResponse`).
"""

from __future__ import annotations

import logging

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from chunks import Chunk, InvalidChunk
from swarm.api.byteranges import ByteRange, parse_range
from swarm.files.chunker import CorruptTree, child_refs, file_size
from swarm.files.joiner import check_chunk
from swarm.files.transfer import Fetch, fetch_intermediates, read_file, stream_file
from swarm.net.retrieval import ChunkUnavailable

__all__ = ["BUFFERED_DOWNLOAD", "TreeResponse", "file_response", "range_headers"]

log = logging.getLogger(__name__)

BUFFERED_DOWNLOAD = 32 * 1024 * 1024
"""Downloads (or ranges) up to this size are read whole before the status line, so any missing
chunk gives a 404/504; larger ones are streamed after their intermediate chunks are fetched."""


async def file_response(
    reference: bytes, fetch: Fetch, *, head: bool = False, range: str | None = None
) -> Response | TreeResponse:
    """The answer for the file at `reference` (or the bytes its `Range` header asks for).

    Raises what `fetch` raises for a missing chunk, InvalidChunk or CorruptTree for a bad one and
    RangeNotSatisfiable, all before any status line. HEAD fetches the root chunk only.
    """
    root = check_chunk(await fetch(reference), reference, None)
    child_refs(root)  # a malformed root is refused before any status line
    size = file_size(root)
    byte_range = parse_range(range, size)
    start, end = (0, size) if byte_range is None else (byte_range.start, byte_range.end)
    status = 200 if byte_range is None else 206
    headers = range_headers(reference, byte_range)
    if head:
        headers["content-length"] = str(end - start)
        return Response(status_code=status, headers=headers)
    if end - start <= BUFFERED_DOWNLOAD:
        data = await read_file(reference, fetch, start=start, end=end)
        return Response(data, status, headers, media_type="application/octet-stream")
    held = await fetch_intermediates(root, fetch, start, end)
    return TreeResponse(reference, start, end, status, headers, _held_first(held, fetch))


def range_headers(address: bytes, byte_range: ByteRange | None) -> dict[str, str]:
    """Headers of a chunk or file answer: ranges accepted, the address as its (immutable) ETag,
    and the Content-Range of a 206."""
    headers = {"accept-ranges": "bytes", "etag": f'"{address.hex()}"'}
    if byte_range is not None:
        headers["content-range"] = byte_range.content_range
    return headers


def _held_first(held: dict[bytes, Chunk], fetch: Fetch) -> Fetch:
    """`fetch`, answering from `held` first (each held chunk is used once, then dropped)."""

    async def fetch_held(address: bytes) -> Chunk:
        chunk = held.pop(address, None)
        return chunk if chunk is not None else await fetch(address)

    return fetch_held


class TreeResponse:
    """Streams the bytes [start, end) of a large file after its status line.

    Its intermediate chunks were fetched and verified before (`fetch_intermediates`), so only a
    data chunk can be missing here. The headers, with the Content-Length, are out by then: the
    chunk is logged and the response is abandoned, so the server closes the connection short of
    the Content-Length and every HTTP client sees a failed transfer (never wrong bytes).
    """

    def __init__(
        self, reference: bytes, start: int, end: int, status: int, headers: dict[str, str], fetch: Fetch
    ) -> None:
        self.reference = reference
        self.start = start
        self.end = end
        self.status = status
        self.headers = headers
        self.fetch = fetch

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        fields = {"content-type": "application/octet-stream", **self.headers}
        fields["content-length"] = str(self.end - self.start)
        headers = [(name.encode(), value.encode()) for name, value in fields.items()]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        sent = 0

        async def body(piece: bytes) -> None:
            nonlocal sent
            await send({"type": "http.response.body", "body": piece, "more_body": True})
            sent += len(piece)

        try:
            await stream_file(self.reference, self.fetch, body, start=self.start, end=self.end)
        except (ChunkUnavailable, InvalidChunk, CorruptTree) as exc:
            log.warning(
                "download of %s cut short after %d of %d bytes (connection closed): %s",
                self.reference.hex(),
                sent,
                self.end - self.start,
                exc,
            )
            return  # without the final body message: the server closes the connection
        await send({"type": "http.response.body", "body": b"", "more_body": False})
