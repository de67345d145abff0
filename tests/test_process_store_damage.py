"""Real `swarm node` processes whose store a power cut or bit rot damaged on disk.

A power cut (tails cut off CHUNKS and a pull file, CURRENT lost): the node starts, serves every
chunk that survived, and syncs the lost ones again from a peer. Bit rot (a flipped payload byte in
a slot): the node never serves the damaged bytes, to a user or to a peer.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from chunks import Chunk
from localstore.addressindex import INDEX_FILE_NAME
from localstore.chunkfile import CHUNK_FILE_NAME, SLOT_HEADER_SIZE, SLOT_SIZE
from localstore.pullindex import ENTRY_SIZE, pull_file_name
from pot import proximity
from swarm.testing import NodeProcess, poll, preload, random_chunks
from tests.test_process_sync import SYNC_TIMEOUT, no_traceback, peer_entry, sync_doc, synced_with

pytestmark = pytest.mark.process

MAX_BIN = 31


def bins_and_ids(overlay: bytes, chunks: list[Chunk]) -> list[tuple[int, int]]:
    """(bin, bin ID) of each of ``chunks`` as preload stores them, in order (slot = position)."""
    counts = [0] * (MAX_BIN + 1)
    placed = []
    for chunk in chunks:
        bin = min(proximity(overlay, chunk.address), MAX_BIN)
        counts[bin] += 1
        placed.append((bin, counts[bin]))
    return placed


def statuses(node: NodeProcess, chunks: list[Chunk], method: str = "HEAD") -> list[int]:
    with httpx.Client(base_url=node.api, timeout=30) as client:
        return [client.request(method, f"/chunks/{c.address.hex()}").status_code for c in chunks]


def xor_distance(chunk: Chunk, overlay: bytes) -> int:
    return int.from_bytes(chunk.address, "big") ^ int.from_bytes(overlay, "big")


def flip_payload_byte(store: Path, slot: int, offset: int = 100) -> None:
    """Flip one bit of a chunk's payload in the slot file (after address, checksum and span)."""
    at = slot * SLOT_SIZE + SLOT_HEADER_SIZE + 8 + offset
    fd = os.open(store / CHUNK_FILE_NAME, os.O_RDWR)
    try:
        byte = os.pread(fd, 1, at)
        os.pwrite(fd, bytes((byte[0] ^ 0x10,)), at)
    finally:
        os.close(fd)


def test_a_store_with_torn_tails_and_no_current_starts_serves_and_resyncs(tmp_path: Path) -> None:
    chunks = random_chunks(300, seed=31)
    preload(tmp_path / "a", chunks)
    overlay_b = preload(tmp_path / "b", chunks)
    store = tmp_path / "b" / "localstore"
    placed = bins_and_ids(overlay_b, chunks)
    others = [b for b in range(MAX_BIN + 1) if b != placed[-1][0]]  # not the last chunk's bin
    busiest = max(others, key=lambda b: sum(bin == b for bin, _ in placed))
    cursor = sum(bin == busiest for bin, _ in placed)
    # The power cut: the last append of CHUNKS and of the busiest bin's pull file half written,
    # LevelDB's CURRENT lost.
    os.truncate(store / CHUNK_FILE_NAME, len(chunks) * SLOT_SIZE - 3)
    os.truncate(store / pull_file_name(busiest), cursor * ENTRY_SIZE - 3)
    (store / "CURRENT").unlink()
    lost = {len(chunks) - 1, placed.index((busiest, cursor))}
    assert len(lost) == 2, "the two cuts take two different chunks"
    kept = [c for i, c in enumerate(chunks) if i not in lost]
    gone = [chunks[i] for i in sorted(lost)]

    with NodeProcess(tmp_path / "b") as b:  # alone: what survived is served from its store
        assert sync_doc(b)["chunks"] == len(kept)
        assert statuses(b, kept) == [200] * len(kept)
        assert statuses(b, gone) == [404, 404]
        with httpx.Client(base_url=b.api, timeout=30) as client:
            for chunk in kept[::10]:
                assert client.get(f"/chunks/{chunk.address.hex()}").content == chunk.data
        assert b.stop() == 0
    log = (tmp_path / "b" / "node.log").read_text()
    assert "WARNING" in log and "repairing the LevelDB" in log
    assert f"{CHUNK_FILE_NAME} lost its last 1 slot(s)" in log
    assert f"{pull_file_name(busiest)} lost its last 1 entries (bin {busiest}," in log
    no_traceback(b)

    with NodeProcess(tmp_path / "a") as a, NodeProcess(tmp_path / "b", peers=[a.p2p]) as b2:
        poll(lambda: synced_with(b2, a.overlay, len(chunks)), timeout=SYNC_TIMEOUT)
        assert statuses(b2, gone) == [200, 200], "synced again from A, into B's own store"
        entry = peer_entry(sync_doc(b2), a.overlay)
        assert entry is not None and entry["stats"]["delivered"] == 2
        no_traceback(b2)
        no_traceback(a)


