"""An upload stores its chunks in groups of `STORE_BATCH` (swarm/files/transfer.py): the same
chunks and reference as splitting the file at once, none lost at the end, the groups bounded."""

from __future__ import annotations

import random

from chunks import Chunk
from swarm.files.chunker import Splitter
from swarm.files.transfer import STORE_BATCH, Upload


def test_an_upload_stores_every_chunk_in_groups_of_the_batch() -> None:
    data = random.Random(3).randbytes(1_000_000)
    calls: list[list[Chunk]] = []
    upload = Upload(calls.append)
    for i in range(0, len(data), 16_384):  # an HTTP body's pieces: 4 chunks each
        upload.feed(data[i : i + 16_384])
        assert all(len(call) >= STORE_BATCH for call in calls), "stored before a group was full"
    reference = upload.finish()
    splitter = Splitter()
    whole = splitter.feed(data)
    expected, rest = splitter.finish()
    whole += rest
    assert reference == expected
    assert [c.address for call in calls for c in call] == [c.address for c in whole]
    assert upload.chunks == len(whole) == sum(len(call) for call in calls)
    assert all(STORE_BATCH <= len(call) < STORE_BATCH + 5 for call in calls[:-1])
