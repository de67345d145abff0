"""Per-bin waiters: trio tasks sleeping until a bin's cursor passes a bin ID.

LocalStore.wait_bin (localstore/store.py) parks its callers here and a commit wakes its bins'
waiters, so that the upstream of a live pull-sync stream sleeps until a chunk lands in its bin
instead of polling. One trio.Event per bin, replaced after it fires; kept apart from the store
so that the chunk code does not carry the trio details.
"""

from __future__ import annotations

from collections.abc import Callable

import trio


class BinWaiters:
    """One trio.Event per bin that somebody waits on."""

    __slots__ = ("_events",)

    def __init__(self) -> None:
        self._events: dict[int, trio.Event] = {}

    async def wait(self, cursors: list[int], bin: int, after: int, check_open: Callable[[], object]) -> int:
        """Return ``cursors[bin]`` once it is above ``after`` (at once, after a checkpoint, if it
        already is); ``check_open`` raises (StoreClosed) if the store is closed meanwhile."""
        if cursors[bin] > after:
            await trio.lowlevel.checkpoint()
        while cursors[bin] <= after:
            check_open()
            event = self._events.get(bin)
            if event is None:
                event = self._events[bin] = trio.Event()
            await event.wait()
        return cursors[bin]

    def notify(self, bin: int) -> None:
        """Wake the waiters of ``bin``."""
        # Nobody waits outside a trio run, so this never calls into trio there.
        event = self._events.pop(bin, None)
        if event is not None:
            event.set()

    def wake_all(self) -> None:
        """Wake every waiter (the store is closing: they find it closed and raise)."""
        events, self._events = self._events, {}
        for event in events.values():
            event.set()
