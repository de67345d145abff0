"""The connection manager: dials suggested peers until bins are saturated and the neighbourhood
is complete, re-dials with backoff, prunes over-saturated bins (trio).

It knows nothing of sockets or the wire: the node hands it `dial` (connect and handshake one
peer; returns once connected, raises on failure) and `disconnect` (close a connection), and
tells it when something changed (`changed()`: a peer learned, connected or gone). The table it
drives is the node's `PeerTable`, which the node keeps current on every connect and disconnect.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import trio

from kademlia.addresses import AddressBook, Backoff, PeerAddress
from kademlia.suggest import SuggestionStrategy, suggest_peer
from kademlia.table import PeerTable

log = logging.getLogger(__name__)

Dial = Callable[[PeerAddress], Awaitable[object]]
Disconnect = Callable[[bytes, str], None]


@dataclass(frozen=True)
class ManagerStatistics:
    dials: int
    dial_failures: int
    dialling: int
    pruned: int
    depth: int


class ConnectionManager:
    """Keeps the table's bins filled with the chosen suggestion strategy."""

    def __init__(
        self,
        table: PeerTable,
        book: AddressBook,
        strategy: SuggestionStrategy,
        dial: Dial,
        disconnect: Disconnect,
        *,
        max_dials: int = 4,
        interval: float = 5.0,
        backoff: Backoff | None = None,
    ) -> None:
        self.table = table
        self.book = book
        self.strategy = strategy
        self._dial = dial
        self._disconnect = disconnect
        self.max_dials = max_dials
        self.interval = interval
        self.backoff = backoff or Backoff()
        self._dialling: set[bytes] = set()
        self._pruning: set[bytes] = set()
        self._wake = trio.Event()
        self.dials = 0
        self.dial_failures = 0
        self.pruned = 0

    def changed(self) -> None:
        """Something the suggestion depends on changed: look again soon."""
        self._wake.set()

    def callable(self, overlay: bytes) -> bool:
        """Whether a known peer can be dialled now (an address, not dialling, not backing off)."""
        return (
            overlay in self.book
            and overlay not in self._dialling
            and self.backoff.ready(overlay, trio.current_time())
        )

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            task_status.started()
            while True:
                self._wake = trio.Event()
                self._prune()
                while len(self._dialling) < self.max_dials:
                    overlay = suggest_peer(self.table, self.strategy, self.callable)
                    if overlay is None:
                        break
                    address = self.book.get(overlay)
                    assert address is not None  # callable() checked it
                    self._dialling.add(overlay)
                    nursery.start_soon(self._dial_one, address)
                with trio.move_on_at(self._next_look()):
                    await self._wake.wait()

    def _next_look(self) -> float:
        now = trio.current_time()
        retry = self.backoff.next_retry(after=now)
        deadline = now + self.interval
        return deadline if retry is None else max(now, min(deadline, retry))

    async def _dial_one(self, address: PeerAddress) -> None:
        self.dials += 1
        try:
            await self._dial(address)
        except Exception as exc:  # the dial function reports every failure it cannot recover from
            self.dial_failures += 1
            retry = self.backoff.failed(address.overlay, trio.current_time())
            log.info("dial %s failed (%s); next try in %.1fs", address, exc, retry - trio.current_time())
        finally:
            self._dialling.discard(address.overlay)
            self.changed()

    def session_ended(self, overlay: bytes, broken: bool) -> None:
        """A session with ``overlay`` ended. Broken off by a protocol violation (a peer that
        refuses us, or one we refuse, right after the handshake), it counts as a failed dial:
        the peer is dialled again with exponential backoff, not at once (a restored node was
        refused some 85 times a second). Ended cleanly, its backoff is cleared."""
        if broken:
            retry = self.backoff.failed(overlay, trio.current_time())
            log.info(
                "session with %s broken off; next dial in %.1fs",
                overlay.hex()[:12],
                retry - trio.current_time(),
            )
        else:
            self.backoff.succeeded(overlay)

    def _prune(self) -> None:
        self._pruning &= set(self.table.connected_peers())
        for overlay in self.table.over_saturated():
            if overlay not in self._pruning:
                self._pruning.add(overlay)
                self.pruned += 1
                self._disconnect(overlay, "bin over-saturated")

    def statistics(self) -> ManagerStatistics:
        return ManagerStatistics(
            dials=self.dials,
            dial_failures=self.dial_failures,
            dialling=len(self._dialling),
            pruned=self.pruned,
            depth=self.table.depth(),
        )
