"""Recognising uploaded chunks as updates of live feeds, so that an update uploaded the Bee way
(``POST /soc``, ``POST /chunks``) is pushed live like one published with `swarm feed publish`.

A single-owner chunk does not say which feed and index it is, so for each feed that is followed
or relayed, the UPLOAD_LOOKAHEAD indices after the latest the node has seen (the first ones
when it has seen none) are compared with the uploaded addresses: the writer writing its next
update, as bee-js and `swarm feed update` do, is caught; an update far ahead is not (followers
find it with their look for newer updates). Pure: the live service publishes what is found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from chunks.chunk import Chunk
from chunks.feeds import update_address
from chunks.soc import MIN_SOC_DATA_SIZE
from swarm.live.messages import Stream

__all__ = ["UPLOAD_LOOKAHEAD", "feed_updates_among"]

UPLOAD_LOOKAHEAD = 16
"""Indices after the latest seen at which an uploaded chunk is recognised as a feed's update."""


def feed_updates_among(
    chunks: list[Chunk], feeds: Iterable[Stream], latest: Callable[[Stream], int | None]
) -> Iterator[tuple[Stream, int, Chunk]]:
    """The ``(feed, index, chunk)`` of each of ``chunks`` that is the update at one of the
    UPLOAD_LOOKAHEAD indices after ``latest(feed)`` of one of ``feeds``, feed by feed in index
    order. ``latest`` is asked for a feed only when its turn comes, after the earlier feeds'
    updates were used."""
    uploaded = {chunk.address: chunk for chunk in chunks if len(chunk.data) >= MIN_SOC_DATA_SIZE}
    if not uploaded:
        return
    for stream in feeds:
        seen = latest(stream)
        start = 0 if seen is None else seen + 1
        for index in range(start, start + UPLOAD_LOOKAHEAD):
            chunk = uploaded.get(update_address(stream.owner, stream.topic, index))
            if chunk is not None:
                yield stream, index, chunk
