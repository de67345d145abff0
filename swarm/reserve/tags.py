"""An upload's progress (Bee's tag), which ``POST /bytes`` waits on and ``GET /tags/{uid}`` reports."""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

__all__ = ["Tag"]


@dataclass
class Tag:
    """The progress of one upload (Bee's tag): chunks split, seen (already held), stored, sent
    (pushed at least once) and synced (durable)."""

    uid: int
    started: float
    split: int = 0
    seen: int = 0  # chunks the store already held (uploaded before)
    stored: int = 0
    sent: int = 0
    synced: int = 0
    address: bytes | None = None  # the root reference, once the upload is done
    done_splitting: bool = False
    waiting: set[bytes] = field(default_factory=set)  # chunks without a receipt yet
    changed: trio.Event = field(default_factory=trio.Event)

    def _changed(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    @property
    def complete(self) -> bool:
        return self.done_splitting and not self.waiting

    async def wait(self, timeout: float) -> bool:
        """Wait until every chunk has a receipt (True) or ``timeout`` passes (False)."""
        with trio.move_on_after(timeout):
            while not self.complete:
                await self.changed.wait()
        return self.complete
