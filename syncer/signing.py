"""StateSigning: this node's signed states of its bin logs, node-wide; a thin trio shell.

A signed state is a promise that leaves ``1..size`` of the bin's log are what they are, forever.
A power cut can lose the last writes of the pull index or the LevelDB batch that committed them
(localstore/recovery.py); if it lost entries a state was signed over, the node would later sign
another root for the same size: an equivocation, and every downstream that accepted the first
would drop it for good. So a state is signed only up to cursors the disk holds for sure: before
signing beyond them, `LocalStore.make_durable` flushes the pull index and LevelDB's log, in a
worker thread so the event loop goes on, and one flush serves everyone waiting meanwhile (group
commit). Once a bin is synced, live offers are what needs flushes. A flush is not cheap: on ext4
each forces a journal commit, which writes out the chunk data written since the last one, in
this process's time. So a flush starts at most every `min_interval` seconds (0.25 s), covering
every bin: under a steady ingest a live offer waits up to that long for its state, and the
sync bench measured about a third of the flushes, and of their cost (docs/performance.md).

Signed states are cached (the same live state goes to every downstream of the bin).
"""

from __future__ import annotations

from collections import OrderedDict

import trio

from localstore.binlog import BinLogs
from localstore.store import LocalStore
from localstore.storefiles import BINS
from streamer.messages import SignedState
from streamer.states import StateSigner
from syncer.proving import sign_state

__all__ = ["StateSigning"]

CACHED_STATES = 256
MIN_FLUSH_INTERVAL = 0.25


class StateSigning:
    def __init__(
        self, store: LocalStore, signer: StateSigner, *, min_interval: float = MIN_FLUSH_INTERVAL
    ) -> None:
        logs = store.logs
        if logs is None:
            raise ValueError("a store without bin logs cannot sign states of them")
        self.store = store
        self.logs: BinLogs = logs
        self.signer = signer
        self.epoch = store.epoch
        self._durable = [0] * BINS
        self._flushing: trio.Event | None = None
        self.min_interval = min_interval
        self._last_flush = -1e9  # trio time the last flush started
        self._cache: OrderedDict[tuple[int, int], SignedState] = OrderedDict()
        self.flushes = 0
        self.signed = 0

    async def prepare(self) -> None:
        """Flush once at start-up: what the store holds now (written before, maybe not yet on the
        disk) is then signable at once, and the first peer to ask for a state does not wait for
        that flush (a node started on a full store: 20-50 ms)."""
        await self._flush()

    def renew(self, epoch: int) -> None:
        """The store took a new epoch: sign under it, forget the states signed under the old."""
        self.epoch = epoch
        self._cache.clear()

    async def state(self, bin: int, size: int) -> SignedState:
        """Our signed state of ``bin`` at ``size`` leaves (at most the bin's cursor)."""
        key = (bin, size)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        while self._durable[bin] < size:
            await self._flush()
        state = sign_state(self.logs, self.signer, bin, self.epoch, size)
        self.signed += 1
        self._cache[key] = state
        if len(self._cache) > CACHED_STATES:
            self._cache.popitem(last=False)
        return state

    async def _flush(self) -> None:
        """Make the store durable, or wait for the flush under way (then the caller checks again)."""
        if self._flushing is not None:
            await self._flushing.wait()
            return
        done = self._flushing = trio.Event()
        try:
            await trio.sleep_until(self._last_flush + self.min_interval)  # waiters gather meanwhile
            self._last_flush = trio.current_time()
            cursors = await trio.to_thread.run_sync(self.store.make_durable)
            self._durable = [max(a, b) for a, b in zip(self._durable, cursors, strict=True)]
            self.flushes += 1
        finally:
            self._flushing = None
            done.set()
