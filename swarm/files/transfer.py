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

from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field

import trio

from chunks import CHUNK_SIZE, Chunk
from swarm.files.chunker import CorruptTree, Splitter, child_refs, children_in_range
from swarm.files.encryption import ENCRYPTED_REF_SIZE, EncryptingSeal, open_encrypted
from swarm.files.joiner import check_chunk, join

Fetch = Callable[[bytes], Awaitable[Chunk]]

WINDOW = 32
"""Chunks a download fetches ahead at most at once (its window of retrievals in flight)."""

HELD_INTERMEDIATES = 16 * 2**20
"""Bytes of intermediate chunks `fetch_intermediates` keeps for the download (those of about
2 GiB of file); beyond them chunks are verified and dropped, and fetched again when streamed."""

CHECKED_INTERMEDIATES = 16384
"""Distinct intermediate chunks `fetch_intermediates` verifies at most (those of 8 GiB of
distinct file bytes); the ones beyond are verified as the download streams."""


@dataclass
class _Slot:
    done: trio.Event = field(default_factory=trio.Event)
    chunk: Chunk | None = None
    error: BaseException | None = None


class Prefetcher:
    """Wraps `fetch`: the chunks the joiner announces (`ahead`) are requested ahead of time.

    At most ``concurrency`` fetches run at once, in the order announced: that many fetcher
    tasks at most, each taking the next announced chunk until none is left (a task per fetcher,
    not per chunk). Each prefetched chunk is handed out once and then dropped, so it holds at
    most the children of the intermediates on the current path.
    """

    def __init__(self, fetch: Fetch, nursery: trio.Nursery, *, concurrency: int = WINDOW) -> None:
        self._fetch = fetch
        self._nursery = nursery
        self._concurrency = concurrency
        self._fetchers = 0
        self._queue: deque[tuple[bytes, _Slot]] = deque()
        self._slots: dict[bytes, _Slot] = {}

    def ahead(self, addresses: Sequence[bytes]) -> None:
        for address in addresses:
            if address not in self._slots:
                slot = self._slots[address] = _Slot()
                self._queue.append((address, slot))
        for _ in range(min(self._concurrency - self._fetchers, len(self._queue))):
            self._fetchers += 1
            self._nursery.start_soon(self._fetcher)

    async def fetch(self, address: bytes) -> Chunk:
        slot = self._slots.pop(address, None)
        if slot is None:
            return await self._fetch(address)
        await slot.done.wait()
        if slot.error is not None:
            raise slot.error
        assert slot.chunk is not None
        return slot.chunk

    async def _fetcher(self) -> None:
        try:
            while self._queue:
                address, slot = self._queue.popleft()
                try:
                    slot.chunk = await self._fetch(address)
                except Exception as exc:  # handed to whoever asks for this chunk
                    slot.error = exc
                finally:
                    slot.done.set()
        finally:
            self._fetchers -= 1


async def read_file(
    reference: bytes, fetch: Fetch, *, start: int = 0, end: int | None = None, concurrency: int = WINDOW
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
    concurrency: int = WINDOW,
) -> None:
    """Hand the bytes [start, end) of the file to `send` piece by piece, verified chunk by chunk."""
    async with _nursery() as nursery:
        prefetcher = Prefetcher(fetch, nursery, concurrency=concurrency)
        async for piece in join(reference, prefetcher.fetch, start=start, end=end, ahead=prefetcher.ahead):
            await send(piece)
        nursery.cancel_scope.cancel()


async def fetch_intermediates(
    root: Chunk,
    fetch: Fetch,
    start: int,
    end: int,
    *,
    concurrency: int = WINDOW,
    keep: int = HELD_INTERMEDIATES,
    budget: int = CHECKED_INTERMEDIATES,
) -> dict[bytes, Chunk]:
    """Fetch and verify the intermediate chunks under `root` that cover bytes of [start, end),
    depth first, the children of one chunk `concurrency` at a time; returns those kept (up to
    `keep` bytes of them).

    The walk is lazy: it holds the children of one chunk per level (at most 128 x 7), never a
    whole level. A subtree whose address was already verified whole is not walked again (the
    same address is the same bytes), so a tree that repeats references costs its distinct
    chunks, not its span. After `budget` fetches it stops: the rest is verified as it is streamed.
    Raises what `fetch` raises for a missing chunk, `InvalidChunk` or `CorruptTree` for a bad
    one. Data chunks are recognised by their span (at most 4096), so none is fetched.
    """
    check = _IntermediateCheck(fetch, start, end, concurrency, keep, budget)
    with suppress(_BudgetSpent):
        await check.below(root, 0)
    return check.held


