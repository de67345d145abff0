"""The HTTP API: an ASGI app (starlette) served by hypercorn's trio worker.

Shaped like the reference node's: JSON everywhere except raw chunk and file bytes; errors are
`{"code": status, "message": "..."}` with a message naming what was wrong. This module composes
the routes of the rooms beside it (chunks and bytes: swarm.api.content; files and sites:
swarm.api.bzz; ...), the error handlers, and the origin guard, and serves them. A client that
goes away mid-request is an INFO line, not an error: only real faults are logged as errors.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Protocol

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from chunks import Chunk, InvalidChunk
from chunks.ethkey import Secp256k1Key
from swarm.act.service import GranteeService
from swarm.api.bee import soc_and_feed_routes
from swarm.api.bee_status import status_routes
from swarm.api.bee_types import BeeBackend
from swarm.api.byteranges import RangeNotSatisfiable
from swarm.api.bzz import bzz_routes
from swarm.api.content import ChunkGetter, ChunkLookup, chunk_routes, file_routes
from swarm.api.dashboard import dashboard_routes
from swarm.api.grantees import grantee_routes
from swarm.api.input import (
    HttpError,
    error_response,
)
from swarm.api.live import live_routes
from swarm.api.messaging import messaging_routes
from swarm.api.origins import OriginPolicy, guarded
from swarm.api.peers import PeerSessions, peer_routes
from swarm.api.proofs import ProofSource, proof_routes
from swarm.api.reserve import reserve_routes
from swarm.api.spaces import space_routes
from swarm.api.stamps import postage_routes
from swarm.api.status import sync_document, topology_document
from swarm.api.stewardship import stewardship_routes
from swarm.api.upload_postage import UploadPostage
from swarm.failures import PortUnavailable, bind_error, leaf_exceptions
from swarm.live.gsoc import Gsoc
from swarm.live.service import LiveService
from swarm.postage.book import BatchBook
from swarm.reserve.uploads import Uploads
from swarm.spaces.service import SpaceService
from swarm.statistics import NodeStatistics
from syncer.evidence import EquivocationLog


class Node(Protocol):
    """What the API uses of the node (the node implements it; tests may give a double)."""

    @property
    def overlay(self) -> bytes: ...

    @property
    def retrieval(self) -> ChunkGetter: ...

    @property
    def store(self) -> ChunkLookup: ...

    async def upload_chunks(
        self, chunks: list[Chunk], *, verified: bool = False, wait: bool = True, receipts: int = 2
    ) -> int: ...

    @property
    def uploads(self) -> Uploads: ...

    def statistics(self) -> NodeStatistics: ...

    @property
    def bee(self) -> BeeBackend: ...

    @property
    def equivocations(self) -> EquivocationLog: ...

    @property
    def proofs(self) -> ProofSource: ...

    @property
    def spaces(self) -> SpaceService: ...

    @property
    def live(self) -> LiveService: ...

    @property
    def postage(self) -> BatchBook: ...

    @property
    def gsoc(self) -> Gsoc: ...

    @property
    def sessions(self) -> PeerSessions: ...

    @property
    def grantees(self) -> GranteeService: ...

    @property
    def eth_key(self) -> Secp256k1Key: ...


log = logging.getLogger(__name__)


def build_app(node: Node, policy: OriginPolicy | None = None) -> ASGIApp:
    """The ASGI app of one node, behind `policy` (Host names and origins: swarm.api.origins;
    by default a node bound to 127.0.0.1 that trusts no other origin)."""
    postage = UploadPostage(node.postage)
    routes = [
        *chunk_routes(node.retrieval, node.store, node.upload_chunks, postage),
        *file_routes(node.uploads, node.retrieval, postage, node.grantees),
        *bzz_routes(node.uploads, node.retrieval.get, postage, node.grantees),  # files, websites
        *report_routes(node.statistics, node.equivocations),
        *reserve_routes(node.uploads),  # uploads' tags and pins
        *proof_routes(node.proofs),  # provable streams: GET /proofs/{address}
        *dashboard_routes(),
        *live_routes(node.live, node.overlay, partial(_make_durable, node)),  # live propagation
        # Bee's: single-owner chunks and feeds, and /health, /readiness, /node, /addresses,
        # /status, /peers (docs/bee-compat.md)
        *soc_and_feed_routes(node.bee, postage=postage),
        *status_routes(node.bee),
        *peer_routes(node.sessions),  # /pingpong, DELETE /peers: swarm/api/peers.py
        *postage_routes(node.postage),  # /stamps, /batches: swarm/api/stamps.py
        *stewardship_routes(
            node.retrieval.get_from_network,
            node.retrieval.get,
            partial(node.upload_chunks, verified=True),
            postage,
        ),
        *messaging_routes(node.live, node.gsoc, postage, node.overlay, node.eth_key),  # PSS and GSOC
        *space_routes(node.spaces),  # spaces: swarm/api/spaces.py
        *grantee_routes(node.grantees, node.uploads, postage),  # ACT grantee lists: swarm/api/grantees.py
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={
            HTTPException: _starlette_error,  # no such route (404), a wrong method (405)
            Exception: _server_error,
            HttpError: _http_error,
            InvalidChunk: _invalid_chunk,
            RangeNotSatisfiable: _not_satisfiable,
        },
    )
    return departures_logged(guarded(app, policy or OriginPolicy.of("127.0.0.1")))


async def _make_durable(node: Node, address: bytes, *, wait: bool) -> None:
    """Push a chunk the node already stores as an upload's are pushed (until durable, if ``wait``)."""
    chunk = await node.retrieval.get(address)
    await node.upload_chunks([chunk], verified=True, wait=wait)


