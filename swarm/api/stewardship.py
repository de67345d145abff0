"""Bee's stewardship routes: is every chunk of a file retrievable, and push them all again.

- ``GET /stewardship/{reference}``: walks the file's chunk tree asking *the network*, never this
  node's own store (a chunk only this node holds is not retrievable by others);
  ``{"isRetrievable": bool}``.
- ``PUT /stewardship/{reference}``: fetches every chunk (locally if held, else from the network)
  and uploads them again, as a new upload of the batch named in ``Swarm-Postage-Batch-Id``
  (Bee's "re-upload"), answering once they are durable. 404 if a chunk cannot be had.

The walk follows a bytes tree (``POST /bytes``), encrypted ones too (a 128-hex reference: the
chunks are checked and re-uploaded as stored, encrypted); the references inside a manifest are not
followed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chunks import Chunk, InvalidChunk
from swarm.api.input import HttpError, handled, parse_reference
from swarm.api.upload_postage import UploadPostage
from swarm.files.chunker import CorruptTree
from swarm.files.transfer import TreeTooLarge, fetch_tree, tree_fetch
from swarm.net.retrieval import ChunkUnavailable

__all__ = ["stewardship_routes"]

Fetch = Callable[[bytes], Awaitable[Chunk]]


def stewardship_routes(
    network_get: Fetch, get: Fetch, upload: Callable[[list[Chunk]], Awaitable[object]], postage: UploadPostage
) -> list[Route]:
    """``network_get`` asks peers only; ``get`` tries the store first; ``upload`` pushes chunks."""

    async def check(request: Request) -> Response:
        reference = parse_reference(request.path_params["reference"])
        try:
            await fetch_tree(reference, tree_fetch(reference, network_get))
        except TreeTooLarge as exc:
            raise HttpError(413, f"cannot check {exc}") from None
        except (ChunkUnavailable, InvalidChunk, CorruptTree):
            return JSONResponse({"isRetrievable": False})
        return JSONResponse({"isRetrievable": True})

    async def reupload(request: Request) -> Response:
        reference = parse_reference(request.path_params["reference"])
        batch = postage.batch(request)
        stored: dict[bytes, Chunk] = {}  # as fetched: an encrypted file's chunks stay encrypted

        async def keep(address: bytes) -> Chunk:
            stored[address] = chunk = await get(address)
            return chunk

        try:
            await fetch_tree(reference, tree_fetch(reference, keep))
        except ChunkUnavailable as exc:
            raise HttpError(404, f"cannot re-upload {reference.hex()}: {exc}") from None
        except (InvalidChunk, CorruptTree) as exc:
            raise HttpError(502, f"cannot re-upload {reference.hex()}: {exc}") from None
        except TreeTooLarge as exc:
            raise HttpError(413, f"cannot re-upload {exc}") from None
        chunks = list(stored.values())
        postage.stamp(batch, chunks)
        await upload(chunks)
        return JSONResponse({"code": 200, "message": "OK"})

    return [
        Route("/stewardship/{reference}", handled(check), methods=["GET"]),
        Route("/stewardship/{reference}", handled(reupload), methods=["PUT"]),
    ]
