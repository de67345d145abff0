"""Files in and out of a node: upload through the chunker, download with bounded prefetching.

Upload streams the body through a `Splitter` and stores each finished chunk, so memory stays
bounded whatever the file size. Download walks the chunk tree with the chunker's verifying
joiner, reading only the chunks of the requested byte range; the chunks the walk will need next
(the children of each intermediate chunk in the range) are fetched ahead, a bounded number at a
time, so a file held by remote peers does not cost one round trip per chunk.

A download streamed after its status line has gone out can no longer fail with a status, so
`fetch_intermediates` fetches and verifies every intermediate chunk of the range first: after
it, only a missing data chunk can cut such a download short.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import trio

from chunks import CHUNK_SIZE, Chunk
from swarm.files.chunker import Splitter, child_refs, children_in_range
from swarm.files.joiner import check_chunk, join

Fetch = Callable[[bytes], Awaitable[Chunk]]

HELD_INTERMEDIATES = 16 * 2**20
"""Bytes of intermediate chunks `fetch_intermediates` keeps for the download (those of about
2 GiB of file); beyond them chunks are verified and dropped, and fetched again when streamed."""


@dataclass
class _Slot:
    done: trio.Event = field(default_factory=trio.Event)
    chunk: Chunk | None = None
    error: BaseException | None = None


class Prefetcher:
    """Wraps `fetch`: the chunks the joiner announces (`ahead`) are requested ahead of time.

    Each prefetched chunk is handed out once and then dropped, so it holds at most the children
    of the intermediates on the current path.
    """

    def __init__(self, fetch: Fetch, nursery: trio.Nursery, *, concurrency: int = 16) -> None:
        self._fetch = fetch
        self._nursery = nursery
        self._limit = trio.Semaphore(concurrency)
        self._slots: dict[bytes, _Slot] = {}

    def ahead(self, addresses: Sequence[bytes]) -> None:
        for address in addresses:
            if address not in self._slots:
                slot = self._slots[address] = _Slot()
                self._nursery.start_soon(self._prefetch, address, slot)

    async def fetch(self, address: bytes) -> Chunk:
        slot = self._slots.pop(address, None)
        if slot is None:
            return await self._fetch(address)
        await slot.done.wait()
        if slot.error is not None:
            raise slot.error
        assert slot.chunk is not None
        return slot.chunk

    async def _prefetch(self, address: bytes, slot: _Slot) -> None:
        async with self._limit:
            try:
                slot.chunk = await self._fetch(address)
            except Exception as exc:  # handed to whoever asks for this chunk
                slot.error = exc
            finally:
                slot.done.set()


async def read_file(
    reference: bytes, fetch: Fetch, *, start: int = 0, end: int | None = None, concurrency: int = 16
) -> bytes:
    """The bytes [start, end) of the file at `reference`, verified chunk by chunk (for ranges
    that fit in memory)."""
    pieces: list[bytes] = []
    await stream_file(reference, fetch, _append(pieces), start=start, end=end, concurrency=concurrency)
    return b"".join(pieces)


def _append(pieces: list[bytes]) -> Callable[[bytes], Awaitable[None]]:
    async def send(piece: bytes) -> None:
        pieces.append(piece)

    return send


async def stream_file(
    reference: bytes,
    fetch: Fetch,
    send: Callable[[bytes], Awaitable[None]],
    *,
    start: int = 0,
    end: int | None = None,
    concurrency: int = 16,
) -> None:
    """Hand the bytes [start, end) of the file to `send` piece by piece, verified chunk by chunk."""
    async with _nursery() as nursery:
        prefetcher = Prefetcher(fetch, nursery, concurrency=concurrency)
        async for piece in join(reference, prefetcher.fetch, start=start, end=end, ahead=prefetcher.ahead):
            await send(piece)
        nursery.cancel_scope.cancel()


async def fetch_intermediates(
    root: Chunk, fetch: Fetch, start: int, end: int, *, concurrency: int = 16, keep: int = HELD_INTERMEDIATES
) -> dict[bytes, Chunk]:
    """Fetch and verify every intermediate chunk under `root` that covers bytes of [start, end),
    level by level, `concurrency` at a time; returns those kept (up to `keep` bytes of them).

    Raises what `fetch` raises for a missing chunk, `InvalidChunk` or `CorruptTree` for a bad
    one. Data chunks are recognised by their span (at most 4096), so none is fetched.
    """
    held: dict[bytes, Chunk] = {}
    kept = 0
    level = _intermediates_below(root, 0, start, end)
    while level:
        below = []
        for first in range(0, len(level), _BATCH):  # a batch at a time: bounded memory
            batch = level[first : first + _BATCH]
            fetched = await _fetch_all(fetch, [address for address, _, _ in batch], concurrency)
            for (address, span, offset), chunk in zip(batch, fetched, strict=True):
                check_chunk(chunk, address, span)
                below += _intermediates_below(chunk, offset, start, end)
                if kept + len(chunk.data) <= keep:
                    held[address] = chunk
                    kept += len(chunk.data)
        level = below
    return held


_BATCH = 512


async def fetch_tree(reference: bytes, fetch: Fetch, *, concurrency: int = 16) -> list[Chunk]:
    """Every chunk of the file at `reference`, data chunks included, fetched level by level
    `concurrency` at a time and each checked against its parent; raises as `fetch_intermediates`."""
    root = await fetch(reference)
    tree, level = [root], [(reference, root)]
    while level:
        children = [child for _, chunk in level for child in child_refs(chunk)]
        fetched = await _fetch_all(fetch, [address for address, _ in children], concurrency)
        for (address, span), chunk in zip(children, fetched, strict=True):
            check_chunk(chunk, address, span)
        tree += fetched
        level = [(address, chunk) for (address, _), chunk in zip(children, fetched, strict=True)]
    return tree


def _intermediates_below(chunk: Chunk, offset: int, start: int, end: int) -> list[tuple[bytes, int, int]]:
    return [child for child in children_in_range(chunk, offset, start, end) if child[1] > CHUNK_SIZE]


async def _fetch_all(fetch: Fetch, addresses: list[bytes], concurrency: int) -> list[Chunk]:
    """The chunks at `addresses`, in order, fetched `concurrency` at a time; the first failure
    cancels the rest and is raised."""
    results: list[Chunk | None] = [None] * len(addresses)
    limit = trio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with limit:
            results[i] = await fetch(addresses[i])

    async with _nursery() as nursery:
        for i in range(len(addresses)):
            nursery.start_soon(one, i)
    return [chunk for chunk in results if chunk is not None]


@asynccontextmanager
async def _nursery() -> AsyncIterator[trio.Nursery]:
    """A nursery that raises its first failure as it is rather than inside an ExceptionGroup, so
    callers catch the errors a download meets (a missing chunk, a corrupt one) by their names.
    A cancellation (a BaseExceptionGroup) passes through untouched."""
    try:
        async with trio.open_nursery() as nursery:
            yield nursery
    except ExceptionGroup as group:
        raise group.exceptions[0] from None


class Upload:
    """Feeds bytes through the splitter and stores every finished chunk with `store`."""

    def __init__(self, store: Callable[[list[Chunk]], object]) -> None:
        self._splitter = Splitter()
        self._store = store
        self.chunks = 0

    def feed(self, data: bytes) -> None:
        chunks = self._splitter.feed(data)
        if chunks:
            self._store(chunks)
            self.chunks += len(chunks)

    def finish(self) -> bytes:
        reference, chunks = self._splitter.finish()
        self._store(chunks)
        self.chunks += len(chunks)
        return reference

    @property
    def size(self) -> int:
        return self._splitter.bytes_in
