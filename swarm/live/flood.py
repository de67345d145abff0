"""The budget of invalid live messages a peer may push before it is dropped (pure).

A forged or malformed push is dropped by itself and the connection stays (a forgery must not cost
the honest messages behind it), but each costs a signature check: more than `INVALID_BUDGET` in
`INVALID_WINDOW` seconds from one peer is a flood, and the peer is dropped as OVERLOADED.
"""

from __future__ import annotations

from streamer.errors import RemoteProtocolError
from streamer.messages import GoodbyeCode

__all__ = ["INVALID_BUDGET", "INVALID_WINDOW", "FloodGuard"]

INVALID_BUDGET = 64
INVALID_WINDOW = 10.0


class FloodGuard:
    """Invalid pushes per peer in the current window."""

    def __init__(self, budget: int = INVALID_BUDGET, window: float = INVALID_WINDOW) -> None:
        self.budget = budget
        self.window = window
        self._counts: dict[bytes, tuple[float, int]] = {}  # peer -> (window start, invalid in it)

    def invalid(self, peer: bytes, now: float) -> None:
        """``peer`` pushed an invalid message at ``now``; RemoteProtocolError past the budget."""
        start, count = self._counts.get(peer, (now, 0))
        if now - start >= self.window:
            start, count = now, 0
        self._counts[peer] = (start, count + 1)
        if count + 1 > self.budget:
            raise RemoteProtocolError(
                f"live flood: {count + 1} invalid messages in {self.window:g}s", GoodbyeCode.OVERLOADED
            )

    def forget(self, peer: bytes) -> None:
        self._counts.pop(peer, None)