class _BudgetSpent(Exception):
    pass


class _IntermediateCheck:
    """The state of one `fetch_intermediates` walk."""

    def __init__(self, fetch: Fetch, start: int, end: int, concurrency: int, keep: int, budget: int) -> None:
        self.fetch, self.start, self.end, self.concurrency = fetch, start, end, concurrency
        self.keep, self.budget = keep, budget
        self.held: dict[bytes, Chunk] = {}
        self.kept = self.fetched = 0
        self.verified: dict[bytes, int] = {}  # address -> span of subtrees verified whole

    async def below(self, chunk: Chunk, offset: int) -> None:
        """Verify every intermediate chunk under the (verified) `chunk`, which starts at `offset`."""
        children = _intermediates_below(chunk, offset, self.start, self.end)
        wanted = list(dict.fromkeys(a for a, _, _ in children if a not in self.verified))
        if self.fetched + len(wanted) > self.budget:
            raise _BudgetSpent
        self.fetched += len(wanted)
        fetched = dict(zip(wanted, await _fetch_all(self.fetch, wanted, self.concurrency), strict=True))
        for address, span, child_offset in children:
            known = self.verified.get(address)
            if known is not None:
                if known != span:
                    raise CorruptTree(address, f"span {known}, its parent implies {span}")
                continue
            child = check_chunk(fetched[address], address, span)
            self._hold(child)
            await self.below(child, child_offset)
            if self.start <= child_offset and child_offset + span <= self.end:
                self.verified[address] = span  # whole subtree checked: a repeat needs no walk

    def _hold(self, chunk: Chunk) -> None:
        if chunk.address not in self.held and self.kept + len(chunk.data) <= self.keep:
            self.held[chunk.address] = chunk
            self.kept += len(chunk.data)


class TreeTooLarge(ValueError):
    """A chunk tree with more distinct chunks than a whole-tree walk takes."""


async def fetch_tree(
    reference: bytes, fetch: Fetch, *, concurrency: int = WINDOW, limit: int = 1 << 18
) -> list[Chunk]:
    """Every distinct chunk of the file at `reference`, data chunks included, fetched level by
    level `concurrency` at a time and each checked against its parent; raises as
    `fetch_intermediates`, and `TreeTooLarge` past `limit` distinct chunks (1 GiB of data by
    default). A repeated reference is fetched and kept once: a tree whose levels repeat one
    address (a file of zeros, or a tree bomb) costs what its distinct chunks cost."""
    root = await fetch(reference)
    tree, level = {reference: root}, [root]
    while level:
        children = [child for chunk in level for child in child_refs(chunk)]
        wanted = list(dict.fromkeys(address for address, _ in children if address not in tree))
        if len(tree) + len(wanted) > limit:
            raise TreeTooLarge(f"file {reference.hex()}: more than {limit} distinct chunks")
        fetched = dict(zip(wanted, await _fetch_all(fetch, wanted, concurrency), strict=True))
        for address, span in children:
            check_chunk(tree.get(address) or fetched[address], address, span)
        tree.update(fetched)
        level = list(fetched.values())
    return list(tree.values())


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


def tree_fetch(reference: bytes, fetch: Fetch) -> Fetch:
    """The fetch that reads the tree at `reference`: `fetch` itself for a plain (32-byte) one;
    for an encrypted (64-byte) one, a fetch by reference (address || key) that fetches the chunk
    by its address, checks it against it and answers it decrypted (`DecryptedChunk`), so the
    joiner and the checks above walk the plain tree (64-byte references) and keep their bounds."""
    if len(reference) != ENCRYPTED_REF_SIZE:
        return fetch

    async def fetch_decrypted(ref: bytes) -> Chunk:
        return open_encrypted(await fetch(ref[:32]), ref)

    return fetch_decrypted


class Upload:
    """Feeds bytes through the splitter and stores every finished chunk with `store`; with
    `encrypt`, each chunk is encrypted as Bee's `Swarm-Encrypt: true` does (a 64-byte reference)."""

    def __init__(self, store: Callable[[list[Chunk]], object], *, encrypt: bool = False) -> None:
        self._splitter = Splitter(EncryptingSeal() if encrypt else None)
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
