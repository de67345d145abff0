"""The HTTP API: an ASGI app (starlette) served by hypercorn's trio worker.

Shaped like the reference node's: JSON everywhere except raw chunk and file bytes; errors are
`{"code": status, "message": "..."}` with a message naming what was wrong.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from localstore import CHUNK_SIZE, SPAN_SIZE, Chunk, InvalidChunk, bmt_address
from swarm import __version__
from swarm.retrieval import ChunkUnavailable

if TYPE_CHECKING:
    from swarm.node import Node

log = logging.getLogger(__name__)


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
        node.puller.store_chunk(chunk)
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

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "version": __version__, "overlay": node.overlay.hex()})

    async def sync(request: Request) -> Response:
        return JSONResponse(node.sync_status())

    async def bad_request(request: Request, exc: Exception) -> Response:
        return error(400, str(exc))

    async def invalid_chunk(request: Request, exc: Exception) -> Response:
        return error(400, f"invalid chunk: {exc}")

    routes = [
        Route("/chunks", post_chunk, methods=["POST"]),
        Route("/chunks/{address}", get_chunk, methods=["GET", "HEAD"]),
        Route("/health", health, methods=["GET"]),
        Route("/sync", sync, methods=["GET"]),
    ]
    return Starlette(
        routes=routes,
        exception_handlers={BadRequest: bad_request, InvalidChunk: invalid_chunk},
    )


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
