"""HTTP routes of spaces (starlette), over a node's `SpaceService`.

A space in a path is its id, 40 hex characters. The first request about a space opens it at
the node (the node follows it from then on, across restarts). Reads wait (at most
``SETTLE_TIMEOUT`` s) until the replica has processed what the node holds.

- ``GET /spaces``: the spaces this node follows.
- ``GET /spaces/{space}``: name, members, counts.
- ``GET /spaces/{space}/log?mode=causal|total&from=N&limit=L&wait=S``: log entries from position
  ``N``; with ``wait``, waits up to ``S`` seconds for the first one (long polling: ``--follow``).
- ``GET /spaces/{space}/state``: the shared map, canonical JSON (byte-identical on two nodes that
  hold the same messages).
- ``GET /spaces/{space}/status``: per member, processed, held, waiting for what since when,
  invalid from where and why, active; what is missing; what holds the total order back.
- ``GET /spaces/{space}/writer/{owner}``: what the member needs to write its next message.
- ``POST /spaces/{space}/members/{index}``: body = the member list update (SOC data).
- ``POST /spaces/{space}/messages/{owner}/{index}``: body = the member's message (SOC data).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chunks.soc import MAX_SOC_DATA_SIZE
from swarm.api.input import HttpError, handled, parse_hex, parse_uint, read_body
from swarm.spaces.messages import InvalidSpaceMessage, Kind, decode_message
from swarm.spaces.reader import MODES, LogRecord
from swarm.spaces.replica import NotCaughtUp, Replica
from swarm.spaces.service import RefusedWrite, SpaceService
from swarm.spaces.sources import stored_payload

__all__ = ["SETTLE_TIMEOUT", "space_routes"]

SETTLE_TIMEOUT = 5.0
WRITER_TIMEOUT = 10.0
MAX_WAIT = 60.0
MAX_PAGE = 1000


def _number(request: Request, name: str, default: int, limit: int) -> int:
    value = parse_uint(request.query_params.get(name), name, limit)
    return default if value is None else value


def record_json(replica: Replica, record: LogRecord, position: int) -> dict[str, Any]:
    """A log entry: who, which, its timeframe and order key, and the message (read from the store)."""
    owner = record.key.owner
    doc: dict[str, Any] = {
        "position": position,
        "member": record.member,
        "owner": owner.hex(),
        "seq": record.seq,
        "order": [record.key.lamport, owner.hex(), record.seq],
        "timeframe": list(record.timeframe),
        "kind": record.kind.name.lower(),
        "written_at": record.written_at,
    }
    if record.late:
        doc["late"] = True
    if record.kind is not Kind.HEARTBEAT:
        data = replica.source.local(replica.message_address(record.member, record.seq))
        payload = None if data is None else stored_payload(data)
        try:
            message = None if payload is None else decode_message(payload)
        except InvalidSpaceMessage:
            message = None
        if message is None:
            doc["missing"] = "the message is no longer in this node's store"
        elif record.kind is Kind.SAY:
            doc["text"] = message.text
        else:
            doc["key"], doc["value"] = message.key, message.value
    return doc


def status_json(replica: Replica, now: float) -> dict[str, Any]:
    status = replica.reader.status(now)
    owners = [m.owner.hex() for m in status.members]

    def owner_of(member: int) -> str | None:
        return owners[member] if member < len(owners) else None

    members = []
    for m in status.members:
        row: dict[str, Any] = {
            "member": m.member,
            "owner": owners[m.member],
            "processed": m.processed,
            "last_processed": m.processed - 1 if m.processed else None,
            "held": m.held,
            "state": m.state,
            "active": m.active,
            "last_heard": m.last_heard,
        }
        if m.waiting is not None:
            member, seq = m.waiting.needs
            row["waiting_for"] = {
                "member": member,
                "owner": owner_of(member),
                "seq": seq,
                "since": m.waiting.since,
            }
        if m.invalid is not None:
            row["invalid"] = {"from": m.invalid[0], "reason": m.invalid[1]}
        members.append(row)
    return {
        "space": replica.space.hex(),
        "name": replica.name,
        "now": now,
        "members": members,
        "processed": status.processed,
        "ordered": status.ordered,
        "late": status.late,
        "pending_order": status.pending,
        "stalled": status.stalled,
        "missing": [
            {
                "member": m.member,
                "owner": owner_of(m.member),
                "seq": m.seq,
                "since": m.since,
                "needed_by": [list(b) for b in m.needed_by],
            }
            for m in status.missing
        ],
        "holding_back_order": [{"member": m, "owner": owners[m]} for m in status.holding_back],
        "member_list": {"read": replica.member_entries, "skipped": replica.bad_entries},
    }


def space_routes(service: SpaceService) -> list[Route]:
    """The routes over a node's space service."""
    h = _SpaceHandlers(service)
    return [
        Route("/spaces", _handled(h.spaces), methods=["GET"]),
        Route("/spaces/{space}", _handled(h.space), methods=["GET"]),
        Route("/spaces/{space}/log", _handled(h.log), methods=["GET"]),
        Route("/spaces/{space}/state", _handled(h.state), methods=["GET"]),
        Route("/spaces/{space}/status", _handled(h.status), methods=["GET"]),
        Route("/spaces/{space}/writer/{owner}", _handled(h.writer), methods=["GET"]),
        Route("/spaces/{space}/members/{index}", _handled(h.post_member), methods=["POST"]),
        Route("/spaces/{space}/messages/{owner}/{index}", _handled(h.post_message), methods=["POST"]),
    ]


