"""Round trips on one connection: the Pings we sent, each waiting for the Pong that echoes its nonce.

`PeerConnection.ping` opens one (a random 64-bit nonce), sends the Ping at the most urgent
priority and waits; the reader hands every Pong to `answer`, which notes when it arrived. A Pong
whose nonce we did not send (or whose Ping gave up waiting) is ignored, as a keep-alive answer
needs nothing (docs/protocol.md, 5.3). When the connection ends, every waiting ping wakes and
finds no answer.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

import trio

__all__ = ["OpenPing", "Pings"]


@dataclass
class OpenPing:
    """One Ping sent: woken when its Pong arrives (``answered_at`` set) or the connection ends."""

    nonce: int
    done: trio.Event = field(default_factory=trio.Event)
    answered_at: float | None = None


class Pings:
    """The Pings of one connection that still wait for their Pong."""

    def __init__(self) -> None:
        self._open: dict[int, OpenPing] = {}
        self.sent = 0
        self.ignored = 0  # Pongs that answered no open Ping

    def __len__(self) -> int:
        return len(self._open)

    def open(self) -> OpenPing:
        """A new Ping with a nonce no open one has; `close` it when done waiting."""
        while (nonce := secrets.randbits(64)) in self._open:
            pass
        ping = self._open[nonce] = OpenPing(nonce)
        self.sent += 1
        return ping

    def close(self, ping: OpenPing) -> None:
        self._open.pop(ping.nonce, None)

    def answer(self, nonce: int, at: float) -> None:
        """A Pong with ``nonce`` arrived at time ``at`` (trio's clock)."""
        ping = self._open.get(nonce)
        if ping is None or ping.done.is_set():
            self.ignored += 1
            return
        ping.answered_at = at
        ping.done.set()

    def fail_all(self) -> None:
        """The connection is gone: wake every waiting ping, unanswered."""
        for ping in self._open.values():
            ping.done.set()
