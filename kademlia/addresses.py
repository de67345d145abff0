"""Where known peers can be reached, which addresses may be dialled, when to retry (pure).

The address book maps overlays to dialable addresses (learned from handshakes and from verified
gossip), at most `per_bin` per proximity bin: a flood of validly signed records for made-up peers
must not grow it without bound. When a bin is full, an address never seen working gives way to
the newcomer; peers seen working are kept. The dial policy says which hosts a node may dial at
all, so that gossip cannot point it at arbitrary hosts and ports. The backoff spaces out re-dials
of peers that failed, doubling the wait per failure up to a cap, so a dead peer costs little and
a restarted one is found again. Time is passed in.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pot import MAX_PO, proximity

DEFAULT_PER_BIN = 64
"""Addresses kept per proximity bin: far more than a bin's connections (saturation), few enough
that a gossip flood costs kilobytes."""


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


@dataclass(frozen=True)
class Admission:
    """What adding an address did: `changed` (new or moved), and the overlay it displaced."""

    changed: bool
    evicted: bytes | None = None
    refused: bool = False  # its bin is full of peers seen working


class AddressBook:
    """Dialable addresses by overlay, at most `per_bin` per bin of `base`; the latest wins."""

    def __init__(self, base: bytes, *, per_bin: int = DEFAULT_PER_BIN) -> None:
        if per_bin < 1:
            raise ValueError(f"an address book keeps at least 1 address per bin, not {per_bin}")
        self.base = base
        self.per_bin = per_bin
        self._addresses: dict[bytes, PeerAddress] = {}
        self._bins: list[dict[bytes, None]] = [{} for _ in range(MAX_PO + 1)]  # insertion order
        self._working: set[bytes] = set()

    def _bin(self, overlay: bytes) -> dict[bytes, None]:
        return self._bins[min(proximity(self.base, overlay), MAX_PO)]

    def add(self, address: PeerAddress) -> Admission:
        """Record an address; a full bin makes room by dropping its oldest unproven address."""
        overlay = address.overlay
        if overlay in self._addresses:
            changed = self._addresses[overlay] != address
            self._addresses[overlay] = address
            return Admission(changed)
        members = self._bin(overlay)
        evicted = None
        if len(members) >= self.per_bin:
            evicted = next((o for o in members if o not in self._working), None)
            if evicted is None:
                return Admission(False, refused=True)
            self.remove(evicted)
        members[overlay] = None
        self._addresses[overlay] = address
        return Admission(True, evicted)

    def worked(self, overlay: bytes) -> None:
        """A connection with this peer succeeded: it is kept when its bin fills up."""
        if overlay in self._addresses:
            self._working.add(overlay)

    def get(self, overlay: bytes) -> PeerAddress | None:
        return self._addresses.get(overlay)

    def remove(self, overlay: bytes) -> None:
        if self._addresses.pop(overlay, None) is not None:
            self._bin(overlay).pop(overlay, None)
            self._working.discard(overlay)

    def __contains__(self, overlay: object) -> bool:
        return overlay in self._addresses

    def __len__(self) -> int:
        return len(self._addresses)

    def __iter__(self) -> Iterator[PeerAddress]:
        return iter(list(self._addresses.values()))


def normalise_host(host: str) -> str | None:
    """The canonical text of an IP literal, None if `host` is not one.

    An IPv4 address written as IPv6 (mapped `::ffff:127.0.0.1`, translated `::ffff:0:127.0.0.1`,
    or the deprecated compatible `::127.0.0.1`) is the IPv4 address: the dial policy judges
    `127.0.0.1`, not a string it does not recognise, and the book keeps one form per address.
    IPv6 is written compressed and in lower case, without a zone.
    """
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv4Address):
        return str(ip)
    embedded = _embedded_ipv4(ip)
    if embedded is not None:
        return str(embedded)
    return str(ipaddress.IPv6Address(int(ip)))  # drops a %zone


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    value = int(ip)
    if value >> 32 == 0xFFFF0000:  # ::ffff:0:a.b.c.d, IPv4-translated (RFC 2765)
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if value >> 32 == 0 and value > 1:  # ::a.b.c.d, IPv4-compatible (RFC 4291, deprecated); not :: or ::1
        return ipaddress.IPv4Address(value)
    return None


class DialPolicy:
    """Which hosts may be dialled: IP literals inside the allowed networks, nothing else.

    A host name in a gossiped record would make the node resolve names a stranger chose; an
    address outside the network's range (a loopback swarm's node told to dial the internet, or a
    public node told to dial its operator's loopback) is refused the same way. Hosts are judged in
    their normal form (`normalise_host`), so `::ffff:127.0.0.1` is judged as `127.0.0.1`; an IPv6
    address that tunnels to an IPv4 one (6to4, Teredo) is judged by that one too.
    """

    def __init__(self, networks: Iterable[str]) -> None:
        self.networks = tuple(ipaddress.ip_network(n, strict=False) for n in networks)

    @classmethod
    def for_host(cls, listen_host: str) -> DialPolicy:
        """The default for a node listening on `listen_host`: loopback only for a loopback
        node (a local swarm), else every address but loopback, link-local and multicast."""
        try:
            if ipaddress.ip_address(listen_host).is_loopback:
                return cls(["127.0.0.0/8", "::1/128"])
        except ValueError:
            pass
        return _PublicPolicy()

    def allows(self, host: str) -> bool:
        normal = normalise_host(host)
        if normal is None:
            return False
        return all(self._allows(ip) for ip in _judged(normal))

    def _allows(self, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return any(ip in network for network in self.networks)

    def __str__(self) -> str:
        return ", ".join(str(n) for n in self.networks)


class _PublicPolicy(DialPolicy):
    def __init__(self) -> None:
        super().__init__([])

    def _allows(self, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return not (ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_unspecified)

    def __str__(self) -> str:
        return "any address but loopback, link-local and multicast"


def _judged(normal: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The address, and the IPv4 address it tunnels to (6to4, Teredo's client), if any."""
    ip = ipaddress.ip_address(normal)
    judged: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.sixtofour is not None:
            judged.append(ip.sixtofour)
        if ip.teredo is not None:
            judged.append(ip.teredo[1])
    return judged


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

    def next_retry(self, after: float = float("-inf")) -> float | None:
        """The earliest time after ``after`` a backed-off key becomes ready (None: none waits).
        (A key stays after its wait is over, until `succeeded`: its count goes on.)"""
        return min((f.retry_at for f in self._failures.values() if f.retry_at > after), default=None)
