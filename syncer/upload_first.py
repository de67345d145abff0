"""UploadFirst: a node's live offers wait while it serves uploads.

Pull syncing copies every new chunk on to the node's neighbours: a live offer, then each
neighbour's BMT check and store. While a node stores an upload (its own user's, or the pushes of
someone else's) those copies compete for the machine with the upload itself, whose answer a user
is waiting for; with six nodes on two cores the copies were two fifths of the nodes' CPU during an
upload, and held back they still end about when they did (docs/performance.md, "Uploads
first"). Bee keeps pull syncing in the background by rate: its pullsync serves a peer at most
250 chunks a second. Here a live offer that is ready waits instead until the node has done no
upload work for ``quiet`` seconds, and never longer than ``max_wait`` after it was ready:
replication comes late, never not at all. Under a steady stream of uploads each live stream
still offers a batch at least every ``max_wait``; once the uploads pause, at once.

Only live offers wait: a historical stream serves what a peer lacks from before, and a node with
no upload work (``touch`` never called) offers exactly as without this. The durability of an upload
does not depend on it: receipts come from pushes (swarm/reserve/pusher.py).

Pure: the clock is given; the upstream (syncer/upstream.py) sleeps for what `wait` says.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["DEFAULT_MAX_WAIT", "DEFAULT_QUIET", "UploadFirst", "UploadFirstStatistics"]

DEFAULT_QUIET = 0.25
"""Seconds without upload work after which live offers go out again."""
DEFAULT_MAX_WAIT = 2.0
"""Seconds a ready live offer waits at most for the uploads to pause."""


@dataclass(frozen=True)
class UploadFirstStatistics:
    held_offers: int  # live offers that waited for uploads
    held_seconds: float  # how long they waited, summed
    max_wait: float  # the bound (0: live offers never wait)


class UploadFirst:
    """When a ready live offer may go out, given when this node last did upload work."""

    def __init__(
        self,
        clock: Callable[[], float],
        *,
        quiet: float = DEFAULT_QUIET,
        max_wait: float = DEFAULT_MAX_WAIT,
    ) -> None:
        if quiet < 0 or max_wait < 0:
            raise ValueError(f"quiet and max_wait must be >= 0, not {quiet} and {max_wait}")
        self.clock = clock
        self.quiet = quiet
        self.max_wait = max_wait
        self._last_work = -math.inf
        self.held_offers = 0
        self.held_seconds = 0.0

    def touch(self) -> None:
        """This node just did upload work: stored an upload's chunks, pushed or was pushed some."""
        self._last_work = max(self._last_work, self.clock())

    def wait(self, ready: float) -> float:
        """Seconds from now that a live offer ready since ``ready`` should still wait (0: go).

        Asked again after that wait, since more upload work may have come meanwhile."""
        now = self.clock()
        until = min(self._last_work + self.quiet, ready + self.max_wait)
        return max(0.0, until - now)

    def held(self, seconds: float) -> None:
        """An offer waited ``seconds`` in all (counted for the statistics)."""
        if seconds > 0:
            self.held_offers += 1
            self.held_seconds += seconds

    def statistics(self) -> UploadFirstStatistics:
        return UploadFirstStatistics(self.held_offers, round(self.held_seconds, 3), self.max_wait)
