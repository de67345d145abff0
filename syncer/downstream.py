"""The pulling side of pull syncing: node-wide state, and the policy of which bins to pull.

`Puller` owns the `BatchTracker` (one transfer per chunk across all peers), the persisted
intervals, the per-peer statistics and the node's `ChunkVerifier`, and `store_chunk` /
`store_chunks` are the one door through which chunks enter the local store, so that every batch
waiting for a chunk learns when it arrives. It starts a `PeerPuller` (`syncer.peer_puller`) for
each connected upstream; synced chunks reach the door through that peer's `DeliveryIntake`
(`syncer.deliveries`), verified in the verifier's worker processes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from localstore import BINS, Chunk, LocalStore
from streamer.connection import PeerConnection
from syncer.batches import BatchTracker, CompletedBatch
from syncer.intervals import IntervalStore
from syncer.peer_puller import Fetch, PeerPuller, SyncPolicy
from syncer.stats import PeerStats
from syncer.verifier import ChunkVerifier

__all__ = ["Fetch", "PeerPuller", "Puller", "PullerConfig", "SyncPolicy", "sync_every_bin"]


def sync_every_bin(peer_po: int, depth: int) -> list[int]:
    """Pull every bin from every peer (before the Kademlia depth rule takes over)."""
    return list(range(BINS))


@dataclass(frozen=True)
class PullerConfig:
    # Batches per stream waiting for their chunks. 4 syncs faster (benches/sync, alternated runs:
    # ratio 0.83 vs 0.74 on average, mostly in the one-stream tail) but would double what a crash
    # makes the node fetch twice: up to max_incomplete * 128 chunks per stream.
    max_incomplete: int = 2
    batch_timeout: float = 60.0  # a stream whose batches do not complete by then: drop the peer
    cursor_timeout: float = 30.0
    cursor_refresh: float = 5.0  # re-ask the cursors this often, to report the live lag


class Puller:
    """Node-wide state of the pulling side."""

    def __init__(
        self,
        store: LocalStore,
        *,
        config: PullerConfig | None = None,
        clock: Callable[[], float] = time.time,
        verifier: ChunkVerifier | None = None,
    ) -> None:
        self.store = store
        self.verifier = verifier or ChunkVerifier()  # without workers: verifies inline
        self.config = config or PullerConfig()
        self.clock = clock
        self.intervals = IntervalStore(store)
        self.tracker = BatchTracker()
        self.stats: dict[bytes, PeerStats] = {}
        self._peers: dict[bytes, PeerPuller] = {}

    def stats_of(self, peer: bytes) -> PeerStats:
        stats = self.stats.get(peer)
        if stats is None:
            stats = self.stats[peer] = PeerStats()
        return stats

    def peer(self, overlay: bytes) -> PeerPuller | None:
        return self._peers.get(overlay)

    @property
    def peers(self) -> list[PeerPuller]:
        return list(self._peers.values())

    def store_chunk(self, chunk: Chunk) -> bool:
        """Verify and store a chunk from any source; completes the batches waiting for it.

        Returns True if it was new. Raises `InvalidChunk` (and stores nothing) if it is invalid.
        """
        new = self.store.put(chunk)
        for done in self.tracker.stored(chunk.address):
            self._completed(done)
        return new

    def store_chunks(self, chunks: list[Chunk], *, verified: bool = False) -> int:
        """`store_chunk` for many at once (one write batch); returns how many were new.

        ``verified=True``: the chunks were verified already (by `verifier`), so are not again.
        """
        new = self.store.put_many(chunks, verified=verified)
        for chunk in chunks:
            for done in self.tracker.stored(chunk.address):
                self._completed(done)
        return new

    def attach(
        self, conn: PeerConnection, po: int, *, policy: SyncPolicy, depth: Callable[[], int], fetch: Fetch
    ) -> PeerPuller:
        """Start pulling from a newly connected peer (call `run` on the result in its nursery)."""
        puller = PeerPuller(self, conn, po, policy=policy, depth=depth, fetch=fetch)
        self._peers[conn.overlay] = puller
        return puller

    def detach(self, overlay: bytes) -> None:
        """The peer is gone: count what it never delivered, re-request what others still wait for."""
        if self._peers.pop(overlay, None) is None:
            return
        gone = self.tracker.peer_gone(overlay)
        self.stats_of(overlay).add("missing", gone.missing, self.clock())
        for again in gone.rerequests:
            other = self._peers.get(again.peer)
            if other is not None:
                other.fetch_soon(again.address)

    def _completed(self, done: CompletedBatch) -> None:
        peer = self._peers.get(done.peer)
        if peer is not None:
            peer.batch_completed(done)

    def fully_synced(self) -> bool:
        return all(p.fully_synced() for p in self._peers.values())
