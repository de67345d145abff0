"""Peer gossip (docs/protocol.md, section 5.5): signed, dialable addresses of other nodes."""

from __future__ import annotations

from typing import Annotated

from streamer.wire.compound import Records
from streamer.wire.connection import overlay_address
from streamer.wire.declare import Message, message, record
from streamer.wire.fields import U16, U64, Host, PublicKey, Signature

MAX_PEER_RECORDS = 128


@record
class PeerRecord:
    """A signed, dialable address of a node; not a message by itself, carried in :class:`Peers`."""

    network_id: U64
    host: Host
    port: U16
    public_key: PublicKey
    signature: Signature

    @property
    def overlay(self) -> bytes:
        """The overlay address derived from the record's key and network ID."""
        return overlay_address(self.public_key, self.network_id)


@message(0x30)
class Peers(Message):
    """Signed peer records a node gossips to its peers (section 5.10)."""

    records: Annotated[tuple[PeerRecord, ...], Records(PeerRecord, MAX_PEER_RECORDS)]
