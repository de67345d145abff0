"""Bee's grantee routes (pkg/api/accesscontrol.go), over swarm.act.service:

- `POST /grantee` `{"grantees": [public key hex]}` (optional `Swarm-Act-History-Address`) ->
  201 `{"ref": encrypted grantee list reference (128 hex), "historyref": history (64 hex)}`;
- `GET /grantee/{ref}` -> the grantees' compressed public keys (hex), 404 when the list cannot
  be read (as Bee: `granteelist not found`);
- `PATCH /grantee/{ref}` with `Swarm-Act-History-Address` (required) `{"add": [...],
  "revoke": [...]}` -> 200 `{"ref", "historyref"}`.

Chunks are charged to the request's batch and pushed as any upload's (one tag, named by the
history); a bad body or key is a 400 naming it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chunks import Chunk, InvalidChunk
from swarm.act.records import ActNotFound, BadPublicKey, EmptyGranteeList, compressed, parse_public_key
from swarm.act.service import Store, TooLarge
from swarm.api.input import HttpError, error_response, flag, parse_hex, read_body, tag_header
from swarm.api.upload_postage import UploadPostage
from swarm.files.chunker import CorruptTree
from swarm.manifest.nodes import InvalidManifest
from swarm.net.retrieval import ChunkUnavailable
from swarm.reserve.uploads import Uploads

__all__ = ["Grantees", "grantee_routes"]

MAX_BODY = 2**20


class Grantees(Protocol):
    async def grantees(self, encrypted_ref: bytes) -> list[bytes]: ...

    async def update(
        self,
        store: Store,
        encrypted_ref: bytes | None,
        history: bytes | None,
        add: list[bytes],
        revoke: list[bytes],
    ) -> tuple[bytes, bytes]: ...


def grantee_routes(service: Grantees, uploads: Uploads, postage: UploadPostage) -> list[Route]:
    async def update(request: Request, encrypted_ref: bytes | None) -> Response:
        body = await _json_body(request)
        history_header = request.headers.get("swarm-act-history-address")
        if encrypted_ref is not None and history_header is None:
            raise HttpError(400, "Swarm-Act-History-Address is required to change a grantee list")
        history = (
            None if history_header is None else parse_hex(history_header, 32, "Swarm-Act-History-Address")
        )
        if encrypted_ref is None:
            add, revoke = _keys(body, "grantees"), []
        else:
            add, revoke = _keys(body, "add"), _keys(body, "revoke")
        batch = postage.batch(request)
        session = uploads.begin(tag_header(request))

        def store(chunks: list[Chunk]) -> None:
            postage.stamp(batch, chunks)
            session.store(chunks)

        try:
            new_ref, history_ref = await service.update(store, encrypted_ref, history, add, revoke)
        except EmptyGranteeList as exc:
            raise HttpError(400, str(exc)) from None
        except (ActNotFound, ChunkUnavailable, InvalidManifest, InvalidChunk, CorruptTree, TooLarge) as exc:
            raise HttpError(404, f"act or history entry not found: {exc}") from None
        pin, wait = flag(request, "swarm-pin"), not flag(request, "swarm-deferred-upload")
        await uploads.finish(session, history_ref, pin=pin, wait=wait)
        status = 201 if encrypted_ref is None else 200
        return JSONResponse({"ref": new_ref.hex(), "historyref": history_ref.hex()}, status_code=status)

    async def create(request: Request) -> Response:
        return await update(request, None)

    async def patch(request: Request) -> Response:
        return await update(request, _list_ref(request))

    async def get(request: Request) -> Response:
        try:
            grantees = await service.grantees(_list_ref(request))
        except (ChunkUnavailable, InvalidChunk, CorruptTree, TooLarge) as exc:
            raise HttpError(404, f"granteelist not found: {exc}") from None
        return JSONResponse([compressed(key).hex() for key in grantees])

    return [
        Route("/grantee", _answered(create), methods=["POST"]),
        Route("/grantee/{ref}", _answered(get), methods=["GET"]),
        Route("/grantee/{ref}", _answered(patch), methods=["PATCH"]),
    ]


def _answered(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    async def run(request: Request) -> Response:
        try:
            return await handler(request)
        except HttpError as exc:
            return error_response(exc.status, exc.message)

    return run


def _list_ref(request: Request) -> bytes:
    return parse_hex(request.path_params["ref"], 64, "grantee list reference")


async def _json_body(request: Request) -> dict[str, object]:
    raw = await read_body(request, MAX_BODY)
    try:
        body = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        raise HttpError(400, f"body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise HttpError(400, "body must be a JSON object")
    return body


def _keys(body: dict[str, object], field: str) -> list[bytes]:
    """The public keys of `field` (absent or null: none), each checked; a 400 naming it otherwise."""
    value = body.get(field)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise HttpError(400, f"{field!r} must be a list of public keys in hex")
    try:
        return [parse_public_key(item) for item in value]
    except BadPublicKey as exc:
        raise HttpError(400, f"invalid {field} list: {exc}") from None
