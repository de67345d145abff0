"""The local swarm dashboard: one static page every node serves at `GET /dashboard`.

The page (swarm/api/static/dashboard.html, plain HTML and JavaScript, no build step) polls
`GET /sync`, `GET /topology`, `GET /health` and `GET /loss` of the nodes it is given
(`?nodes=1633,1635,...`: API ports on 127.0.0.1 or full URLs; by default the node serving it),
each node on its own timer and each poll abandoned after 2 s, and draws per node its reserve,
radius, pins, version and API URL, charts of the last minutes (uPlot, vendored under
static/vendor/ and served here at `GET /dashboard/uPlot.*`), the Kademlia bins, per-bin sync
progress, rate and seconds behind, the live feeds and topics with their loss, and recent
disconnections. `swarm up` prints its address with every node of the swarm.

The nodes' APIs listen on 127.0.0.1 only. For the page, served by one of them, to read the others
(other ports are other origins), the status documents carry CORS headers for pages served from
127.0.0.1 or localhost, and only those documents (swarm.api.origins, which also keeps other
origins from changing a node's state).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["ASSETS", "asset", "dashboard_page", "dashboard_routes"]


@cache
def dashboard_page() -> bytes:
    """The page, as shipped in the package."""
    return files("swarm.api").joinpath("static", "dashboard.html").read_bytes()


async def _dashboard(request: Request) -> Response:
    return Response(
        dashboard_page(), media_type="text/html; charset=utf-8", headers={"cache-control": "no-cache"}
    )


_JS, _CSS = "text/javascript; charset=utf-8", "text/css; charset=utf-8"
ASSETS = {
    "dashboard.js": (("static", "dashboard.js"), _JS),
    "uPlot.iife.min.js": (("static", "vendor", "uPlot.iife.min.js"), _JS),  # static/vendor/README.md
    "uPlot.min.css": (("static", "vendor", "uPlot.min.css"), _CSS),
}
"""The files the page loads from the node: its script and the charting library (uPlot, MIT)."""


@cache
def asset(name: str) -> bytes:
    """One of ASSETS, as shipped in the package."""
    return files("swarm.api").joinpath(*ASSETS[name][0]).read_bytes()


async def _asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in ASSETS:
        return JSONResponse({"code": 404, "message": f"the dashboard has no file {name!r}"}, status_code=404)
    return Response(asset(name), media_type=ASSETS[name][1], headers={"cache-control": "no-cache"})


def dashboard_routes() -> list[Route]:
    return [
        Route("/dashboard", _dashboard, methods=["GET"]),
        Route("/dashboard/{name}", _asset, methods=["GET"]),
    ]
