"""Per-peer sync statistics: the `show loss` table of seed 002, adapted to pull syncing (pure).

Each counter remembers when it last changed, so an operator can tell an old loss from an ongoing
one. Time is passed in by the caller (wall-clock seconds), keeping this module free of clocks.
"""

from __future__ import annotations

from dataclasses import dataclass

COUNTERS: tuple[str, ...] = (
    "offered",  # hashes offered to us
    "wanted",  # hashes we asked for
    "delivered",  # chunks delivered to us (valid)
    "repeat",  # delivered, but already stored by then
    "unsolicited",  # deliveries we never asked for (protocol violation)
    "invalid",  # deliveries whose data did not hash to the address (protocol violation)
    "missing",  # wanted, never delivered (the peer went away or timed out)
    "resets",  # the peer's store epoch changed: every interval kept for it was voided
    "payload_bytes_in",
    "protocol_bytes_in",
    "payload_bytes_out",
    "protocol_bytes_out",
)

RETIRED = b""
"""The key under which the counters of peers long gone are summed (no overlay is empty)."""

#: The loss columns, shown with the time of their last change.
LOSS_COUNTERS: tuple[str, ...] = ("repeat", "unsolicited", "invalid", "missing", "resets")


@dataclass(frozen=True)
class StatsSnapshot:
    """An immutable copy of a peer's counters and their last-change times (None: never)."""

    counts: dict[str, int]
    changed: dict[str, float | None]


class PeerStats:
    """Counters for one peer; `add` is the only way they change."""

    __slots__ = ("_changed", "_counts")

    def __init__(self) -> None:
        self._counts: dict[str, int] = dict.fromkeys(COUNTERS, 0)
        self._changed: dict[str, float | None] = dict.fromkeys(COUNTERS, None)

    def add(self, name: str, amount: int, now: float) -> None:
        """Add `amount` (>= 0) to counter `name` at time `now`."""
        if name not in self._counts:
            raise KeyError(f"unknown sync counter {name!r}; known: {', '.join(COUNTERS)}")
        if amount < 0:
            raise ValueError(f"sync counter {name!r} cannot decrease (got {amount})")
        if amount:
            self._counts[name] += amount
            self._changed[name] = now

    def __getitem__(self, name: str) -> int:
        return self._counts[name]

    def snapshot(self) -> StatsSnapshot:
        return StatsSnapshot(counts=dict(self._counts), changed=dict(self._changed))

    def absorb(self, other: PeerStats) -> None:
        """Add another peer's counters to these (the later change time of each wins)."""
        for name, amount in other._counts.items():
            self._counts[name] += amount
            theirs, ours = other._changed[name], self._changed[name]
            if theirs is not None and (ours is None or theirs > ours):
                self._changed[name] = theirs
