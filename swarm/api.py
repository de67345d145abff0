"""The HTTP API: an ASGI app (starlette) served by hypercorn's trio worker.

Shaped like the reference node's: JSON everywhere except raw chunk and file bytes; errors are
`{"code": status, "message": "..."}` with a message naming what was wrong.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Protocol

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from localstore import CHUNK_SIZE, SPAN_SIZE, Chunk, InvalidChunk, bmt_address
from swarm import __version__
from swarm.chunker import CorruptTree, file_size
from swarm.files import Fetch, Upload, read_file, stream_file
from swarm.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from swarm.metrics import metrics_text
from swarm.retrieval import ChunkUnavailable
from swarm.spaces.routes import space_routes  # spaces (issue 15)
from swarm.spaces.service import SpaceService  # spaces (issue 15)
from swarm.statistics import NodeStatistics
from swarm.status import sync_document, topology_document


class ChunkGetter(Protocol):
    async def get(self, address: bytes) -> Chunk: ...


class ChunkLookup(Protocol):
    def has(self, address: bytes) -> bool: ...


class Node(Protocol):
    """What the API uses of the node (the node implements it; tests may give a double)."""

    @property
    def overlay(self) -> bytes: ...

    @property
    def retrieval(self) -> ChunkGetter: ...

    @property
    def store(self) -> ChunkLookup: ...

    def store_chunks(self, chunks: list[Chunk], *, verified: bool = False) -> int: ...

    def statistics(self) -> NodeStatistics: ...

    @property
    def spaces(self) -> SpaceService: ...  # spaces (issue 15)

log = logging.getLogger(__name__)

BUFFERED_DOWNLOAD = 32 * 1024 * 1024  # files up to this size are read whole before answering


class BadRequest(Exception):
    """The request is malformed; becomes a 400 with this message."""


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"code": status, "message": message}, status_code=status)


def parse_address(text: str) -> bytes:
    """A 32-byte address from 64 hex characters (0x prefix allowed)."""
    text = text.removeprefix("0x")
    if len(text) != 64:
        raise BadRequest(f"address must be 64 hex characters, got {len(text)}")
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise BadRequest(f"address is not hexadecimal: {text!r}") from None


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refusing (400) anything longer than `limit` without buffering it all."""
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > limit:
            raise BadRequest(f"body longer than {limit} bytes")
    return bytes(body)


def build_app(node: Node) -> Starlette:
    """The ASGI app of one node."""

    async def post_chunk(request: Request) -> Response:
        data = await read_body(request, SPAN_SIZE + CHUNK_SIZE)
        if len(data) < SPAN_SIZE:
            raise BadRequest(
                f"chunk must be an 8-byte little-endian span then the payload; got {len(data)} bytes"
            )
        span = int.from_bytes(data[:SPAN_SIZE], "little")
        chunk = Chunk(bmt_address(data[SPAN_SIZE:], span), data)
        node.store_chunks([chunk], verified=True)  # its address was just computed from it
        return JSONResponse({"reference": chunk.address.hex()}, status_code=201)

    async def get_chunk(request: Request) -> Response:
        address = parse_address(request.path_params["address"])
        if request.method == "HEAD":
            # from the local store alone, never retrieving: shows where chunks live
            status = 200 if node.store.has(address) else 404
            return Response(status_code=status)
        try:
            chunk = await node.retrieval.get(address)
        except ChunkUnavailable as exc:
            return error(504 if exc.timed_out else 404, str(exc))
        return Response(chunk.data, media_type="application/octet-stream")

    async def post_bytes(request: Request) -> Response:
        # the splitter computes every chunk's address from its data: nothing to verify again
        upload = Upload(partial(node.store_chunks, verified=True))
        async for piece in request.stream():
            upload.feed(piece)
        reference = upload.finish()
        return JSONResponse(
            {"reference": reference.hex(), "size": upload.size, "chunks": upload.chunks}, status_code=201
        )

    async def get_bytes(request: Request) -> Response | TreeResponse:
        reference = parse_address(request.path_params["reference"])
        try:
            root = await node.retrieval.get(reference)
            size = file_size(root)
            if size <= BUFFERED_DOWNLOAD:
                data = await read_file(reference, node.retrieval.get)
                return Response(data, media_type="application/octet-stream")
        except ChunkUnavailable as exc:
            return error(504 if exc.timed_out else 404, str(exc))
        except (InvalidChunk, CorruptTree) as exc:
            return error(502, f"file {reference.hex()} is corrupt: {exc}")
        return TreeResponse(reference, size, node.retrieval.get)

    async def topology(request: Request) -> Response:
        return JSONResponse(topology_document(node.statistics()))

    async def metrics(request: Request) -> Response:
        return Response(metrics_text(node.statistics()), media_type=METRICS_CONTENT_TYPE)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "version": __version__, "overlay": node.overlay.hex()})

    async def sync(request: Request) -> Response:
        return JSONResponse(sync_document(node.statistics()))

    async def bad_request(request: Request, exc: Exception) -> Response:
        return error(400, str(exc))

    async def invalid_chunk(request: Request, exc: Exception) -> Response:
        return error(400, f"invalid chunk: {exc}")

    routes = [
        Route("/chunks", post_chunk, methods=["POST"]),
        Route("/chunks/{address}", get_chunk, methods=["GET", "HEAD"]),
        Route("/bytes", post_bytes, methods=["POST"]),
        Route("/bytes/{reference}", get_bytes, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/sync", sync, methods=["GET"]),
        Route("/topology", topology, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        *space_routes(node.spaces),  # spaces (issue 15): swarm/spaces/routes.py
    ]
    return Starlette(
        routes=routes,
        exception_handlers={BadRequest: bad_request, InvalidChunk: invalid_chunk},
    )


class TreeResponse:
    """Streams a large file; a chunk missing mid-way aborts the transfer (never wrong bytes).

    The headers (with the Content-Length from the root's span) are already out by then, so the
    client sees a truncated body rather than a status code; files up to BUFFERED_DOWNLOAD bytes
    are read whole first and get a proper 404/504 instead.
    """

    def __init__(self, reference: bytes, size: int, fetch: Fetch) -> None:
        self.reference = reference
        self.size = size
        self.fetch = fetch

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [
            (b"content-type", b"application/octet-stream"),
            (b"content-length", str(self.size).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})

        async def body(piece: bytes) -> None:
            await send({"type": "http.response.body", "body": piece, "more_body": True})

        try:
            await stream_file(self.reference, self.fetch, body)
        except (ChunkUnavailable, InvalidChunk, CorruptTree) as exc:
            log.warning("download of %s aborted: %s", self.reference.hex(), exc)
            raise
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def serve_api(
    node: Node, host: str, port: int, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED
) -> None:
    """Serve the API until cancelled; reports the bound port."""
    config = Config()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    config.graceful_timeout = 1.0
    async with trio.open_nursery() as nursery:
        binds: list[str] = await nursery.start(partial(serve, build_app(node), config))  # type: ignore[arg-type]
        task_status.started(int(binds[0].rsplit(":", 1)[1]))
