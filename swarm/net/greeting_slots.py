"""Greeting slots: which inbound connections may be greeted while others still are (pure).

A connection that has not finished its greeting holds a task, a socket and (over TLS) a
handshake's worth of memory, and proves nothing yet: anyone can open hundreds. So at most
`per_host` greet at once from one remote address, and at most `total` in all. A full house must
not lock honest newcomers out (130 half-open sockets from 9 addresses once left honest
handshakes succeeding 4 times in 18): when every slot is taken, a connection from an address
that holds fewer slots than the busiest one takes the slot of the busiest address's oldest
greeting, which is closed. So an address with no greeting under way always gets in, and a
flood from a few addresses only ever competes with itself.

Slots are numbered tokens; the trio shell (`swarm.net.sessions`) closes the connections whose
tokens `admit` returns as evicted and releases each token when its greeting ends.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

__all__ = ["GreetingSlots", "SlotGrant"]


@dataclass(frozen=True)
class SlotGrant:
    """A slot for the newcomer (None: refused) and the greeting it displaced (None: none)."""

    token: int | None
    evicted: int | None = None


class GreetingSlots:
    """At most `per_host` greetings per remote address and `total` in all."""

    def __init__(self, *, total: int, per_host: int) -> None:
        if per_host < 1 or total < per_host:
            raise ValueError(f"greeting slots need 1 <= per_host <= total, got {per_host} and {total}")
        self.total = total
        self.per_host = per_host
        self._by_host: dict[str, deque[int]] = {}  # host -> its tokens, oldest first
        self._host_of: dict[int, str] = {}
        self._next = 0

    def __len__(self) -> int:
        return len(self._host_of)

    def held(self, host: str) -> int:
        """Greetings under way from `host`."""
        tokens = self._by_host.get(host)
        return len(tokens) if tokens else 0

    def admit(self, host: str) -> SlotGrant:
        """A slot for a new connection from `host`, if one can be had."""
        mine = self.held(host)
        if mine >= self.per_host:
            return SlotGrant(None)
        evicted = None
        if len(self._host_of) >= self.total:
            busiest = self._busiest()
            if self.held(busiest) <= mine + 1:  # taking its slot would not make things fairer
                return SlotGrant(None)
            evicted = self._by_host[busiest][0]
            self.release(evicted)
        token = self._next
        self._next += 1
        self._host_of[token] = host
        self._by_host.setdefault(host, deque()).append(token)
        return SlotGrant(token, evicted)

    def release(self, token: int) -> None:
        """The greeting of `token` ended (or was evicted); unknown tokens are ignored."""
        host = self._host_of.pop(token, None)
        if host is None:
            return
        tokens = self._by_host[host]
        tokens.remove(token)
        if not tokens:
            del self._by_host[host]

    def _busiest(self) -> str:
        """The address holding the most slots; of equals, the one with the oldest greeting."""
        return max(self._by_host, key=lambda h: (len(self._by_host[h]), -self._by_host[h][0]))
