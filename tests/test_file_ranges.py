"""Reading a byte range of a file fetches the chunks that overlap it and no others (read-ahead
included), and every intermediate chunk can be fetched and checked before any byte is sent."""

from __future__ import annotations

import functools
import random

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from chunks import Chunk, InvalidChunk
from swarm.files.chunker import CorruptTree, child_refs, split_bytes
from swarm.files.transfer import fetch_intermediates, read_file

SIZES = [0, 1, 4096, 4097, 128 * 4096, 128 * 4096 + 1, 1_100_000]


@functools.cache
def tree(size: int) -> tuple[bytes, bytes, dict[bytes, Chunk]]:
    data = random.Random(size).randbytes(size)
    root, chunks = split_bytes(data)
    return data, root, {c.address: c for c in chunks}


def overlapping(root: bytes, chunks: dict[bytes, Chunk], start: int, end: int) -> set[bytes]:
    """Naively: every chunk whose bytes [offset, offset + span) meet [start, end), and the root."""
    found = {root}

    def visit(address: bytes, offset: int) -> None:
        chunk = chunks[address]
        if offset < end and offset + chunk.span > start:
            found.add(address)
        for child, span in child_refs(chunk):
            visit(child, offset)
            offset += span

    visit(root, 0)
    return found


class Counting:
    """A fetch over a dict of chunks that records what it was asked for."""

    def __init__(self, chunks: dict[bytes, Chunk]) -> None:
        self.chunks = chunks
        self.asked: list[bytes] = []

    async def fetch(self, address: bytes) -> Chunk:
        self.asked.append(address)
        await trio.lowlevel.checkpoint()
        return self.chunks[address]


@settings(max_examples=60, deadline=None)
@given(size=st.sampled_from(SIZES), a=st.integers(0, 1_200_000), b=st.integers(0, 1_200_000))
def test_a_range_read_fetches_exactly_the_chunks_it_overlaps(size: int, a: int, b: int) -> None:
    data, root, chunks = tree(size)
    start, end = min(a, b, size), min(max(a, b), size)
    counting = Counting(chunks)
    got = trio.run(functools.partial(read_file, root, counting.fetch, start=start, end=end))
    assert got == data[start:end]
    if start < end:
        assert set(counting.asked) == overlapping(root, chunks, start, end)
    else:
        assert counting.asked == [root]
    assert len(counting.asked) == len(set(counting.asked))  # read ahead never fetches twice


@settings(max_examples=30, deadline=None)
@given(size=st.sampled_from(SIZES), a=st.integers(0, 1_200_000), b=st.integers(1, 1_200_000))
def test_the_intermediates_of_a_range_are_fetched_and_no_data_chunk(size: int, a: int, b: int) -> None:
    _, root, chunks = tree(size)
    start, end = min(a, size), min(a + b, size)
    counting = Counting(chunks)
    held = trio.run(fetch_intermediates, chunks[root], counting.fetch, start, end)
    expected = {x for x in overlapping(root, chunks, start, end) if chunks[x].span > 4096} - {root}
    assert set(counting.asked) == set(held) == (expected if start < end else set())


async def test_a_bad_intermediate_is_refused_and_holding_is_bounded() -> None:
    data, root, chunks = tree(1_100_000)
    intermediates = [a for a, c in chunks.items() if c.span > 4096 and a != root]
    held = await fetch_intermediates(chunks[root], Counting(chunks).fetch, 0, len(data), keep=4104)
    assert len(held) == 1  # the others were checked, then dropped
    bad = dict(chunks)
    bad[intermediates[1]] = Chunk(intermediates[1], chunks[intermediates[1]].data[:-32])  # not its data
    with pytest.raises(InvalidChunk, match=intermediates[1].hex()):
        await fetch_intermediates(chunks[root], Counting(bad).fetch, 0, len(data))
    # a chunk of the right address whose span does not fit its parent's
    short = Chunk.from_payload(chunks[intermediates[1]].payload[:-32], span=chunks[intermediates[1]].span)
    root_chunk = Chunk.from_payload(
        chunks[root].payload.replace(intermediates[1], short.address), span=chunks[root].span
    )
    bad = {**chunks, short.address: short, root_chunk.address: root_chunk}
    with pytest.raises(CorruptTree, match="needs 128 children, chunk has 127"):
        await fetch_intermediates(root_chunk, Counting(bad).fetch, 0, len(data))