def report_routes(statistics: Callable[[], NodeStatistics], evidence_log: EquivocationLog) -> list[Route]:
    """What the node reports: /sync, /topology, /metrics, /equivocations (one snapshot each)."""

    async def sync(request: Request) -> Response:
        return JSONResponse(sync_document(statistics()))

    async def topology(request: Request) -> Response:
        return JSONResponse(topology_document(statistics()))

    async def metrics(request: Request) -> Response:
        # imported at the first /metrics: prometheus_client and the http and email modules it
        # brings cost 20-30 ms of CPU, which a node would otherwise spend while its first sync runs
        from swarm.api.metrics import CONTENT_TYPE, metrics_text

        return Response(metrics_text(statistics()), media_type=CONTENT_TYPE)

    async def equivocations(request: Request) -> Response:
        evidence = [
            {
                "sequence": e.sequence,
                "address": e.address.hex(),
                "first": e.first.hex(),
                "second": e.second.hex(),
            }
            for e in evidence_log.recent()
        ]
        return JSONResponse(evidence)

    return [
        Route("/sync", sync, methods=["GET"]),
        Route("/topology", topology, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/equivocations", equivocations, methods=["GET"]),
    ]


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HttpError)
    return error_response(exc.status, exc.message)


async def _starlette_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    what = f"{request.method} {request.url.path}"
    response = error_response(exc.status_code, f"{exc.detail}: {what}")
    response.headers.update(exc.headers or {})  # a 405's Allow
    return response


async def _server_error(request: Request, exc: Exception) -> Response:
    """A fault of ours: still Bee's body (the exception is logged by the server as well)."""
    return error_response(500, f"internal error: {type(exc).__name__}: {exc}")


async def _invalid_chunk(request: Request, exc: Exception) -> Response:
    return error_response(400, f"invalid chunk: {exc}")


async def _not_satisfiable(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RangeNotSatisfiable)
    response = error_response(416, str(exc))
    response.headers["content-range"] = exc.content_range
    return response


def departures_logged(app: ASGIApp) -> ASGIApp:
    """`app`, with a client that disconnects mid-request logged as INFO instead of being raised
    (hypercorn would log it as an ERROR with a traceback)."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await app(scope, receive, send)
        except Exception as exc:
            leaves = leaf_exceptions(exc)
            if not all(isinstance(leaf, ClientDisconnect) for leaf in leaves):
                raise
            notes = "; ".join(note for leaf in leaves for note in getattr(leaf, "__notes__", ()))
            log.info(
                "%s %s: the client went away before the request ended%s",
                scope["method"],
                scope["path"],
                f": {notes}" if notes else "",
            )

    return wrapped


async def serve_api(
    node: Node,
    host: str,
    port: int,
    *,
    allow_hosts: tuple[str, ...] = (),
    cors_origins: tuple[str, ...] = (),
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the API until cancelled; reports the bound port. It answers the local names, `host`
    and `allow_hosts`, and trusts pages of `cors_origins` (swarm.api.origins)."""
    config = Config()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    config.graceful_timeout = 1.0
    policy = OriginPolicy.of(host, allow_hosts, cors_origins)
    async with trio.open_nursery() as nursery:
        try:
            binds: list[str] = await nursery.start(partial(serve, build_app(node, policy), config))  # type: ignore[arg-type]
        except Exception as exc:
            cause = bind_error(exc)
            if cause is None:
                raise
            raise PortUnavailable("the HTTP API (--api-port)", host, port, cause) from None
        task_status.started(int(binds[0].rsplit(":", 1)[1]))
