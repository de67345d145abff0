"""The local swarm dashboard: one static page every node serves at `GET /dashboard`.

The page (swarm/api/static/dashboard.html, plain HTML and JavaScript, no build step) polls
`GET /sync` and `GET /topology` of the nodes it is given (`?nodes=1633,1635,...`: API ports on
127.0.0.1 or full URLs; by default the node serving it) and draws per node the Kademlia bins,
per-bin sync progress and rate, loss counters and recent disconnections. `swarm up` prints its
address with every node of the swarm.

The nodes' APIs listen on 127.0.0.1 only. For the page, served by one of them, to read the others
(other ports are other origins), the status documents carry CORS headers for pages served from
127.0.0.1 or localhost, and only those documents (swarm.api.origins, which also keeps other
origins from changing a node's state).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["dashboard_page", "dashboard_routes"]


@cache
def dashboard_page() -> bytes:
    """The page, as shipped in the package."""
    return files("swarm.api").joinpath("static", "dashboard.html").read_bytes()


async def _dashboard(request: Request) -> Response:
    return Response(
        dashboard_page(), media_type="text/html; charset=utf-8", headers={"cache-control": "no-cache"}
    )


def dashboard_routes() -> list[Route]:
    return [Route("/dashboard", _dashboard, methods=["GET"])]
