"""The HTTP routes of uploads' receipts and of pins, shaped like Bee's.

``POST /tags`` makes a tag for an upload to come (``Swarm-Tag: uid`` on ``POST /bytes``), so a
client can follow it with ``GET /tags/{uid}`` while the upload runs: chunks split, seen (held
before), stored, sent, synced (receipted), and the ones still without a receipt. ``GET /tags``
lists them (``?offset=``, ``?limit=``, oldest first), ``DELETE /tags/{uid}`` forgets one (its
chunks are still pushed), ``PATCH /tags/{uid}`` sets its root reference.
``POST /pins/{reference}`` pins a file
(fetching what this node lacks), ``DELETE`` unpins it, ``GET /pins`` lists the pinned files.
``Swarm-Pin: true`` on an upload pins it; ``Swarm-Deferred-Upload: true`` answers at once
instead of waiting for the receipts.
"""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chunks import InvalidChunk
from swarm.api.input import HttpError, error_response, handled, parse_address, parse_reference, parse_uint
from swarm.files.chunker import CorruptTree
from swarm.net.retrieval import ChunkUnavailable
from swarm.reserve.uploads import Uploads

__all__ = ["reserve_routes"]

DEFAULT_TAG_LIMIT = 100
"""Tags listed by ``GET /tags`` without ``?limit=`` (Bee's default)."""
MAX_TAG_LIMIT = 1000


def reserve_routes(uploads: Uploads) -> list[Route]:
    """Tags (POST /tags, GET /tags/{uid}) and pins (/pins) over the node's uploads."""

    async def post_tag(request: Request) -> Response:
        session = uploads.pusher.new_tag()
        return JSONResponse(uploads.tag_document(session), status_code=201)

    def uid_of(request: Request) -> int:
        uid = parse_uint(request.path_params["uid"], "tag uid")
        assert uid is not None  # a path segment is never empty
        if uploads.pusher.tag(uid) is None:
            raise HttpError(404, f"tag not found: no tag {uid}")
        return uid

    async def get_tag(request: Request) -> Response:
        tag = uploads.pusher.tag(uid_of(request))
        assert tag is not None
        return JSONResponse(uploads.tag_document(tag))

    async def delete_tag(request: Request) -> Response:
        uploads.pusher.forget_tag(uid_of(request))
        return Response(status_code=204)

    async def patch_tag(request: Request) -> Response:
        """Bee's "done splitting": the body names the upload's root (``address``, or bee-js's
        ``reference``)."""
        tag = uploads.pusher.tag(uid_of(request))
        assert tag is not None
        try:
            body = json.loads(await request.body() or b"{}")
            root = body.get("address") or body.get("reference") or ""
            if isinstance(root, dict):  # bee-js sends its Reference object: {"bytes": {"0": b0, ...}}
                root = bytes(root["bytes"].values()).hex()
        except (ValueError, AttributeError, KeyError, TypeError):
            raise HttpError(400, "tag update must be a JSON object with an address") from None
        tag.address = parse_address(str(root))
        return JSONResponse({"code": 200, "message": "OK"})

    async def list_tags(request: Request) -> Response:
        offset = parse_uint(request.query_params.get("offset"), "offset") or 0
        limit = parse_uint(request.query_params.get("limit"), "limit", MAX_TAG_LIMIT)
        tags = uploads.pusher.tags()[offset : offset + (DEFAULT_TAG_LIMIT if limit is None else limit)]
        return JSONResponse({"tags": [uploads.tag_document(tag) for tag in tags]})

    async def pin(request: Request) -> Response:
        reference = parse_reference(request.path_params["reference"])
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
        except (InvalidChunk, CorruptTree) as exc:  # an encrypted file's key that does not open it, too
            return error_response(502, f"cannot pin {reference.hex()}: {exc}")
        return JSONResponse({"reference": reference.hex(), "chunks": chunks}, status_code=201)

    async def list_pins(request: Request) -> Response:
        roots = uploads.pins.roots()
        return JSONResponse(
            {"references": [r.hex() for r in sorted(roots)], "chunks": {r.hex(): n for r, n in roots.items()}}
        )

    return [
        Route("/tags", post_tag, methods=["POST"]),
        Route("/tags", handled(list_tags), methods=["GET"]),
        Route("/tags/{uid}", handled(get_tag), methods=["GET"]),
        Route("/tags/{uid}", handled(delete_tag), methods=["DELETE"]),
        Route("/tags/{uid}", handled(patch_tag), methods=["PATCH"]),
        Route("/pins", list_pins, methods=["GET"]),
        Route("/pins/{reference}", pin, methods=["GET", "POST", "DELETE"]),
    ]