def test_a_flipped_payload_byte_is_never_served_to_a_user(tmp_path: Path) -> None:
    chunks = random_chunks(40, seed=32)
    overlay_a = preload(tmp_path / "a", chunks)
    overlay_b = preload(tmp_path / "b", chunks)
    store = tmp_path / "b" / "localstore"
    # Retrieval asks only peers closer to the chunk than the asking node (XOR distance).
    nearer_a = next(
        i
        for i in range(6, len(chunks))
        if xor_distance(chunks[i], overlay_a) < xor_distance(chunks[i], overlay_b)
    )

    with NodeProcess(tmp_path / "b") as b:  # alone: nobody else has the chunk
        flip_payload_byte(store, 5)  # bit rot under a running node
        assert statuses(b, [chunks[5]], "GET")[0] in (404, 504), "never 200 with the damaged bytes"
        assert statuses(b, [chunks[5]]) == [404], "dropped from the store"
        assert statuses(b, chunks[6:]) == [200] * len(chunks[6:])
        assert b.stop() == 0
    assert (
        f"{chunks[5].address.hex()} but its data does not match its checksum"
        in (tmp_path / "b" / "node.log").read_text()
    )

    with NodeProcess(tmp_path / "a") as a, NodeProcess(tmp_path / "b", peers=[a.p2p]) as b2:
        poll(lambda: synced_with(b2, a.overlay, len(chunks)), timeout=SYNC_TIMEOUT)
        flip_payload_byte(store, nearer_a, offset=4000)
        with httpx.Client(base_url=b2.api, timeout=30) as client:
            response = client.get(f"/chunks/{chunks[nearer_a].address.hex()}")
        assert response.status_code == 200, response.text
        assert response.content == chunks[nearer_a].data, "from A, not from the disk"
        no_traceback(b2)


def test_a_flipped_payload_byte_is_never_offered_to_a_peer(tmp_path: Path) -> None:
    """The same read feeds sync: the upstream leaves the damaged chunk out of its offers, so the
    downstream neither receives wrong bytes nor drops the upstream as a sender of invalid data."""
    chunks = random_chunks(200, seed=33)
    preload(tmp_path / "a", chunks)
    flip_payload_byte(tmp_path / "a" / "localstore", 50)
    with NodeProcess(tmp_path / "a") as a, NodeProcess(tmp_path / "b", peers=[a.p2p]) as b:
        poll(lambda: synced_with(b, a.overlay, len(chunks) - 1), timeout=SYNC_TIMEOUT)
        entry = peer_entry(sync_doc(b), a.overlay)
        assert entry is not None
        assert entry["stats"]["invalid"] == entry["stats"]["resets"] == 0
        assert entry["stats"]["delivered"] == len(chunks) - 1
        assert statuses(b, [chunks[50]]) == [404]
        assert statuses(b, chunks[51:60]) == [200] * 9
        no_traceback(a)
        no_traceback(b)
    assert "not offering a damaged chunk" in (tmp_path / "a" / "node.log").read_text()


def test_a_power_cut_after_a_full_sync_resets_the_intervals_of_what_it_dropped(tmp_path: Path) -> None:
    """Issue 30 item 11: B synced all 600 chunks from A, then lost power: 3 bytes off the tails of
    CHUNKS and ADDRESSES. Recovery drops the chunk whose slot was torn; B's intervals said it was
    synced, so it stayed gone for good (599 of 600). Now the intervals that covered it are
    reset, and B syncs it again."""
    chunks = random_chunks(600, seed=37)
    preload(tmp_path / "a", chunks)
    with NodeProcess(tmp_path / "a") as a:
        b = NodeProcess(tmp_path / "b", peers=[a.p2p])
        with b:
            poll(lambda: synced_with(b, a.overlay, len(chunks)), timeout=SYNC_TIMEOUT)
            b.kill()
        store = tmp_path / "b" / "localstore"
        for name in (CHUNK_FILE_NAME, INDEX_FILE_NAME):
            os.truncate(store / name, (store / name).stat().st_size - 3)
        with NodeProcess(tmp_path / "b", peers=[a.p2p]) as b2:
            poll(lambda: synced_with(b2, a.overlay, len(chunks)), timeout=SYNC_TIMEOUT)
            assert statuses(b2, chunks) == [200] * len(chunks)
            entry = peer_entry(sync_doc(b2), a.overlay)
            assert entry is not None and entry["stats"]["delivered"] >= 1
            no_traceback(b2)
    log = (tmp_path / "b" / "node.log").read_text()
    assert "lost its last 1 slot(s)" in log and "interval set(s) reset" in log
