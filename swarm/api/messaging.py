"""Bee's messaging routes, PSS and GSOC, over live propagation (swarm/live).

- ``POST /pss/send/{topic}/{targets}?recipient=``: body = the message (at most `MAX_PSS_PAYLOAD`
  bytes); published on the live topic ``topic`` (64 hex characters, or text hashed as bee-js's
  ``Topic.fromString``) and pushed to every node subscribed to it. 201. ``targets`` (hex
  prefixes, comma separated) is checked but not used: unlike Bee's trojan chunks, the message
  reaches every subscriber, not only the nodes of those neighbourhoods, and it is signed, not
  encrypted for ``recipient``.
- ``GET /pss/subscribe/{topic}`` (WebSocket): each message on the topic as one binary frame.
- ``GET /gsoc/subscribe/{address}`` (WebSocket): each payload written at that SOC address
  (``POST /soc``, bee-js ``gsocSend``), at this node or another, as one binary frame
  (swarm/live/gsoc.py).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from string import hexdigits

import trio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from chunks.feeds import topic_from_text
from swarm.api.input import HttpError, handled, parse_address, read_body
from swarm.api.upload_postage import UploadPostage
from swarm.live.events import TopicMessage
from swarm.live.gsoc import Gsoc
from swarm.live.service import LiveService
from swarm.live.subscription import TopicSubscription

__all__ = ["MAX_PSS_PAYLOAD", "messaging_routes"]

MAX_PSS_PAYLOAD = 4000
"""Bee's largest PSS message (a trojan chunk's payload)."""


def _targets(text: str) -> list[str]:
    targets = text.split(",")
    if not all(t and len(t) <= 6 and all(c in hexdigits for c in t) for t in targets):
        raise HttpError(400, f"targets must be hex prefixes of at most 3 bytes, comma separated: {text!r}")
    return targets


async def _relay(websocket: WebSocket, listener: AbstractAsyncContextManager[TopicSubscription]) -> None:
    """Each message of the subscription to the client as a binary frame, until it leaves."""
    await websocket.accept()

    async def until_gone(scope: trio.CancelScope) -> None:
        try:
            while True:
                await websocket.receive_bytes()  # clients send nothing; this sees them go
        except (WebSocketDisconnect, KeyError, RuntimeError):
            scope.cancel()

    try:
        async with listener as subscription, trio.open_nursery() as nursery:
            nursery.start_soon(until_gone, nursery.cancel_scope)
            async for event in subscription.events():
                if isinstance(event, TopicMessage):
                    await websocket.send_bytes(event.message.payload)
    except WebSocketDisconnect:
        pass


def messaging_routes(live: LiveService, gsoc: Gsoc, postage: UploadPostage) -> list[BaseRoute]:
    async def pss_send(request: Request) -> Response:
        topic = topic_from_text(request.path_params["topic"])
        _targets(request.path_params["targets"])
        postage.batch(request)  # named and known, or none (a message is not a stored chunk)
        payload = await read_body(request, MAX_PSS_PAYLOAD, "message")
        live.publish_topic(topic, payload)
        return JSONResponse({"code": 201, "message": "Created"}, status_code=201)

    async def pss_subscribe(websocket: WebSocket) -> None:
        await _relay(websocket, live.subscribe(topic_from_text(websocket.path_params["topic"])))

    async def gsoc_subscribe(websocket: WebSocket) -> None:
        try:
            address = parse_address(websocket.path_params["address"])
        except HttpError as exc:
            await websocket.close(code=1008, reason=exc.message)
            return
        await _relay(websocket, gsoc.listen(address))

    return [
        Route("/pss/send/{topic}/{targets}", handled(pss_send), methods=["POST"]),
        WebSocketRoute("/pss/subscribe/{topic}", pss_subscribe),
        WebSocketRoute("/gsoc/subscribe/{address}", gsoc_subscribe),
    ]
