"""Bee's `Swarm-Act` headers on uploads and downloads (pkg/api/accesscontrol.go's handlers).

An upload with `Swarm-Act: true` answers the reference encrypted with the access key of the
node's ACT (the one `Swarm-Act-History-Address` names for now, else a new history and ACT), and
the history in the `Swarm-Act-History-Address` header. A download naming `Swarm-Act-Publisher`
and `Swarm-Act-History-Address` (and `Swarm-Act-Timestamp`, default now) first decrypts its
reference with the access key this node finds as the publisher's grantee; 404 when it has none.
"""

from __future__ import annotations

from typing import Protocol

from starlette.requests import Request

from chunks import InvalidChunk
from swarm.act.records import ActNotFound, BadPublicKey, parse_public_key
from swarm.act.service import Store, TooLarge
from swarm.api.input import HttpError, flag, parse_hex, parse_uint
from swarm.files.chunker import CorruptTree
from swarm.manifest.nodes import InvalidManifest
from swarm.net.retrieval import ChunkUnavailable

__all__ = ["ActReferences", "act_download_reference", "act_upload_reference"]

HISTORY = "swarm-act-history-address"


class ActReferences(Protocol):
    async def encrypt_reference(
        self, store: Store, reference: bytes, history: bytes | None
    ) -> tuple[bytes, bytes]: ...

    async def decrypt_reference(
        self, encrypted: bytes, publisher: bytes, history: bytes, timestamp: int | None = None
    ) -> bytes: ...


async def act_upload_reference(
    request: Request, act: ActReferences, store: Store, reference: bytes
) -> tuple[bytes, dict[str, str]]:
    """(the reference to answer, extra headers) of an upload: as it is without `Swarm-Act: true`."""
    if not flag(request, "swarm-act"):
        return reference, {}
    history = _history(request)
    try:
        encrypted, history_ref = await act.encrypt_reference(store, reference, history)
    except _NOT_FOUND as exc:
        raise HttpError(404, f"act or history entry not found: {exc}") from None
    headers = {HISTORY: history_ref.hex(), "access-control-expose-headers": HISTORY}
    return encrypted, headers


async def act_download_reference(request: Request, act: ActReferences, reference: bytes) -> bytes:
    """The reference a download reads: decrypted when it names a publisher and a history."""
    raw_publisher = request.headers.get("swarm-act-publisher")
    history = _history(request)
    if raw_publisher is None or history is None:
        return reference
    try:
        publisher = parse_public_key(raw_publisher.strip())
    except BadPublicKey as exc:
        raise HttpError(400, f"Swarm-Act-Publisher: {exc}") from None
    timestamp = parse_uint(request.headers.get("swarm-act-timestamp"), "Swarm-Act-Timestamp")
    try:
        return await act.decrypt_reference(reference, publisher, history, timestamp)
    except _NOT_FOUND as exc:
        raise HttpError(404, f"act or history entry not found: {exc}") from None


_NOT_FOUND = (ActNotFound, ChunkUnavailable, InvalidManifest, InvalidChunk, CorruptTree, TooLarge)


def _history(request: Request) -> bytes | None:
    raw = request.headers.get(HISTORY)
    return None if raw is None else parse_hex(raw.strip(), 32, "Swarm-Act-History-Address")
