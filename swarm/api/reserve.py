"""The HTTP routes of uploads' receipts and of pins, shaped like Bee's.

``POST /tags`` makes a tag for an upload to come (``Swarm-Tag: uid`` on ``POST /bytes``), so a
client can follow it with ``GET /tags/{uid}`` while the upload runs: chunks split, stored, sent,
synced (receipted), and the ones still without a receipt. ``POST /pins/{reference}`` pins a file
(fetching what this node lacks), ``DELETE`` unpins it, ``GET /pins`` lists the pinned files.
``Swarm-Pin: true`` on an upload pins it; ``Swarm-Deferred-Upload: true`` answers at once
instead of waiting for the receipts.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from swarm.api.input import error_response, parse_address
from swarm.net.retrieval import ChunkUnavailable
from swarm.reserve.uploads import Uploads

__all__ = ["reserve_routes"]


def reserve_routes(uploads: Uploads) -> list[Route]:
    """Tags (POST /tags, GET /tags/{uid}) and pins (/pins) over the node's uploads."""

    async def post_tag(request: Request) -> Response:
        session = uploads.pusher.new_tag()
        return JSONResponse(uploads.tag_document(session), status_code=201)

    async def get_tag(request: Request) -> Response:
        raw = request.path_params["uid"]
        tag = uploads.pusher.tag(int(raw)) if raw.isdigit() else None
        if tag is None:
            return error_response(404, f"no tag {raw}")
        return JSONResponse(uploads.tag_document(tag))

    async def pin(request: Request) -> Response:
        reference = parse_address(request.path_params["reference"])
        if request.method == "GET":
            if reference not in uploads.pins.roots():
                return error_response(404, f"{reference.hex()} is not pinned")
            return JSONResponse({"reference": reference.hex(), "chunks": uploads.pins.roots()[reference]})
        if request.method == "DELETE":
            if not uploads.unpin(reference):
                return error_response(404, f"{reference.hex()} is not pinned")
            return JSONResponse({"code": 200, "message": "OK"})
        try:
            chunks = await uploads.pin(reference)
        except ChunkUnavailable as exc:
            return error_response(504 if exc.timed_out else 404, f"cannot pin {reference.hex()}: {exc}")
        return JSONResponse({"reference": reference.hex(), "chunks": chunks}, status_code=201)

    async def list_pins(request: Request) -> Response:
        roots = uploads.pins.roots()
        return JSONResponse(
            {"references": [r.hex() for r in sorted(roots)], "chunks": {r.hex(): n for r, n in roots.items()}}
        )

    return [
        Route("/tags", post_tag, methods=["POST"]),
        Route("/tags/{uid}", get_tag, methods=["GET"]),
        Route("/pins", list_pins, methods=["GET"]),
        Route("/pins/{reference}", pin, methods=["GET", "POST", "DELETE"]),
    ]
