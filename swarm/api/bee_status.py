"""Bee's node-status routes, with every field bee-js 12.x reads (its checks before it talks to a node).

``/health``, ``/readiness``, ``/node``, ``/addresses``, ``/status``, ``/peers``, shaped as Bee 2.7
answers them (bee-js parses each field and throws on a missing or mistyped one). Fields with no
meaning on a network without postage or a blockchain get Bee's neutral values (``batchCommitment``
0, ``lastSyncedBlock`` 0, cheques and swap disabled); this project's own fields are under
``"swarmpy"``, which bee-js ignores.
"""

from __future__ import annotations

import math

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from chunks.ethkey import checksum_address
from swarm import __version__
from swarm.api.bee_types import BeeBackend

__all__ = ["BEE_API_VERSION", "BEE_VERSION", "status_routes"]

BEE_API_VERSION = "7.3.0"
"""The Bee API version reported: bee-js 12.1.0 supports 7.3.0 and compares the major version."""
BEE_VERSION = f"2.7.0-swarmpy-{__version__}"
"""The Bee version reported (bee-js 12.1.0 was built against Bee 2.7.0); the suffix says what we are."""


def status_routes(
    backend: BeeBackend, *, api_version: str = BEE_API_VERSION, version: str = BEE_VERSION
) -> list[Route]:
    """The node-status routes over ``backend``."""
    versions = {"version": version, "apiVersion": api_version}

    async def root(request: Request) -> Response:
        # bee-js's checkConnection / isConnected ask for the API's root and want a 200
        return PlainTextResponse("Ethereum Swarm Bee API, served by swarmpy\n")

    async def health(request: Request) -> Response:
        overlay = backend.node_info().overlay.hex()
        return JSONResponse({"status": "ok", **versions, "swarmpy": {"overlay": overlay}})

    async def readiness(request: Request) -> Response:
        if backend.is_ready():
            return JSONResponse({"status": "ready", **versions})
        return JSONResponse({"status": "notReady", **versions}, status_code=400)

    async def node(request: Request) -> Response:
        mode = backend.node_info().bee_mode
        return JSONResponse({"beeMode": mode, "chequebookEnabled": False, "swapEnabled": False})

    async def addresses(request: Request) -> Response:
        return _addresses(backend)

    async def status(request: Request) -> Response:
        return _status(backend)

    async def peers(request: Request) -> Response:
        listed = [{"address": p.overlay.hex(), "fullNode": p.full_node} for p in backend.peers()]
        return JSONResponse({"peers": listed})

    async def blocklist(request: Request) -> Response:
        return JSONResponse({"peers": []})  # this node blocks no peer by hand

    return [
        Route("/", root, methods=["GET"]),
        Route("/blocklist", blocklist, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/readiness", readiness, methods=["GET"]),
        Route("/node", node, methods=["GET"]),
        Route("/addresses", addresses, methods=["GET"]),
        Route("/status", status, methods=["GET"]),
        Route("/peers", peers, methods=["GET"]),
    ]


def _addresses(backend: BeeBackend) -> Response:
    info = backend.node_info()
    return JSONResponse(
        {
            "overlay": info.overlay.hex(),
            "underlay": list(info.underlays),
            "ethereum": checksum_address(info.ethereum),
            "publicKey": info.public_key.hex(),
            "pssPublicKey": (info.pss_public_key or info.public_key).hex(),
            "swarmpy": dict(info.extras),
        }
    )


def _status(backend: BeeBackend) -> Response:
    s, info = backend.status(), backend.node_info()
    return JSONResponse(
        {
            "overlay": info.overlay.hex(),
            "proximity": 256,  # what Bee reports for the node itself
            "beeMode": info.bee_mode,
            "reserveSize": s.reserve_size,
            "reserveSizeWithinRadius": s.reserve_size_within_radius,
            "pullsyncRate": s.pullsync_rate if math.isfinite(s.pullsync_rate) else 0.0,
            "storageRadius": s.storage_radius,
            "connectedPeers": s.connected_peers,
            "neighborhoodSize": s.neighborhood_size,
            "batchCommitment": 0,  # no postage
            "isReachable": s.is_reachable,
            "lastSyncedBlock": 0,  # no blockchain
            "committedDepth": s.storage_radius if s.committed_depth is None else s.committed_depth,
            "isWarmingUp": s.is_warming_up,
            "swarmpy": dict(s.extras),
        }
    )