def _handled(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """The handler, with the errors it raises for the client turned into error responses."""

    async def translated(request: Request) -> Response:
        try:
            return await handler(request)
        except RefusedWrite as exc:
            raise HttpError(exc.status, str(exc)) from None
        except NotCaughtUp as exc:
            raise HttpError(503, str(exc)) from None

    return handled(translated)


async def _body(request: Request) -> bytes:
    return await read_body(request, MAX_SOC_DATA_SIZE, "body (a single-owner chunk)")


def summary_json(replica: Replica) -> dict[str, Any]:
    """A space at a glance: its name, members and counts."""
    orderer = replica.reader.orderer
    return {
        "space": replica.space.hex(),
        "name": replica.name,
        "members": [{"member": m, "owner": orderer.owner(m).hex()} for m in range(orderer.members)],
        "processed": orderer.processed,
        "ordered": replica.reader.total.emitted,
        "member_list": replica.member_entries,
        "settled": replica.settled(),
    }


class _SpaceHandlers:
    """One handler per route, over the node's space service."""

    def __init__(self, service: SpaceService) -> None:
        self.service = service

    async def replica_of(self, request: Request, *, settle: bool = True) -> Replica:
        replica = await self.service.open(parse_hex(request.path_params["space"], 20, "space"))
        if settle:
            await replica.wait_settled(SETTLE_TIMEOUT)
        return replica

    async def spaces(self, request: Request) -> Response:
        return JSONResponse({"spaces": [summary_json(r) for r in self.service.replicas.values()]})

    async def space(self, request: Request) -> Response:
        return JSONResponse(summary_json(await self.replica_of(request)))

    async def log(self, request: Request) -> Response:
        mode = request.query_params.get("mode", "causal")
        if mode not in MODES:
            raise HttpError(400, f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        start = _number(request, "from", 0, 2**63)
        limit = _number(request, "limit", MAX_PAGE, MAX_PAGE)
        wait = _number(request, "wait", 0, int(MAX_WAIT))
        replica = await self.replica_of(request)
        entries = replica.reader.log(mode)
        deadline = time.monotonic() + wait
        while entries.end <= start and time.monotonic() < deadline:
            await replica.wait_changed(deadline - time.monotonic())
        page = entries.page(start, limit)
        docs = [record_json(replica, record, position) for position, record in page]
        # past the page; a short page reached the end (positions of dropped heartbeats skipped)
        after = page[-1][0] + 1 if len(page) == limit else max(start, entries.end)
        return JSONResponse({"mode": mode, "entries": docs, "next": after})

    async def state(self, request: Request) -> Response:
        replica = await self.replica_of(request)
        return Response(replica.reader.state.canonical_bytes(), media_type="application/json")

    async def status(self, request: Request) -> Response:
        return JSONResponse(status_json(await self.replica_of(request), time.time()))

    async def writer(self, request: Request) -> Response:
        owner = parse_hex(request.path_params["owner"], 20, "owner")
        replica = await self.replica_of(request, settle=False)
        view = await replica.writer_view(owner, WRITER_TIMEOUT)
        return JSONResponse(
            {
                "member": view.member,
                "next": view.next,
                "timeframe": list(view.timeframe),
                "previous": list(view.previous),
            }
        )

    async def post_member(self, request: Request) -> Response:
        space_id = parse_hex(request.path_params["space"], 20, "space")
        index = _number_path(request, "index")
        address = await self.service.publish_member_entry(space_id, index, await _body(request))
        return JSONResponse({"reference": address.hex(), "index": index}, status_code=201)

    async def post_message(self, request: Request) -> Response:
        space_id = parse_hex(request.path_params["space"], 20, "space")
        owner = parse_hex(request.path_params["owner"], 20, "owner")
        index = _number_path(request, "index")
        address = await self.service.publish_message(space_id, owner, index, await _body(request))
        return JSONResponse({"reference": address.hex(), "index": index}, status_code=201)


def _number_path(request: Request, name: str) -> int:
    value = parse_uint(request.path_params[name], name)
    assert value is not None  # a path segment is never empty
    return value
