"""Reading sequence feeds through the swarm: the trio driver of `swarm.feeds.lookup`.

Everything here takes the network as one function, ``get(address) -> data | None`` (None: not
found, or no answer in time), so it runs the same over the node's retrieval, a local store or a
test's dict. The formats are `chunks.feeds`; the probe planning is `swarm.feeds.lookup`.

- `find_latest`: the latest update at or after an index, probes run concurrently (bounded).
- `get_update`: one update by index.
- `find_at`: the latest update stamped at or before a time (v1 updates carry a timestamp).
- `resolve_root`: the root chunk of an update's content, v1 (by its reference) or v2 (wrapped).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable

import trio

from chunks.chunk import Chunk
from chunks.feeds import FeedUpdate, parse_update, update_address
from swarm.feeds.lookup import DEFAULT_MAX_PROBES, SequenceLookup

__all__ = ["Get", "GetChunk", "find_at", "find_latest", "get_update", "resolve_root"]

log = logging.getLogger(__name__)

Get = Callable[[bytes], Awaitable[bytes | None]]
"""Data of the chunk at an address, or None if it cannot be had."""
GetChunk = Callable[[bytes], Awaitable[Chunk | None]]
"""The verified chunk at an address, or None if it cannot be had."""

_CANCELLED = object()


async def get_update(get: Get, owner: bytes, topic: bytes, index: int) -> FeedUpdate | None:
    """Update ``index`` of ``(owner, topic)``, or None; InvalidSoc if ``get`` returns a forgery."""
    data = await get(update_address(owner, topic, index))
    return None if data is None else parse_update(owner, topic, index, data)


async def find_latest(
    get: Get,
    owner: bytes,
    topic: bytes,
    *,
    start: int = 0,
    max_probes: int = DEFAULT_MAX_PROBES,
    probe_timeout: float = math.inf,
) -> FeedUpdate | None:
    """The latest update of ``(owner, topic)`` at or after ``start`` (None if ``start`` has none).

    At most ``max_probes`` probes run at once; one that takes longer than ``probe_timeout``
    seconds counts as not found (bee's finder gives each probe 1 s), and probes that can no
    longer matter are cancelled. With holes in the feed the answer is one update followed by a
    missing one (see `swarm.feeds.lookup`).
    """
    lookup = SequenceLookup(start, max_probes=max_probes)
    results_in, results = trio.open_memory_channel[tuple[int, object]](math.inf)
    scopes: dict[int, trio.CancelScope] = {}
    best: tuple[int, bytes] | None = None

    async def probe(index: int, scope: trio.CancelScope) -> None:
        with scope:
            with trio.move_on_after(probe_timeout):
                results_in.send_nowait((index, await get(update_address(owner, topic, index))))
                return
            results_in.send_nowait((index, None))  # timed out: not found
            return
        results_in.send_nowait((index, _CANCELLED))

    async with trio.open_nursery() as nursery:
        while True:
            for index in lookup.next_probes():
                scopes[index] = trio.CancelScope()
                nursery.start_soon(probe, index, scopes[index])
            if lookup.done:
                break
            index, data = await results.receive()
            del scopes[index]
            if data is _CANCELLED:
                lookup.on_cancelled(index)
                continue
            lookup.on_result(index, data is not None)
            if isinstance(data, bytes) and lookup.bracket[0] == index:
                best = (index, data)
            for stale in lookup.stale_probes():
                scopes[stale].cancel()
        nursery.cancel_scope.cancel()
    latest = lookup.latest
    if latest is None:
        return None
    assert best is not None and best[0] == latest
    return parse_update(owner, topic, latest, best[1])


async def find_at(
    get: Get, owner: bytes, topic: bytes, at: int, *, start: int, end: int
) -> FeedUpdate | None:
    """The last update in ``start..end`` stamped at or before ``at`` (unix seconds), or None.

    Bisects on the v1 timestamps, so it assumes they do not decrease with the index (bee-js
    stamps each update with the time it is written). An update without a timestamp (v2) counts
    as early enough; a missing one as too late.
    """
    found: FeedUpdate | None = None
    low, high = start, end
    while low <= high:
        middle = (low + high) // 2
        update = await get_update(get, owner, topic, middle)
        fields = update.v1_fields if update is not None else None
        if update is not None and (fields is None or fields[0] <= at):
            found, low = update, middle + 1
        else:
            high = middle - 1
    return found


async def resolve_root(update: FeedUpdate, get_chunk: GetChunk) -> tuple[Chunk, str]:
    """The root chunk of the update's content and its version, ``"v1"`` or ``"v2"``.

    An update with a v1 length is v1 only if its reference can be fetched; otherwise (bee #5027:
    a v2 payload of 40 or 72 bytes) it is read as v2, the wrapped chunk being the content's root.
    An encrypted (64-byte) reference is never resolved here: this node does not decrypt.
    """
    fields = update.v1_fields
    if fields is not None and len(fields[1]) == 32:
        root = await get_chunk(fields[1])
        if root is not None:
            return root, "v1"
        log.debug("feed update %d: v1 reference %s not found, read as v2", update.index, fields[1].hex())
    return Chunk(update.soc.cac_address, update.soc.wrapped), "v2"
