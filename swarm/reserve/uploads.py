"""Uploads and pins as the HTTP API and the command line see them.

An upload (``POST /bytes``) is a `Tag` of the pusher (swarm/reserve/pusher.py): its chunks are stored
through the intake, signed for or queued for pushing as they are split, and when the body ends
the upload is pinned if asked (``Swarm-Pin: true``) and waits, unless told not to
(``Swarm-Deferred-Upload: true``), until every chunk is durable (or, for a single-receipt
upload, ``Swarm-Receipts: 1``, has one storer's receipt) or `receipt_timeout` passes.
Its answer says how many chunks have receipts and which have not yet. A pin (``swarm pin add``,
``POST /pins/{reference}``) fetches whatever chunks of the file this node lacks, stores them, and
keeps the file outside the reserve's accounting (localstore/pins.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from chunks import Chunk
from chunks.chunk import ADDRESS_SIZE
from localstore.pins import Pins
from swarm.files.chunker import child_refs, is_data_chunk
from swarm.files.encryption import ENCRYPTED_REF_SIZE, open_encrypted
from swarm.reserve.pusher import Pusher, Tag

__all__ = ["UploadSession", "Uploads"]

RECEIPT_TIMEOUT = 60.0
"""How long an upload waits for its last receipts before it answers with what is missing."""
LISTED = 20
"""Chunks without a receipt named in an upload's answer (the count is always given)."""


class UploadSession:
    """One upload under way: its tag, every chunk address it stored, and the receipts each
    chunk waits for (2: durable; 1: a single-receipt upload)."""

    def __init__(self, tag: Tag, store: Callable[[Tag, list[Chunk], int], None], receipts: int = 2) -> None:
        self.tag = tag
        self.addresses: list[bytes] = []
        self.receipts = receipts
        self._store = store

    def store(self, chunks: list[Chunk]) -> None:
        self._store(self.tag, chunks, self.receipts)
        self.addresses.extend(chunk.address for chunk in chunks)


class Uploads:
    """Upload sessions, their receipts and pins, over the node's narrow functions."""

    def __init__(
        self,
        pusher: Pusher,
        pins: Pins,
        *,
        store_chunks: Callable[[list[Chunk]], int],
        store_checked: Callable[[list[Chunk]], int] | None = None,
        get_chunk: Callable[[bytes], Awaitable[Chunk]],
        protected_changed: Callable[[], None] = lambda: None,
        receipt_timeout: float = RECEIPT_TIMEOUT,
    ) -> None:
        self.pusher = pusher
        self.pins = pins
        self._store_chunks = store_chunks
        self._store_checked = store_checked
        self._get_chunk = get_chunk
        self._protected_changed = protected_changed
        self.receipt_timeout = receipt_timeout

    def begin(self, uid: int | None = None, *, receipts: int = 2) -> UploadSession:
        """A new upload, under an existing tag (``Swarm-Tag``) or a new one; its chunks wait for
        ``receipts`` (2: durable, 1: one storer's receipt)."""
        if receipts not in (1, 2):
            raise ValueError(f"an upload waits for 1 or 2 receipts per chunk, not {receipts}")
        tag = (self.pusher.tag(uid) if uid is not None else None) or self.pusher.new_tag()
        return UploadSession(tag, self._store, receipts)

    def store_and_push(self, chunks: list[Chunk], *, verified: bool, receipts: int = 2) -> tuple[int, Tag]:
        """Chunks uploaded one by one (``POST /chunks``, Bee's SOC and feed routes, a space's
        messages): stored, and pushed like a file's; returns how many were new and their tag, which
        `Tag.wait` waits on until each has ``receipts`` (2: durable, 1: one storer's)."""
        tag = self.pusher.new_tag()
        new = self._store_chunks_checked(chunks, verified)
        tag.seen += len(chunks) - new
        addresses = [chunk.address for chunk in chunks]
        self.pusher.add(tag, addresses, receipts=receipts)
        self.pusher.finish(tag, addresses[0] if addresses else bytes(32), addresses)
        return new, tag

    async def put(self, chunks: list[Chunk], *, verified: bool, wait: bool, receipts: int = 2) -> int:
        """`store_and_push`, then (``wait``) until every chunk has its receipts or `receipt_timeout`
        passes; returns how many were new."""
        new, tag = self.store_and_push(chunks, verified=verified, receipts=receipts)
        if wait:
            await tag.wait(self.receipt_timeout)
        return new

    def _store_chunks_checked(self, chunks: list[Chunk], verified: bool) -> int:
        if verified or self._store_checked is None:
            return self._store_chunks(chunks)
        return self._store_checked(chunks)

    def _store(self, tag: Tag, chunks: list[Chunk], receipts: int = 2) -> None:
        new = self._store_chunks(chunks)
        tag.seen += len(chunks) - new
        self.pusher.add(tag, [chunk.address for chunk in chunks], receipts=receipts)

    async def finish(
        self, session: UploadSession, reference: bytes, *, pin: bool, wait: bool
    ) -> dict[str, Any]:
        """The upload's body has ended: pin it if asked, wait for receipts unless told not to,
        and return what to answer about them. An encrypted file is pinned by its whole reference
        (as Bee lists it); its tag names the root's address."""
        if pin:
            self.pins.pin(reference, session.addresses)
            self._protected_changed()
        self.pusher.finish(session.tag, reference[:ADDRESS_SIZE], session.addresses)
        if wait:
            await session.tag.wait(self.receipt_timeout)
        return self.tag_document(session.tag)

    def tag_document(self, tag: Tag) -> dict[str, Any]:
        """Bee's tag fields, with the chunks still waiting for a receipt."""
        waiting = self.pusher.waiting(tag)
        return {
            "uid": tag.uid,
            "split": tag.split,
            "seen": tag.seen,
            "stored": tag.stored,
            "sent": tag.sent,
            "synced": tag.synced,
            "address": tag.address.hex() if tag.address else "",
            "startedAt": _iso(tag.started),
            "receipts": tag.synced,
            "without_receipt": len(waiting),
            "missing": [{"address": a.hex(), "error": self.pusher.last_error(a)} for a in waiting[:LISTED]],
        }

    # -- pins -----------------------------------------------------------------------------------

    async def pin(self, reference: bytes) -> int:
        """Pin the file at ``reference``, fetching and storing the chunks this node lacks; return
        how many chunks it has. Raises ChunkUnavailable if one cannot be fetched. An encrypted
        file's reference (64 bytes) names its chunks by address and key: they are stored as they
        are (encrypted) and opened only to find their children."""
        addresses: list[bytes] = []
        level = [reference]
        while level:
            chunks = [await self._get_chunk(ref[:ADDRESS_SIZE]) for ref in level]
            self._store_chunks(chunks)
            addresses.extend(ref[:ADDRESS_SIZE] for ref in level)
            opened = [_opened(chunk, ref) for chunk, ref in zip(chunks, level, strict=True)]
            level = [ref for chunk in opened if not is_data_chunk(chunk) for ref, _ in child_refs(chunk)]
        self.pins.pin(reference, addresses)
        self._protected_changed()
        return len(dict.fromkeys(addresses))

    def unpin(self, reference: bytes) -> bool:
        released = self.pins.unpin(reference)
        self._protected_changed()
        return released is not None


def _opened(chunk: Chunk, reference: bytes) -> Chunk:
    """The chunk as its tree reads it: decrypted if ``reference`` carries a key."""
    return open_encrypted(chunk, reference) if len(reference) == ENCRYPTED_REF_SIZE else chunk


def _iso(when: float) -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
