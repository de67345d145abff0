"""ReserveWorker: the node's background task that keeps the reserve within its capacity.

Woken after chunks are stored (and every `interval` seconds), it evicts in batches of at most
`batch` chunks (localstore/reserve.py), yielding to the other tasks between batches, so neither
syncing nor the API waits on it for long; it keeps the storage radius in step with the depth and
tells the puller when it changes (`radius_changed`), and it lowers the radius, as Bee does, once
the reserve has room and historical syncing is done (checked every `lower_interval` seconds, and
only when the condition held at two checks in a row, so one quiet moment does not undo a radius).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import trio

from localstore.reserve import Reserve

__all__ = ["ReserveWorker"]

log = logging.getLogger(__name__)

SPACING = 0.1
"""Least time between two rounds: the reserve may exceed its capacity by what a tenth of a second
stores, and a round's cost (recounting protected chunks) is paid at most ten times a second."""


@dataclass(frozen=True)
class EvictionRound:
    evicted: int
    seconds: float


class ReserveWorker:
    """Eviction in bounded batches and the radius, in the background."""

    def __init__(
        self,
        reserve: Reserve,
        *,
        depth: Callable[[], int | None],
        historical_done: Callable[[], bool],
        radius_changed: Callable[[int], None],
        batch: int = 256,
        interval: float = 1.0,
        lower_interval: float = 5.0,
    ) -> None:
        self.reserve = reserve
        self._depth = depth
        self._historical_done = historical_done
        self._radius_changed = radius_changed
        self.batch = batch
        self.interval = interval
        self.lower_interval = lower_interval
        self._wake = trio.Event()
        self._room_seen = False
        self.last_round: EvictionRound | None = None

    def wake(self) -> None:
        """Chunks were stored: look at the reserve soon."""
        self._wake.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        next_lower = trio.current_time() + self.lower_interval
        while True:
            with trio.move_on_after(self.interval):
                await self._wake.wait()
            self._wake = trio.Event()
            await trio.sleep(SPACING)  # stores come in bursts: one round for a burst
            await self.evict_all()
            self._follow_depth()
            if trio.current_time() >= next_lower:
                next_lower = trio.current_time() + self.lower_interval
                self._maybe_lower()

    async def evict_all(self) -> int:
        """Evict batch after batch until the reserve fits; return how many were evicted."""
        total = 0
        started = time.perf_counter()
        while True:
            radius = self.reserve.radius
            evicted = self.reserve.evict(self.batch, self._depth())
            if self.reserve.radius != radius:
                self._radius_changed(self.reserve.radius)
            total += evicted
            if not evicted:
                break
            await trio.sleep(0)  # let syncing and the API run between batches
        if total:
            self.last_round = EvictionRound(total, time.perf_counter() - started)
            log.debug("evicted %d chunks in %.3f s", total, self.last_round.seconds)
        return total

    def _follow_depth(self) -> None:
        radius = self.reserve.radius
        if self.reserve.update_radius(self._depth()) != radius:
            self._radius_changed(self.reserve.radius)

    def _maybe_lower(self) -> None:
        room = self._depth() is not None and self._historical_done()
        if room and self._room_seen and self.reserve.lower_radius(True):
            self._radius_changed(self.reserve.radius)
            room = False  # the next step down waits for the bin just added to be synced
        self._room_seen = room
