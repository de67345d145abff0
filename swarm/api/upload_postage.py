"""The postage batch an upload names, checked and charged as Bee does, for every upload route.

``Swarm-Postage-Batch-Id`` (64 hex characters) names a batch of this node; a pre-signed
``Swarm-Postage-Stamp`` (113 bytes in hex: batch id, index, timestamp, signature) is taken for
the batch it names, its signature unchecked. The choices (docs/bee-compat.md):

- a malformed id: 400 ``invalid batch id``; an id this node has no batch for: 404 ``batch with id
  not found`` (as Bee);
- **no header at all: accepted, nothing counted** (unlike Bee, which answers 400): this network
  does not need stamps to move chunks, and the node's own command line uploads without one;
- a chunk that an immutable batch has no room for: 402 ``batch is overissued`` (as Bee), before
  the chunk is stored; a mutable batch wraps its full buckets instead.
"""

from __future__ import annotations

from starlette.requests import Request

from chunks import Chunk
from swarm.api.input import HttpError, parse_hex
from swarm.postage.batches import BatchFull
from swarm.postage.book import BatchBook, UnknownBatch
from swarm.postage.envelope import STAMP_SIZE

__all__ = ["UploadPostage"]


class UploadPostage:
    """Reads an upload's batch and stamps its chunks with it; ``book`` None: no postage at all."""

    def __init__(self, book: BatchBook | None) -> None:
        self.book = book

    def batch(self, request: Request) -> bytes | None:
        """The batch the request names (checked to exist), or None if it names none."""
        raw = request.headers.get("swarm-postage-batch-id")
        if raw is None and "swarm-postage-stamp" in request.headers:
            stamp = parse_hex(request.headers["swarm-postage-stamp"], STAMP_SIZE, "postage stamp")
            raw = stamp[:32].hex()
        if raw is None:
            return None
        try:
            batch_id = parse_hex(raw.strip(), 32, "batch id")
        except HttpError as exc:
            raise HttpError(400, f"invalid batch id: {exc.message}") from None
        if self.book is not None:
            try:
                self.book.issuer(batch_id)
            except UnknownBatch:
                raise HttpError(404, f"batch with id not found: {batch_id.hex()}") from None
        return batch_id

    def stamp(self, batch_id: bytes | None, chunks: list[Chunk]) -> None:
        """Charge ``chunks`` to the batch (nothing if None); 402 if an immutable one is full."""
        if batch_id is None or self.book is None:
            return
        try:
            self.book.stamp(batch_id, [chunk.address for chunk in chunks])
        except BatchFull as exc:
            raise HttpError(402, str(exc)) from None
        except UnknownBatch:
            raise HttpError(404, f"batch with id not found: {batch_id.hex()}") from None
