"""Bee's messaging routes, PSS and GSOC, over live propagation (swarm/live).

- ``POST /pss/send/{topic}/{targets}?recipient=``: body = the message (at most `MAX_PSS_PAYLOAD`
  bytes), ``topic`` 64 hex characters or text hashed as bee-js's ``Topic.fromString``. The message
  goes out as a signed live topic message (swarm/live/pss.py) to every node subscribed to the
  topic, and is handed to a node's subscribers only if its overlay starts with one of ``targets``
  (hex prefixes, comma separated) and, with ``recipient`` (a public key, as ``pssPublicKey`` on
  ``/addresses``), only if it is that node: the message is sealed for it. 201.
- ``GET /pss/subscribe/{topic}`` (WebSocket): each message on the topic for this node as one
  binary frame.
- ``GET /gsoc/subscribe/{address}`` (WebSocket): each payload written at that SOC address
  (``POST /soc``, bee-js ``gsocSend``), at this node or another, as one binary frame
  (swarm/live/gsoc.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import trio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from chunks.ethkey import Secp256k1Key
from chunks.feeds import topic_from_text
from streamer.messages import MAX_TOPIC_PAYLOAD
from swarm.act.records import BadPublicKey, parse_public_key
from swarm.api.input import HttpError, handled, parse_address, read_body
from swarm.api.upload_postage import UploadPostage
from swarm.live.events import TopicMessage
from swarm.live.gsoc import Gsoc
from swarm.live.pss import BadEnvelope, live_topic, open_envelope, parse_targets, seal
from swarm.live.service import LiveService
from swarm.live.subscription import TopicSubscription

__all__ = ["MAX_PSS_PAYLOAD", "messaging_routes"]

MAX_PSS_PAYLOAD = 4000
"""Bee's largest PSS message (a trojan chunk's payload)."""

log = logging.getLogger(__name__)


def _public_key(text: str) -> bytes:
    """A recipient's public key: 33 bytes compressed, 65 uncompressed, or 64 (``x || y``, as
    bee-js sends its `PublicKey`)."""
    text = text.removeprefix("0x")
    return parse_public_key("04" + text if len(text) == 128 else text)


def _same(payload: bytes) -> bytes | None:
    return payload


async def _relay(
    websocket: WebSocket,
    listener: AbstractAsyncContextManager[TopicSubscription],
    opened: Callable[[bytes], bytes | None] = _same,
) -> None:
    """Each message of the subscription to the client as a binary frame (``opened(payload)``;
    None: not one for this client), until it leaves."""
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
                if isinstance(event, TopicMessage) and (payload := opened(event.message.payload)) is not None:
                    await websocket.send_bytes(payload)
    except WebSocketDisconnect:
        pass


def messaging_routes(
    live: LiveService, gsoc: Gsoc, postage: UploadPostage, overlay: bytes, key: Secp256k1Key
) -> list[BaseRoute]:
    """``overlay`` and ``key`` (eth.key) decide which PSS messages are this node's."""

    async def pss_send(request: Request) -> Response:
        topic = topic_from_text(request.path_params["topic"])
        raw_recipient = request.query_params.get("recipient", "").strip()
        try:
            targets = parse_targets(request.path_params["targets"])
            recipient = _public_key(raw_recipient) if raw_recipient else None
        except (BadEnvelope, BadPublicKey) as exc:
            raise HttpError(400, str(exc)) from None
        postage.batch(request)  # named and known, or none (a message is not a stored chunk)
        payload = await read_body(request, MAX_PSS_PAYLOAD, "message")
        try:
            envelope = seal(topic, payload, targets, recipient)
        except BadEnvelope as exc:
            raise HttpError(400, str(exc)) from None
        if len(envelope) > MAX_TOPIC_PAYLOAD:
            too_long = f"message and targets take {len(envelope)} bytes, at most {MAX_TOPIC_PAYLOAD}"
            raise HttpError(400, too_long)
        live.publish_topic(live_topic(topic), envelope)
        return JSONResponse({"code": 201, "message": "Created"}, status_code=201)

    async def pss_subscribe(websocket: WebSocket) -> None:
        topic = topic_from_text(websocket.path_params["topic"])

        def opened(envelope: bytes) -> bytes | None:
            try:
                return open_envelope(topic, envelope, overlay, key)
            except BadEnvelope as exc:  # signed by its publisher, but not a PSS envelope
                log.debug("PSS message on %s dropped: %s", topic.hex()[:12], exc)
                return None

        await _relay(websocket, live.subscribe(live_topic(topic)), opened)

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
