"""DeliveryIntake against a real store, intake and verifier; the connection is a recording double."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import trio

from chunks import Chunk
from localstore.store import LocalStore
from streamer.errors import RemoteProtocolError
from streamer.messages import GoodbyeCode
from swarm.testing import random_chunks
from syncer.deliveries import BATCH, IN_FLIGHT, QUEUE, DeliveryIntake
from syncer.intake import ChunkIntake
from syncer.stats import PeerStats
from syncer.verifier import ChunkVerifier, Verdicts

PEER = bytes(range(32))
CHUNKS = random_chunks(40, seed=321)


@dataclass
class RecordingConnection:
    """What the intake uses of a PeerConnection: the peer's overlay and `broke_protocol`."""

    overlay: bytes = PEER
    violations: list[RemoteProtocolError] = field(default_factory=list)

    def broke_protocol(self, violation: RemoteProtocolError) -> None:
        self.violations.append(violation)


class StalledVerifier(ChunkVerifier):
    """Accepts every batch and never answers: what a hopelessly slow verifier looks like."""

    async def submit(self, chunks: list[Chunk]) -> Verdicts:
        return Verdicts(chunks)


@dataclass
class Intake:
    deliveries: DeliveryIntake
    store: LocalStore
    stats: PeerStats
    conn: RecordingConnection


@asynccontextmanager
async def intake_with(tmp_path: Path, verifier: ChunkVerifier) -> AsyncIterator[Intake]:
    with LocalStore(tmp_path / "store", bytes(32)) as store:
        conn = RecordingConnection()
        stats = PeerStats()
        deliveries = DeliveryIntake(ChunkIntake(store, verifier=verifier), stats, conn.broke_protocol)
        yield Intake(deliveries, store, stats, conn)


async def deliver_and_drain(intake: DeliveryIntake, chunks: list[Chunk], framed: bool = False) -> None:
    """Queue every chunk (one by one, or 15 at a time as `ChunkDeliveries` bring them), close the
    intake before it runs, then run it: it finishes what came."""
    if framed:
        for at in range(0, len(chunks), 15):
            await intake.put_many(chunks[at : at + 15])
    else:
        for chunk in chunks:
            await intake.put(chunk)
    intake.close()
    await intake.run()


@pytest.mark.parametrize(("workers", "framed"), [(0, False), (1, False), (1, True)])
async def test_close_stores_everything_that_arrived(tmp_path: Path, workers: int, framed: bool) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            verifier = await nursery.start(ChunkVerifier(workers).run)
            async with intake_with(tmp_path, verifier) as intake:
                await deliver_and_drain(intake.deliveries, CHUNKS, framed)
                assert all(intake.store.has(c.address) for c in CHUNKS)
                stats = intake.stats
                assert stats["delivered"] == len(CHUNKS) and stats["invalid"] == stats["repeat"] == 0
                assert intake.conn.violations == []
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("workers", [0, 1])
async def test_an_invalid_chunk_drops_the_peer_and_the_valid_ones_are_kept(
    tmp_path: Path, workers: int
) -> None:
    forged = Chunk(CHUNKS[5].address, CHUNKS[6].data)
    arrivals = [*CHUNKS[:5], forged, *CHUNKS[6:10], CHUNKS[0]]  # and a repeat of the first
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            verifier = await nursery.start(ChunkVerifier(workers).run)
            async with intake_with(tmp_path, verifier) as intake:
                await deliver_and_drain(intake.deliveries, arrivals)
                store = intake.store
                assert not store.has(forged.address)
                assert all(store.get(c.address).data == c.data for c in [*CHUNKS[:5], *CHUNKS[6:10]])
                stats = intake.stats
                assert (stats["delivered"], stats["repeat"], stats["invalid"]) == (10, 1, 1)
                (violation,) = intake.conn.violations
                assert violation.code == GoodbyeCode.INVALID_CHUNK
                assert forged.address.hex() in str(violation) and "hashes to" in str(violation)
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("frame", [1, 15], ids=["put", "put_many"])
async def test_a_stalled_verifier_holds_a_bounded_number_of_chunks(tmp_path: Path, frame: int) -> None:
    """Backpressure: with no verdicts coming, the intake stops accepting at the queue plus the
    batches in flight, so a fast upstream cannot make memory grow. `put_many` (a frame's chunks)
    waits for room chunk by chunk: a frame that does not fit is not taken whole."""
    bound = QUEUE + (IN_FLIGHT + 1) * BATCH
    frames = [CHUNKS[:frame]] * (bound // frame + 3)
    taken = 0
    with trio.fail_after(30):
        async with intake_with(tmp_path, StalledVerifier()) as intake, trio.open_nursery() as nursery:
            nursery.start_soon(intake.deliveries.run)
            with trio.move_on_after(1):
                for chunks in frames:
                    if frame == 1:
                        await intake.deliveries.put(chunks[0])
                    else:
                        await intake.deliveries.put_many(chunks)
                    taken += len(chunks)
            nursery.cancel_scope.cancel()
    assert bound - frame < taken <= bound
