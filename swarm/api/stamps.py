"""Bee's postage routes without a chain, as its dev mode answers them (bee-js 12.1.0 parses these).

- ``POST /stamps/{amount}/{depth}`` (header ``Immutable``, default true; ``?label=``): 201
  ``{"batchID", "txHash"}``; the batch is usable at once;
- ``GET /stamps``, ``GET /stamps/{id}``: the batch with its ``utilization`` (the fullest bucket's
  count) and the fields bee-js reads; ``GET /stamps/{id}/buckets``: every bucket's count;
- ``PATCH /stamps/topup/{id}/{amount}``, ``PATCH /stamps/dilute/{id}/{depth}``: 202 ``{"batchID", "txHash"}``;
- ``GET /batches``: every batch known (here: this node's own), as Bee's global list;
- ``GET /chainstate``: a still chain at Bee's price, so bee-js can price storage;
- ``POST /envelope/{address}`` (header ``Swarm-Postage-Batch-Id``, required): the chunk stamped
  with the batch (charged as an upload would be) and the stamp signed with the node's key, as
  Bee's (`swarm.postage.envelope`): 201 ``{"issuer", "index", "timestamp", "signature"}``.

No block passes: ``batchTTL`` is the batch's balance at `PRICE` PLUR per chunk per `BLOCK_TIME`
seconds, and stays so. The transaction hash is zero (there is no transaction).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chunks.ethkey import checksum_address
from swarm.api.input import HttpError, handled, parse_address, parse_hex, parse_uint
from swarm.postage.batches import Batch, BatchFull, InvalidBatch, Issuer
from swarm.postage.book import BatchBook, UnknownBatch

__all__ = ["BLOCK_TIME", "PRICE", "postage_routes"]

PRICE = 24_000
"""PLUR per chunk per block: the price bee-js and Bee's dev mode assume."""
BLOCK_TIME = 5
"""Seconds per block (Gnosis Chain's)."""
_NO_TX = "0x" + "00" * 32


def batch_ttl(batch: Batch) -> int:
    """Seconds the batch's balance lasts at `PRICE`."""
    return batch.amount * BLOCK_TIME // PRICE


def stamp_document(issuer: Issuer) -> dict[str, object]:
    b = issuer.batch
    return {
        "batchID": b.id.hex(),
        "utilization": issuer.utilization,
        "usable": True,
        "label": b.label,
        "depth": b.depth,
        "amount": str(b.amount),
        "bucketDepth": b.bucket_depth,
        "blockNumber": b.block_number,
        "immutableFlag": b.immutable,
        "exists": True,
        "batchTTL": batch_ttl(b),
        "expired": False,
    }


def _global_document(b: Batch) -> dict[str, object]:
    return {
        "batchID": b.id.hex(),
        "value": str(b.amount),
        "start": b.block_number,
        "owner": b.owner.hex(),
        "depth": b.depth,
        "bucketDepth": b.bucket_depth,
        "immutable": b.immutable,
        "storageRadius": 0,
        "batchTTL": batch_ttl(b),
    }


def _batch_id(request: Request) -> bytes:
    return parse_hex(request.path_params["id"], 32, "batch id")


def _number(request: Request, name: str) -> int:
    value = parse_uint(request.path_params[name], name)
    assert value is not None  # a path segment is never empty
    return value


def _changed(batch: Batch, status: int) -> JSONResponse:
    return JSONResponse({"batchID": batch.id.hex(), "txHash": _NO_TX}, status_code=status)


def _envelope_batch(request: Request) -> bytes:
    raw = request.headers.get("swarm-postage-batch-id")
    if raw is None:
        raise HttpError(400, "invalid header params: Swarm-Postage-Batch-Id is required")
    try:
        return parse_hex(raw.strip(), 32, "batch id")
    except HttpError as exc:
        raise HttpError(400, f"invalid batch id: {exc.message}") from None


