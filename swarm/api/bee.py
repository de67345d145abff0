"""HTTP routes shaped like Bee's, so that bee-js (12.x) and scripts written for Bee work unchanged.

`bee_routes(backend)` returns starlette `Route`s that depend only on `swarm.api.bee_types.BeeBackend`:

- ``POST /chunks``: a content chunk (``span || payload``, up to 4104 bytes) or, longer, a full
  single-owner chunk; 201 ``{"reference"}``. As in Bee, data of up to 4104 bytes is always taken
  as a content chunk (a SOC is told apart only by its address, which the body does not carry).
- ``GET|HEAD /chunks/{address}``: the raw chunk data, a SOC's with id and signature (bee-js reads
  feed updates so); HEAD answers from the local store only.
- ``POST /soc/{owner}/{id}?sig=``: body ``span || payload``; 201 ``{"reference"}`` (the SOC address).
- ``GET /soc/{owner}/{id}``: the wrapped content, header ``Swarm-Soc-Signature``.
- ``GET /feeds/{owner}/{topic}``: the content of the latest update (``?after=`` start index,
  ``?at=`` unix seconds, ``?index=`` one update), headers ``Swarm-Feed-Index``,
  ``Swarm-Feed-Index-Next``, ``Swarm-Soc-Signature``, ``Swarm-Feed-Resolved-Version``; 404 (never
  500) when the feed has no update, since bee-js then starts writing at index 0.
- ``GET /health``, ``/readiness``, ``/node``, ``/addresses``, ``/status``, ``/peers`` with every
  field bee-js reads; this project's own fields under ``"swarmpy"``.

Uploads are charged to the postage batch they name (``Swarm-Postage-Batch-Id``, see
`swarm.api.upload_postage`); Bee's other upload headers (``Swarm-Encrypt``,
``Swarm-Redundancy-Level``, ``Swarm-Act``...) are accepted and ignored, never an error. Errors are Bee's
``{"code": status, "message": "..."}``. ``Swarm-Only-Root-Chunk`` is read as a header and as a
query parameter (bee-js sends it as the latter).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chunks.bmt import bmt_address
from chunks.chunk import MAX_CAC_DATA_SIZE, MAX_DATA_SIZE, SPAN_SIZE, Chunk, InvalidChunk
from chunks.ethkey import OWNER_SIZE, SIGNATURE_SIZE
from chunks.feeds import MAX_INDEX, TOPIC_SIZE, FeedUpdate
from chunks.soc import ID_SIZE, InvalidSoc, parse_soc, soc_address, soc_from_parts
from swarm.api.bee_status import BEE_API_VERSION, BEE_VERSION, status_routes
from swarm.api.bee_types import BeeBackend
from swarm.api.downloads import FileTooLarge, TreeResponse, file_response
from swarm.api.input import HttpError, error_response, parse_hex, parse_uint, read_body, receipts_header
from swarm.api.upload_postage import UploadPostage
from swarm.feeds.finder import find_at, find_latest, get_update, resolve_root
from swarm.feeds.lookup import DEFAULT_MAX_PROBES
from swarm.files.chunker import CorruptTree
from swarm.net.retrieval import ChunkUnavailable

__all__ = ["BEE_API_VERSION", "BEE_VERSION", "answered", "bee_routes"]

FEED_PROBE_TIMEOUT = 5.0
"""Seconds a feed lookup waits for one probe before counting the update as missing."""

_FEED_HEADERS = "swarm-feed-index, swarm-feed-index-next, swarm-soc-signature, swarm-feed-resolved-version"


_Answer = Response | TreeResponse


def answered(handler: Callable[[Request], Awaitable[_Answer]]) -> Callable[[Request], Awaitable[_Answer]]:
    """``handler``, with an `HttpError` and a chunk not found (404) or not in time (504) answered."""

    async def run(request: Request) -> _Answer:
        try:
            return await handler(request)
        except HttpError as exc:
            return error_response(exc.status, exc.message)
        except ChunkUnavailable as exc:
            return error_response(504 if exc.timed_out else 404, str(exc))

    return run


def _uint(request: Request, name: str) -> int | None:
    return parse_uint(request.query_params.get(name), f"query parameter {name}", MAX_INDEX)


def _flag(request: Request, name: str) -> bool:
    """A boolean Bee header, also looked for among the query parameters (any case)."""
    value = request.headers.get(name)
    if value is None:
        value = next((v for k, v in request.query_params.items() if k.lower() == name), "")
    return value.strip().lower() in ("true", "1")


def _created(address: bytes) -> JSONResponse:
    return JSONResponse(
        {"reference": address.hex()}, status_code=201, headers={"Access-Control-Expose-Headers": "swarm-tag"}
    )


def _index_hex(index: int) -> str:
    return (index % (MAX_INDEX + 1)).to_bytes(8, "big").hex()


def bee_routes(
    backend: BeeBackend,
    *,
    api_version: str = BEE_API_VERSION,
    version: str = BEE_VERSION,
    max_probes: int = DEFAULT_MAX_PROBES,
    probe_timeout: float = FEED_PROBE_TIMEOUT,
    postage: UploadPostage | None = None,
) -> list[Route]:
    """The Bee-shaped routes over ``backend``, to mount into the node's app.

    Chunks, SOCs and feeds here; the node-status routes in `swarm.api.bee_status`. Uploads are
    charged to the batch they name through ``postage`` (none: no postage, every batch accepted).
    """
    postage = postage or UploadPostage(None)
    api = _ChunkRoutes(backend, max_probes=max_probes, probe_timeout=probe_timeout, postage=postage)
    return [
        Route("/chunks", answered(api.post_chunk), methods=["POST"]),
        Route("/chunks/{address}", answered(api.get_chunk), methods=["GET", "HEAD"]),
        *soc_and_feed_routes(backend, max_probes=max_probes, probe_timeout=probe_timeout, postage=postage),
        *status_routes(backend, api_version=api_version, version=version),
    ]


def soc_and_feed_routes(
    backend: BeeBackend,
    *,
    max_probes: int = DEFAULT_MAX_PROBES,
    probe_timeout: float = FEED_PROBE_TIMEOUT,
    postage: UploadPostage | None = None,
) -> list[Route]:
    """The single-owner chunk and feed routes alone (the node serves its own /chunks routes,
    which answer Range requests, beside them)."""
    postage = postage or UploadPostage(None)
    api = _ChunkRoutes(backend, max_probes=max_probes, probe_timeout=probe_timeout, postage=postage)
    return [
        Route("/soc/{owner}/{id}", answered(api.post_soc), methods=["POST"]),
        Route("/soc/{owner}/{id}", answered(api.get_soc), methods=["GET"]),
        Route("/feeds/{owner}/{topic}", answered(api.get_feed), methods=["GET"]),
    ]


class _ChunkRoutes:
    """The handlers of the chunk, SOC and feed routes over one backend."""

    def __init__(
        self, backend: BeeBackend, *, max_probes: int, probe_timeout: float, postage: UploadPostage
    ) -> None:
        self.backend = backend
        self.postage = postage
        self.max_probes = max_probes
        self.probe_timeout = probe_timeout

    async def get_or_none(self, address: bytes) -> Chunk | None:
        try:
            return await self.backend.get_chunk(address)
        except ChunkUnavailable:
            return None

    async def get_data(self, address: bytes) -> bytes | None:
        chunk = await self.get_or_none(address)
        return None if chunk is None else chunk.data

    async def content(self, root: Chunk, headers: dict[str, str], only_root: bool) -> _Answer:
        """The content under ``root`` (a wrapped chunk or a v1 target), or just the root's data."""
        headers = {**headers, "Content-Type": "application/octet-stream"}
        if only_root:
            return Response(root.data, headers=headers)

        async def fetch(address: bytes) -> Chunk:
            return root if address == root.address else await self.backend.get_chunk(address)

        try:
            # as GET /bytes: intermediate chunks checked before the status line, so only a missing
            # data chunk of a large content can cut a body short (and then visibly so)
            response = await file_response(root.address, fetch)
        except ChunkUnavailable as exc:
            raise HttpError(404, f"wrapped chunk cannot be retrieved: {exc}") from None
        except (InvalidChunk, CorruptTree) as exc:
            raise HttpError(502, f"content {root.address.hex()} is corrupt: {exc}") from None
        except FileTooLarge as exc:
            raise HttpError(413, str(exc)) from None
        response.headers.update(headers)
        return response

    async def post_chunk(self, request: Request) -> Response:
        batch = self.postage.batch(request)
        data = await read_body(request, MAX_DATA_SIZE, "payload")
        if len(data) < SPAN_SIZE:
            raise HttpError(
                400, f"insufficient data length: {len(data)} bytes, a chunk starts with an 8-byte span"
            )
        if len(data) <= MAX_CAC_DATA_SIZE:
            chunk = Chunk(bmt_address(data[SPAN_SIZE:], int.from_bytes(data[:SPAN_SIZE], "little")), data)
        else:
            try:
                chunk = Chunk.from_soc(parse_soc(data))
            except InvalidSoc as exc:
                raise HttpError(400, str(exc)) from None
        self.postage.stamp(batch, [chunk])
        deferred = _flag(request, "swarm-deferred-upload")
        await self.backend.put_chunks([chunk], deferred=deferred, receipts=receipts_header(request))
        return _created(chunk.address)

    async def get_chunk(self, request: Request) -> Response:
        address = parse_hex(request.path_params["address"], 32, "address")
        if request.method == "HEAD":
            return Response(status_code=200 if self.backend.has_chunk(address) else 404)
        chunk = await self.backend.get_chunk(address)
        return Response(chunk.data, media_type="binary/octet-stream")

    @staticmethod
    def soc_path(request: Request) -> tuple[bytes, bytes]:
        owner = parse_hex(request.path_params["owner"], OWNER_SIZE, "owner")
        return owner, parse_hex(request.path_params["id"], ID_SIZE, "id")

    async def post_soc(self, request: Request) -> Response:
        owner, id = self.soc_path(request)
        signature = parse_hex(request.query_params.get("sig", ""), SIGNATURE_SIZE, "sig")
        batch = self.postage.batch(request)
        data = await read_body(request, MAX_CAC_DATA_SIZE, "payload")
        if len(data) < SPAN_SIZE:
            raise HttpError(400, f"short chunk data: {len(data)} bytes, it starts with an 8-byte span")
        try:
            soc = soc_from_parts(owner, id, signature, data)
        except InvalidSoc as exc:
            raise HttpError(401, str(exc)) from None
        deferred = _flag(request, "swarm-deferred-upload")
        chunk = Chunk.from_soc(soc)
        self.postage.stamp(batch, [chunk])
        await self.backend.put_chunks([chunk], deferred=deferred, receipts=receipts_header(request))
        return _created(soc.address)

    async def get_soc(self, request: Request) -> _Answer:
        owner, id = self.soc_path(request)
        chunk = await self.backend.get_chunk(soc_address(id, owner))
        try:
            soc = chunk.soc()
        except InvalidSoc as exc:
            raise HttpError(404, f"not a single-owner chunk: {exc.problem}") from None
        headers = {
            "Swarm-Soc-Signature": soc.signature.hex(),
            "Access-Control-Expose-Headers": "swarm-soc-signature",
        }
        root = Chunk(soc.cac_address, soc.wrapped)
        return await self.content(root, headers, _flag(request, "swarm-only-root-chunk"))

    async def find_update(self, request: Request, owner: bytes, topic: bytes) -> FeedUpdate:
        index, after, at = _uint(request, "index"), _uint(request, "after"), _uint(request, "at")
        if index is not None:
            update = await get_update(self.get_data, owner, topic, index)
            if update is None:
                raise HttpError(404, f"feed update {index} not found")
            return update
        start = after or 0
        update = await find_latest(
            self.get_data,
            owner,
            topic,
            start=start,
            max_probes=self.max_probes,
            probe_timeout=self.probe_timeout,
        )
        if update is not None and at is not None:
            update = await find_at(self.get_data, owner, topic, at, start=start, end=update.index)
        if update is None:
            raise HttpError(404, "no update found")
        return update

    async def get_feed(self, request: Request) -> _Answer:
        owner = parse_hex(request.path_params["owner"], OWNER_SIZE, "owner")
        topic = parse_hex(request.path_params["topic"], TOPIC_SIZE, "topic")
        try:
            update = await self.find_update(request, owner, topic)
        except InvalidChunk as exc:  # a forged update came back: as good as none
            raise HttpError(404, f"lookup at failed: {exc}") from None
        root, version = await resolve_root(update, self.get_or_none)
        headers = {
            "Swarm-Feed-Index": _index_hex(update.index),
            "Swarm-Feed-Index-Next": _index_hex(update.index + 1),
            "Swarm-Soc-Signature": update.soc.signature.hex(),
            "Swarm-Feed-Resolved-Version": version,
            "Access-Control-Expose-Headers": _FEED_HEADERS,
        }
        return await self.content(root, headers, _flag(request, "swarm-only-root-chunk"))
