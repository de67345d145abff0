"""HTTP routes of live propagation: follow and subscribe as server-sent events, publish, the loss table.

Server-sent events (``text/event-stream``) rather than a WebSocket: a live stream only flows one
way, every browser reads it with ``EventSource`` (which reconnects by itself and sends the last
event's id back as ``Last-Event-ID``), ``curl -N`` shows it as text, and it is plain HTTP through
starlette on hypercorn's trio worker. Each event is ``event: NAME`` and one line of JSON
``data:`` (`swarm.live.events`); feed updates carry ``id: INDEX``, so a reconnecting client
resumes after the last update it got. A comment line every 15 s keeps idle streams open.

- ``GET /live/feeds/{owner}/{topic}?from=INDEX&mode=light|full``: follow a feed (events
  ``start``, ``update``, ``loss``, ``advisory``); without ``from``, from the next update on.
- ``POST /live/feeds/{owner}/{topic}/{index}``: body = the update's single-owner chunk data,
  signed by the owner; stored and pushed. 201, or 400 (not a valid update), 409 (another update
  is known at that index).
- ``GET /live/feeds/{owner}/{topic}/next``: ``{"next", "latest"}``, where to write next.
- ``GET /live/topics/{topic}``: subscribe to a topic (events ``message``, ``loss``, ``advisory``).
- ``POST /live/topics/{topic}``: body = the message (at most 4096 bytes), signed with this node's
  key (``DIR/eth.key``) and pushed; 201 ``{"seq", "chain", "publisher", "pushed"}``.
- ``GET /loss``: the loss table (`swarm.live.report`).

A topic in a path is 64 hex characters, or any other text, which is hashed as bee-js does
(`chunks.feeds.topic_from_text`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable

import trio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from chunks.feeds import topic_from_text, update_address
from streamer.messages import MAX_CHUNK_DATA_SIZE, MAX_TOPIC_PAYLOAD
from swarm.api.input import HttpError, flag, handled, parse_hex, parse_uint, read_body
from swarm.feeds.finder import find_latest
from swarm.live.events import LiveEvent, event_json
from swarm.live.feed_order import MODES
from swarm.live.messages import InvalidLiveMessage
from swarm.live.report import loss_document
from swarm.live.results import Equivocation
from swarm.live.service import LiveService

__all__ = ["KEEPALIVE", "live_routes"]

KEEPALIVE = 15.0
"""Seconds of silence after which a stream sends a comment line (proxies close idle streams)."""
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _feed(request: Request) -> tuple[bytes, bytes]:
    owner = parse_hex(request.path_params["owner"], 20, "owner")
    return owner, topic_from_text(request.path_params["topic"])


def _sse(event: LiveEvent) -> str:
    name, doc = event_json(event)
    lines = []
    if name == "update":
        lines.append(f"id: {doc['index']}")
    lines += [f"event: {name}", "data: " + json.dumps(doc, separators=(",", ":")), "", ""]
    return "\n".join(lines)


async def _stream(receive: Callable[[], Awaitable[LiveEvent]]) -> AsyncIterator[str]:
    """The events as SSE text, with a keep-alive comment whenever nothing came for KEEPALIVE s.

    `receive` must be cancel-safe (a memory channel's, `TopicSubscription.receive`): the
    keep-alive timer cancels it, and an idle stream stays open for good. It ends the stream
    by raising trio.EndOfChannel.
    """
    while True:
        event = None
        with trio.move_on_after(KEEPALIVE):
            try:
                event = await receive()
            except trio.EndOfChannel:
                return
        yield ": keep-alive\n\n" if event is None else _sse(event)


async def _nothing_to_do(address: bytes, *, wait: bool) -> None:
    return None


def live_routes(
    live: LiveService,
    overlay: bytes,
    durable: Callable[..., Awaitable[object]] = _nothing_to_do,
) -> list[Route]:
    """The live routes over a node's live service. ``durable(address, wait=...)`` pushes a
    published update's chunk as an upload is pushed, waiting (``wait``) until two nodes of its
    neighbourhood hold it, so that a read at any node right after the answer finds it."""
    api = _LiveRoutes(live, overlay, durable)
    return [
        Route("/live/feeds/{owner}/{topic}", handled(api.follow), methods=["GET"]),
        Route("/live/feeds/{owner}/{topic}/next", handled(api.next_index), methods=["GET"]),
        Route("/live/feeds/{owner}/{topic}/{index}", handled(api.publish_update), methods=["POST"]),
        Route("/live/topics/{topic}", handled(api.subscribe), methods=["GET"]),
        Route("/live/topics/{topic}", handled(api.publish_message), methods=["POST"]),
        Route("/loss", handled(api.loss), methods=["GET"]),
    ]


class _LiveRoutes:
    """The handlers of the live routes over one node's live service."""

    def __init__(self, live: LiveService, overlay: bytes, durable: Callable[..., Awaitable[object]]) -> None:
        self.live = live
        self.overlay = overlay
        self.durable = durable

    async def follow(self, request: Request) -> Response:
        owner, topic = _feed(request)
        start = parse_uint(request.query_params.get("from"), "from")
        last = parse_uint(request.headers.get("last-event-id"), "Last-Event-ID")
        if last is not None:
            start = last + 1  # EventSource reconnecting: resume after the last update it got
        mode = request.query_params.get("mode", "light")
        if mode not in MODES:
            raise HttpError(400, f"mode must be one of {', '.join(MODES)}, got {mode!r}")

        async def body() -> AsyncIterator[str]:
            async with self.live.follow(owner, topic, start=start, mode=mode) as follower:
                async for text in _stream(follower.events.receive):
                    yield text

        return StreamingResponse(body(), media_type="text/event-stream", headers=_SSE_HEADERS)

    async def subscribe(self, request: Request) -> Response:
        topic = topic_from_text(request.path_params["topic"])

        async def body() -> AsyncIterator[str]:
            async with self.live.subscribe(topic) as subscription:
                async for text in _stream(subscription.receive):
                    yield text

        return StreamingResponse(body(), media_type="text/event-stream", headers=_SSE_HEADERS)

    async def publish_update(self, request: Request) -> Response:
        owner, topic = _feed(request)
        index = parse_uint(request.path_params["index"], "index")
        assert index is not None
        data = await read_body(request, MAX_CHUNK_DATA_SIZE)
        try:
            published = self.live.publish_feed_update(owner, topic, index, data)
        except InvalidLiveMessage as exc:
            raise HttpError(400, str(exc)) from None
        except Equivocation as exc:
            raise HttpError(409, str(exc)) from None
        doc = {
            "reference": update_address(owner, topic, index).hex(),
            "index": index,
            "outcome": published.outcome,
            "pushed": published.pushed,
        }
        wait = not flag(request, "swarm-deferred-upload")
        await self.durable(update_address(owner, topic, index), wait=wait)
        return JSONResponse(doc, status_code=201)

    async def next_index(self, request: Request) -> Response:
        owner, topic = _feed(request)
        timeout = self.live.config.follower.lookup_timeout
        latest = await find_latest(self.live.fetch, owner, topic, probe_timeout=timeout)
        index = None if latest is None else latest.index
        return JSONResponse({"latest": index, "next": 0 if index is None else index + 1})

    async def publish_message(self, request: Request) -> Response:
        topic = topic_from_text(request.path_params["topic"])
        payload = await read_body(request, MAX_TOPIC_PAYLOAD)
        published = self.live.publish_topic(topic, payload)
        assert published.seq is not None
        doc = {
            "topic": topic.hex(),
            "publisher": self.live.key.owner.hex(),
            "seq": f"{published.seq:#018x}",
            "chain": f"{published.chain:#018x}" if published.chain else None,
            "pushed": published.pushed,
        }
        return JSONResponse(doc, status_code=201)

    async def loss(self, request: Request) -> Response:
        return JSONResponse(loss_document(self.overlay, self.live.statistics()))
