"""Files in and out of a node: upload through the chunker, download with bounded prefetching.

Upload streams the body through a `Splitter` and stores each finished chunk, so memory stays
bounded whatever the file size. Download walks the chunk tree with the chunker's verifying
joiner; when an intermediate chunk arrives, its children are fetched ahead, a bounded number at
a time, so a file held by remote peers does not cost one round trip per chunk.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import trio

from localstore import Chunk
from swarm.chunker import CorruptTree, Splitter, child_refs, is_data_chunk, join

Fetch = Callable[[bytes], Awaitable[Chunk]]


@dataclass
class _Slot:
    done: trio.Event = field(default_factory=trio.Event)
    chunk: Chunk | None = None
    error: BaseException | None = None


class Prefetcher:
    """Wraps `fetch`: children of every intermediate chunk fetched are requested ahead of time.

    Each prefetched chunk is handed out once and then dropped, so the cache holds at most the
    children of the intermediates on the current path.
    """

    def __init__(self, fetch: Fetch, nursery: trio.Nursery, *, concurrency: int = 16) -> None:
        self._fetch = fetch
        self._nursery = nursery
        self._limit = trio.Semaphore(concurrency)
        self._slots: dict[bytes, _Slot] = {}

    async def fetch(self, address: bytes) -> Chunk:
        slot = self._slots.pop(address, None)
        if slot is None:
            chunk = await self._fetch(address)
        else:
            await slot.done.wait()
            if slot.error is not None:
                raise slot.error
            assert slot.chunk is not None
            chunk = slot.chunk
        if not is_data_chunk(chunk):
            try:
                children = child_refs(chunk)
            except CorruptTree:
                return chunk  # the joiner reports it
            for child, _span in children:
                if child not in self._slots:
                    slot = self._slots[child] = _Slot()
                    self._nursery.start_soon(self._prefetch, child, slot)
        return chunk

    async def _prefetch(self, address: bytes, slot: _Slot) -> None:
        async with self._limit:
            try:
                slot.chunk = await self._fetch(address)
            except Exception as exc:  # handed to whoever asks for this chunk
                slot.error = exc
            finally:
                slot.done.set()


async def read_file(reference: bytes, fetch: Fetch, *, concurrency: int = 16) -> bytes:
    """The whole file at `reference`, verified chunk by chunk (for files that fit in memory)."""
    pieces = []
    async with trio.open_nursery() as nursery:
        prefetcher = Prefetcher(fetch, nursery, concurrency=concurrency)
        async for piece in join(reference, prefetcher.fetch):
            pieces.append(piece)
        nursery.cancel_scope.cancel()
    return b"".join(pieces)


async def stream_file(
    reference: bytes, fetch: Fetch, send: Callable[[bytes], Awaitable[None]], *, concurrency: int = 16
) -> None:
    """Hand the file's bytes to `send` piece by piece, verified chunk by chunk."""
    async with trio.open_nursery() as nursery:
        prefetcher = Prefetcher(fetch, nursery, concurrency=concurrency)
        async for piece in join(reference, prefetcher.fetch):
            await send(piece)
        nursery.cancel_scope.cancel()


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
