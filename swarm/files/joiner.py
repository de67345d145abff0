"""Chunk trees back to file bytes: the joiner, which verifies every chunk it reads.

Pure: no trio, no sockets, no disk. Split from `swarm.files.chunker` (which builds trees and holds their
shape rules) because reading a tree is its own job: a sans-IO tree walk (`_walk`, a generator that
asks for chunks and yields file bytes), driven either by an async or by a sync fetch function. A
byte range [start, end) is read by fetching only the chunks that overlap it (`children_in_range`),
so a range read of a large file costs the chunks of its path from the root plus the range's own.
Every chunk is checked against its address and the span its parent implies (`check_chunk`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator, Sequence
from dataclasses import dataclass

from chunks.chunk import Chunk, InvalidChunk
from swarm.files.chunker import CorruptTree, child_refs, children_in_range, is_data_chunk

__all__ = ["check_chunk", "join", "join_sync"]


@dataclass(frozen=True, slots=True)
class _Fetch:
    """Request from the tree walk to its driver: send me the chunk at this address."""

    address: bytes


@dataclass(frozen=True, slots=True)
class _Ahead:
    """Hint from the tree walk to its driver: these chunks will be asked for next, in order."""

    addresses: tuple[bytes, ...]


def check_chunk(chunk: Chunk, address: bytes, expected_span: int | None) -> Chunk:
    """The fetched chunk if it is the one asked for, valid, and of the span its parent implies.

    A chunk marked `verified` (by `Chunk.checked()`, as retrieval returns what it received) was
    hashed against its address already: only the address is compared then.
    """
    if chunk.address != address:
        raise InvalidChunk(address, f"fetch returned the chunk {chunk.address.hex()} instead")
    if not chunk.verified:
        chunk.verify()
    if expected_span is not None and chunk.span != expected_span:
        raise CorruptTree(address, f"span {chunk.span}, its parent implies {expected_span}")
    return chunk


def _walk(
    reference: bytes, start: int, end: int | None
) -> Generator[_Fetch | _Ahead | bytes, Chunk | None, None]:
    """Sans-IO depth-first walk of a file tree: yields `_Fetch` requests, `_Ahead` hints and
    file bytes.

    After yielding a `_Fetch`, the walk expects the chunk through `send()`. Every chunk is checked
    (address, BMT, span against its parent) before any byte under it is yielded, and only the
    chunks overlapping [start, end) are requested.
    """
    if start < 0 or (end is not None and end < 0):
        raise ValueError(f"negative byte range {start}:{end}")
    received = yield _Fetch(reference)
    assert received is not None
    root = check_chunk(received, reference, None)
    child_refs(root)  # a malformed root is refused even when the range is empty
    stop = root.span if end is None else min(end, root.span)
    if start >= stop:
        return
    # Stack of subtrees still to read: (address, expected span, offset in the file); the root is
    # already at hand, so it enters with its chunk.
    pending: list[tuple[bytes, int, int]] = []
    chunk: Chunk | None = root
    offset = 0
    while True:
        if chunk is None:
            if not pending:
                return
            address, span, offset = pending.pop()
            received = yield _Fetch(address)
            assert received is not None
            chunk = check_chunk(received, address, span)
        if is_data_chunk(chunk):
            yield chunk.payload[max(start - offset, 0) : min(stop - offset, chunk.span)]
        else:
            wanted = children_in_range(chunk, offset, start, stop)
            yield _Ahead(tuple(address for address, _, _ in wanted))
            pending.extend(reversed(wanted))
        chunk = None


async def join(
    reference: bytes,
    fetch: Callable[[bytes], Awaitable[Chunk]],
    *,
    start: int = 0,
    end: int | None = None,
    ahead: Callable[[Sequence[bytes]], None] | None = None,
) -> AsyncIterator[bytes]:
    """Yield the bytes [start, end) of the file at `reference`, in order, verifying every chunk.

    The root is always fetched (its span is the file size, `end` is clamped to it); below it only
    the chunks overlapping the range are. `ahead`, if given, is told the addresses the walk will
    fetch next (the children of an intermediate chunk inside the range), to fetch them early.
    `fetch` returns the chunk for an address and raises its own error when it cannot. Raises
    `InvalidChunk` for a chunk that does not match its address and `CorruptTree` for a malformed
    tree; bytes are only yielded from chunks that passed both checks.
    """
    walk = _walk(reference, start, end)
    reply: Chunk | None = None
    while True:
        try:
            item = walk.send(reply)
        except StopIteration:
            return
        if isinstance(item, _Fetch):
            reply = await fetch(item.address)
        elif isinstance(item, _Ahead):
            reply = None
            if ahead is not None:
                ahead(item.addresses)
        else:
            reply = None
            if item:
                yield item


def join_sync(
    reference: bytes, fetch: Callable[[bytes], Chunk], *, start: int = 0, end: int | None = None
) -> Iterator[bytes]:
    """Synchronous twin of `join` (same walk, same checks) for a local, non-blocking `fetch`."""
    walk = _walk(reference, start, end)
    reply: Chunk | None = None
    while True:
        try:
            item = walk.send(reply)
        except StopIteration:
            return
        if isinstance(item, _Fetch):
            reply = fetch(item.address)
        elif isinstance(item, _Ahead):
            reply = None
        else:
            reply = None
            if item:
                yield item
