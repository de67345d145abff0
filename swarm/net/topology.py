"""Topology: the peers this node knows and the ones it is connected to, kept consistent.

The address book (bounded per bin, guarded by the dial policy) and the peer table must agree on
who is known: a peer the book evicts leaves the table and its gossip record, and a new one wakes
the connection manager. Both `Gossip` (verified records) and `Sessions` (handshakes) learn peers
through `learn`; a connection coming or going goes through `connected` and `disconnected`.
"""

from __future__ import annotations

from collections.abc import Callable

from kademlia import PeerTable
from kademlia.addresses import AddressBook, DialPolicy, PeerAddress, normalise_host

__all__ = ["Topology"]


class Topology:
    def __init__(
        self,
        overlay: bytes,
        table: PeerTable,
        book: AddressBook,
        dial_policy: DialPolicy,
        *,
        forget_record: Callable[[bytes], None],
        changed: Callable[[], None],
    ) -> None:
        """``forget_record`` drops gossip's record of a peer the book let go; ``changed`` tells
        the connection manager there is something new to consider."""
        self.overlay = overlay
        self.table = table
        self.book = book
        self.dial_policy = dial_policy
        self._forget_record = forget_record
        self._changed = changed
        self.refused = 0
        """Addresses not kept: not dialable under the policy, or their bin full of working peers."""

    def learn(self, address: PeerAddress) -> bool:
        """A peer and where it listens (from a handshake or verified gossip); False if it is not
        kept (an address this node may not dial, or its bin is full of peers seen working)."""
        if address.overlay == self.overlay:
            return False
        host = normalise_host(address.host)  # ::ffff:127.0.0.1 is 127.0.0.1, to the policy and the book
        if host is None or not self.dial_policy.allows(host):
            self.refused += 1
            return False
        if host != address.host:
            address = PeerAddress(address.overlay, host, address.port)
        admission = self.book.add(address)
        if admission.evicted is not None:
            self.table.remove_known(admission.evicted)
            self._forget_record(admission.evicted)
        if admission.refused:
            self.refused += 1
            return False
        if self.table.add_known(address.overlay) or admission.changed:
            self._changed()
        return True

    def connected(self, overlay: bytes, host: str | None, port: int | None) -> None:
        """A session with the peer started; it told where it listens (if it listens)."""
        if host and port:
            self.learn(PeerAddress(overlay, host, port))
        self.book.worked(overlay)
        self.table.connect(overlay)

    def disconnected(self, overlay: bytes) -> None:
        """A session ended; a peer the book does not keep (it told no address, or its bin is full)
        is forgotten, so that one-off identities do not pile up in the table."""
        if overlay in self.book:
            self.table.disconnect(overlay)
        else:
            self.table.remove_known(overlay)
        self._changed()