def postage_routes(book: BatchBook) -> list[Route]:
    """The postage routes over the node's batches."""

    def issuer(batch_id: bytes) -> Issuer:
        try:
            return book.issuer(batch_id)
        except UnknownBatch:
            raise HttpError(404, f"issuer does not exist: no batch {batch_id.hex()}") from None

    def change(what: str, batch_id: bytes, action: Callable[[], Batch]) -> Batch:
        try:
            return action()
        except UnknownBatch:
            raise HttpError(404, f"cannot {what}: no batch {batch_id.hex()}") from None
        except InvalidBatch as exc:
            raise HttpError(400, str(exc)) from None

    async def create(request: Request) -> Response:
        amount, depth = _number(request, "amount"), _number(request, "depth")
        immutable = request.headers.get("immutable", "true").strip().lower() not in ("false", "0")
        label = request.query_params.get("label", "")
        made = change(
            "create batch", bytes(32), lambda: book.create(amount, depth, immutable=immutable, label=label)
        )
        return _changed(made, 201)

    async def top_up(request: Request) -> Response:
        batch_id, amount = _batch_id(request), _number(request, "amount")
        return _changed(change("top up", batch_id, lambda: book.top_up(batch_id, amount)), 202)

    async def dilute(request: Request) -> Response:
        batch_id, depth = _batch_id(request), _number(request, "depth")
        return _changed(change("dilute", batch_id, lambda: book.dilute(batch_id, depth)), 202)

    async def stamps(request: Request) -> Response:
        return JSONResponse({"stamps": [stamp_document(i) for i in book.issuers()]})

    async def stamp(request: Request) -> Response:
        return JSONResponse(stamp_document(issuer(_batch_id(request))))

    async def buckets(request: Request) -> Response:
        found = issuer(_batch_id(request))
        counts = found.bucket_counts()
        return JSONResponse(
            {
                "depth": found.batch.depth,
                "bucketDepth": found.batch.bucket_depth,
                "bucketUpperBound": found.batch.bucket_capacity,
                "buckets": [{"bucketID": i, "collisions": n} for i, n in enumerate(counts)],
            }
        )

    async def batches(request: Request) -> Response:
        return JSONResponse({"batches": [_global_document(i.batch) for i in book.issuers()]})

    async def chain_state(request: Request) -> Response:
        return JSONResponse({"chainTip": 0, "block": 0, "totalAmount": "0", "currentPrice": str(PRICE)})

    async def reserve_state(request: Request) -> Response:
        commitment = sum(1 << i.batch.depth for i in book.issuers())  # chunks the batches may stamp
        return JSONResponse(
            {"radius": 0, "storageRadius": 0, "commitment": commitment, "reserveCapacityDoubling": 0}
        )

    async def envelope(request: Request) -> Response:
        address, batch_id = parse_address(request.path_params["address"]), _envelope_batch(request)
        try:
            signed = book.envelope(batch_id, address, time.time_ns())
        except UnknownBatch:
            raise HttpError(404, f"batch with id not found: {batch_id.hex()}") from None
        except BatchFull as exc:
            raise HttpError(402, str(exc)) from None
        return JSONResponse(
            {
                "issuer": checksum_address(signed.issuer),
                "index": signed.index.hex(),
                "timestamp": signed.timestamp.hex(),
                "signature": signed.signature.hex(),
            },
            status_code=201,
        )

    return [
        Route("/envelope/{address}", handled(envelope), methods=["POST"]),
        Route("/reservestate", handled(reserve_state), methods=["GET"]),
        Route("/stamps", handled(stamps), methods=["GET"]),
        Route("/stamps/{id}", handled(stamp), methods=["GET"]),
        Route("/stamps/{id}/buckets", handled(buckets), methods=["GET"]),
        Route("/stamps/topup/{id}/{amount}", handled(top_up), methods=["PATCH"]),
        Route("/stamps/dilute/{id}/{depth}", handled(dilute), methods=["PATCH"]),
        Route("/stamps/{amount}/{depth}", handled(create), methods=["POST"]),
        Route("/batches", handled(batches), methods=["GET"]),
        Route("/chainstate", handled(chain_state), methods=["GET"]),
    ]
