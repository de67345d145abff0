"""Bee's routes that act on one connected peer: ``POST /pingpong/{address}``, ``DELETE /peers/{address}``.

- ``POST /pingpong/{address}`` sends a `Ping` over the peer's session and waits for its `Pong`
  (docs/protocol.md, 5.3): 200 ``{"rtt": "1.234567ms"}``, the round trip written as Go writes a
  ``time.Duration`` (Bee's ``rtt.String()``); 404 ``peer not found`` for a peer not connected,
  504 when no Pong comes within `PING_TIMEOUT`.
- ``DELETE /peers/{address}`` closes the session (Goodbye ``NORMAL``, "user requested
  disconnect"): 200 ``{"message": "OK", "code": 200}`` (Bee's ``jsonhttp.OK(w, nil)``); 404 for a
  peer not connected. The peer stays known: Kademlia may dial it again, as Bee's may.

The routes see the node's sessions through `PeerSessions` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import trio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from streamer.connection import PingTimeout
from streamer.messages import GoodbyeCode
from swarm.api.input import HttpError, handled, parse_hex

__all__ = ["PING_TIMEOUT", "PeerSessions", "go_duration", "peer_routes"]

PING_TIMEOUT = 10.0
"""Seconds ``/pingpong`` waits for the Pong."""
DISCONNECT_REASON = "user requested disconnect"  # Bee's words

_UNITS = ((1_000, "µs"), (1_000_000, "ms"))


class PingablePeer(Protocol):
    async def ping(self, timeout: float) -> float: ...


class PeerSessions(Protocol):
    """What the routes need of the node's sessions (`swarm.net.sessions.Sessions` has it)."""

    @property
    def peers(self) -> Mapping[bytes, PingablePeer]: ...

    def close(self, overlay: bytes, code: int, reason: str) -> None: ...


def _fraction(value: int, digits: int) -> str:
    """``.ddd`` of ``value`` (< 10**digits) with trailing zeros dropped; empty for 0."""
    return "." + f"{value:0{digits}d}".rstrip("0") if value else ""


def go_duration(nanoseconds: int) -> str:
    """A duration as Go's ``time.Duration.String()`` writes it: ``0s``, ``850ns``, ``1.5µs``,
    ``2.25ms``, ``3.3s``, ``4m5s``, ``1h0m0.5s``."""
    sign, n = ("-", -nanoseconds) if nanoseconds < 0 else ("", nanoseconds)
    if n == 0:
        return "0s"
    if n < 1_000:
        return f"{sign}{n}ns"
    if n < 1_000_000_000:
        scale, unit = _UNITS[0] if n < 1_000_000 else _UNITS[1]
        digits = len(str(scale)) - 1
        return f"{sign}{n // scale}{_fraction(n % scale, digits)}{unit}"
    seconds, rest = divmod(n, 1_000_000_000)
    text = f"{seconds % 60}{_fraction(rest, 9)}s"
    minutes = seconds // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes // 60:
            text = f"{minutes // 60}h{text}"
    return sign + text


def _peer_address(request: Request) -> bytes:
    return parse_hex(request.path_params["address"], 32, "peer address")


def peer_routes(sessions: PeerSessions, *, ping_timeout: float = PING_TIMEOUT) -> list[Route]:
    """The routes over the node's sessions."""

    def connected(overlay: bytes) -> PingablePeer:
        peer = sessions.peers.get(overlay)
        if peer is None:
            raise HttpError(404, f"peer not found: {overlay.hex()} is not connected")
        return peer

    async def pingpong(request: Request) -> Response:
        overlay = _peer_address(request)
        try:
            seconds = await connected(overlay).ping(ping_timeout)
        except PingTimeout as exc:
            raise HttpError(504, f"peer {overlay.hex()} did not answer the ping: {exc}") from None
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise HttpError(404, f"peer not found: {overlay.hex()} disconnected during the ping") from None
        return JSONResponse({"rtt": go_duration(round(seconds * 1e9))})

    async def disconnect(request: Request) -> Response:
        overlay = _peer_address(request)
        connected(overlay)
        sessions.close(overlay, GoodbyeCode.NORMAL, DISCONNECT_REASON)
        return JSONResponse({"message": "OK", "code": 200})

    return [
        Route("/pingpong/{address}", handled(pingpong), methods=["POST"]),
        Route("/peers/{address}", handled(disconnect), methods=["DELETE"]),
    ]
