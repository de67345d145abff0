"""Where known peers can be reached, and when a failed one may be tried again (pure).

The address book maps overlays to dialable addresses (learned from handshakes and from verified
gossip); the backoff spaces out re-dials of peers that failed, doubling the wait per failure up
to a cap, so a dead peer costs little and a restarted one is found again. Time is passed in.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class PeerAddress:
    """A peer's overlay and the TCP address it listens on."""

    overlay: bytes
    host: str
    port: int

    def __post_init__(self) -> None:
        if not self.host:
            raise ValueError("peer address needs a host")
        if not 0 < self.port < 65536:
            raise ValueError(f"peer port must be in 1..65535, got {self.port}")

    def __str__(self) -> str:
        return f"{self.overlay.hex()[:12]}@{self.host}:{self.port}"


class AddressBook:
    """Dialable addresses by overlay; the latest learned address wins."""

    def __init__(self) -> None:
        self._addresses: dict[bytes, PeerAddress] = {}

    def add(self, address: PeerAddress) -> bool:
        """Record an address; True if it is new or changed."""
        if self._addresses.get(address.overlay) == address:
            return False
        self._addresses[address.overlay] = address
        return True

    def get(self, overlay: bytes) -> PeerAddress | None:
        return self._addresses.get(overlay)

    def remove(self, overlay: bytes) -> None:
        self._addresses.pop(overlay, None)

    def __contains__(self, overlay: object) -> bool:
        return overlay in self._addresses

    def __len__(self) -> int:
        return len(self._addresses)

    def __iter__(self) -> Iterator[PeerAddress]:
        return iter(list(self._addresses.values()))


@dataclass
class _Failures:
    count: int
    retry_at: float


class Backoff:
    """Exponential backoff per key: after n failures, wait base * 2**(n-1), at most `cap`."""

    def __init__(self, base: float = 1.0, cap: float = 60.0) -> None:
        if base <= 0 or cap < base:
            raise ValueError(f"backoff needs 0 < base <= cap, got base {base}, cap {cap}")
        self.base = base
        self.cap = cap
        self._failures: dict[bytes, _Failures] = {}

    def failed(self, key: bytes, now: float) -> float:
        """Record a failure at `now`; returns when the key may be tried again."""
        previous = self._failures.get(key)
        count = 1 if previous is None else previous.count + 1
        delay = min(self.cap, self.base * 2 ** (count - 1))
        self._failures[key] = _Failures(count, now + delay)
        return now + delay

    def succeeded(self, key: bytes) -> None:
        self._failures.pop(key, None)

    def ready(self, key: bytes, now: float) -> bool:
        failures = self._failures.get(key)
        return failures is None or now >= failures.retry_at

    def failures(self, key: bytes) -> int:
        failures = self._failures.get(key)
        return 0 if failures is None else failures.count

    def next_retry(self) -> float | None:
        """The earliest time a backed-off key becomes ready (None if none is waiting)."""
        return min((f.retry_at for f in self._failures.values()), default=None)
