"""Who may talk to the HTTP API: the Host names it answers, the origins whose pages may change
state, and the CORS headers that let a page read it. One ASGI middleware, `guarded`.

A web page on any site can make the browser send a "simple" request (a `text/plain` POST) to
127.0.0.1:1633 without asking first, and DNS rebinding can make `evil.example` resolve to
127.0.0.1. So, with a pure decision (`refusal`) and a thin ASGI shell:

- **Host.** A request whose `Host` names anything but 127.0.0.1, localhost, [::1], the address the
  API is bound to, or a name given with `swarm node --api-allow-host NAME` is refused (403).
  A request without a `Host` (HTTP/1.0 tools) is taken: DNS rebinding needs a browser, which
  always sends one.
- **State changes.** POST, PUT, PATCH and DELETE carrying an `Origin` are taken only from the
  node's own origin (`http://` + the `Host` header, as Bee's `checkOrigin` compares) or from an
  origin given with `--cors-allowed-origins` (Bee's option; `*` allows any); `Origin: null`
  never. Without an `Origin`, a browser that says `Sec-Fetch-Site` other than `same-origin` or
  `none` is refused too. Clients that send neither (curl, bee-js in Node, `swarm` itself) are not
  browsers and are served as before. Reads (GET, HEAD) are never refused for their origin: what
  a page may *read* is what CORS allows.
- **CORS.** Pages from an origin of `--cors-allowed-origins` get Bee's CORS headers on every
  answer (and a 204 to their preflight `OPTIONS`); pages served from 127.0.0.1 or localhost
  (the dashboard of a local swarm, whatever port) may read `/sync`, `/topology`, `/health` and
  `/loss` only. Nothing else is readable from another origin.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from swarm.api.input import error_response

log = logging.getLogger(__name__)

__all__ = ["CORS_PATHS", "LOCAL_HOSTS", "OriginPolicy", "guarded", "host_name", "refusal"]

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Host names every node answers to."""
CORS_PATHS = frozenset({"/sync", "/topology", "/health", "/loss"})
"""The documents the dashboard reads from other nodes of a local swarm."""
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_LOCAL_ORIGIN = re.compile(r"^http://(127\.0\.0\.1|localhost)(:\d{1,5})?$")
_WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::"})
# Bee's CORS answer (pkg/api: corsHandler), with this node's headers
_CORS_HEADERS = [
    (b"access-control-allow-credentials", b"true"),
    (
        b"access-control-allow-headers",
        b"User-Agent, Origin, Accept, Authorization, Content-Type, X-Requested-With, "
        b"Access-Control-Request-Headers, Access-Control-Request-Method, Swarm-Tag, Swarm-Pin, "
        b"Swarm-Encrypt, Swarm-Postage-Batch-Id, Swarm-Deferred-Upload, Swarm-Only-Root-Chunk, "
        b"Swarm-Receipts, Range, Accept-Ranges, Content-Encoding, Last-Event-ID",
    ),
    (b"access-control-allow-methods", b"GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE"),
    (b"access-control-max-age", b"3600"),
]


@dataclass(frozen=True)
class OriginPolicy:
    """The Host names served and the origins trusted (lowercase; hosts without port or brackets)."""

    hosts: frozenset[str] = LOCAL_HOSTS
    origins: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls, bound: str, allow_hosts: Iterable[str] = (), cors_origins: Iterable[str] = ()
    ) -> OriginPolicy:
        """The policy of an API bound to `bound`, with an operator's extra hosts and origins."""
        hosts = set(LOCAL_HOSTS) | {h.strip().strip("[]").lower() for h in allow_hosts if h.strip()}
        if bound.strip("[]") not in _WILDCARD_BINDS:
            hosts.add(bound.strip("[]").lower())
        origins = {o.strip().rstrip("/").lower() for o in cors_origins if o.strip()}
        return cls(frozenset(hosts), frozenset(origins))

    def trusts(self, origin: str) -> bool:
        """Whether pages of `origin` may change state and read everything (CORS)."""
        return origin != "null" and ("*" in self.origins or origin.lower() in self.origins)


def host_name(host: str) -> str | None:
    """The name in a Host header, lowercase, without port or IPv6 brackets; None if malformed."""
    host = host.strip().lower()
    if host.startswith("["):
        name, bracket, rest = host[1:].partition("]")
        ok = bracket and (not rest or re.fullmatch(r":\d{1,5}", rest))
        return name if ok and name else None
    name, _, port = host.partition(":")
    if not name or (port and not port.isdigit()) or not re.fullmatch(r"[a-z0-9.\-_]+", name):
        return None
    return name


def refusal(policy: OriginPolicy, method: str, scheme: str, headers: dict[str, str]) -> str | None:
    """Why the request must be refused (403), or None to serve it. `headers`: lowercase names."""
    host = headers.get("host")
    if host is not None and host_name(host) not in policy.hosts:
        return (
            f"host {host!r} is not served here (this API answers to {', '.join(sorted(policy.hosts))}; "
            "add a name with swarm node --api-allow-host)"
        )
    if method not in STATE_CHANGING:
        return None
    origin = headers.get("origin")
    if origin is not None:
        if host is not None and origin.lower() == f"{scheme}://{host}".lower():
            return None  # same origin: the node's own pages
        if policy.trusts(origin):
            return None
        return (
            f"{method} from a page of another origin ({origin}) refused: a web page may not change "
            "this node's state (allow an origin with swarm node --cors-allowed-origins)"
        )
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"{method} from a {site} page refused: a web page may not change this node's state"
    return None


def guarded(app: ASGIApp, policy: OriginPolicy) -> ASGIApp:
    """`app` behind `policy`: refusals answered 403 (`{"code", "message"}`), CORS headers added."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await _guarded_websocket(app, policy, scope, receive, send)
            return
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        why = refusal(policy, scope["method"], scope.get("scheme", "http"), headers)
        if why is not None:
            await error_response(403, why)(scope, receive, send)
            return
        cors = _cors_headers(policy, scope, headers.get("origin"))
        if not cors:
            await app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
            await send({"type": "http.response.start", "status": 204, "headers": cors})
            await send({"type": "http.response.body", "body": b""})
            return

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *cors]}
            await send(message)

        await app(scope, receive, send_with_cors)

    return wrapped


async def _guarded_websocket(
    app: ASGIApp, policy: OriginPolicy, scope: Scope, receive: Receive, send: Send
) -> None:
    """A WebSocket (PSS, GSOC) is opened as a state-changing request is: browsers send it across
    origins without CORS, so a page of another origin, or a foreign Host, is refused (HTTP 403,
    by closing before the handshake is accepted)."""
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
    scheme = {"ws": "http", "wss": "https"}.get(scope.get("scheme", "ws"), "http")
    why = refusal(policy, "POST", scheme, headers)
    if why is not None:
        log.info("websocket %s refused: %s", scope.get("path", ""), why)
        await send({"type": "websocket.close", "code": 1008})
        return
    await app(scope, receive, send)


def _cors_headers(policy: OriginPolicy, scope: Scope, origin: str | None) -> list[tuple[bytes, bytes]]:
    """The CORS headers the answer to a page of `origin` carries ([] for none)."""
    if origin is None:
        return []
    allow = [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"origin")]
    if policy.trusts(origin):
        return allow + _CORS_HEADERS
    if scope["method"] == "GET" and scope["path"] in CORS_PATHS and _LOCAL_ORIGIN.match(origin):
        return allow
    return []
