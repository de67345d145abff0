"""The connection's own messages (docs/protocol.md, sections 4 and 5.1): the greeting (Hello,
Handshake), keep-alive (Ping, Pong) and Goodbye; and who a node is on the overlay."""

from __future__ import annotations

import enum
import struct
from typing import Annotated

from chunks.bmt import keccak256
from streamer.wire.declare import Message, message
from streamer.wire.fields import (
    U16,
    U64,
    Address,
    Bytes,
    Code,
    Host,
    PublicKey,
    Reason,
    Signature,
    to_bytes,
    uint,
)
from streamer.wire.limits import MAX_REASON_SIZE, PUBLIC_KEY_SIZE

PROTOCOL_VERSION = 7
"""The ``version`` this implementation puts in its handshake. Version 2 added the Hello nonces
(handshake signatures bound to one connection) and the Unsubscribed acknowledgement; version 3
the TLS channel under the protocol, and the channel binding every handshake signature covers;
version 4 provable streams (signed states of each bin's log, proven offers and receipts), live
propagation and push syncing; version 5 the pruning of redundant live paths (`LivePause`,
`LiveHave`); version 7 several wanted chunks in one frame (`ChunkDeliveries`)."""

CHANNEL_BINDING_SIZE = 32
PLAIN_BINDING = bytes(CHANNEL_BINDING_SIZE)
"""The channel binding of a plain (unencrypted) connection: it binds nothing."""

NONCE_SIZE = 32


class GoodbyeCode(enum.IntEnum):
    """Why a peer closes the connection. Codes not listed here are kept as plain ints."""

    NORMAL = 0
    PROTOCOL_ERROR = 1
    BAD_HANDSHAKE = 2
    WRONG_NETWORK = 3
    VERSION_MISMATCH = 4
    INVALID_CHUNK = 5
    UNSOLICITED_DELIVERY = 6
    SHUTDOWN = 7
    DUPLICATE_CONNECTION = 8
    PRUNED = 9
    OVERLOADED = 10
    BAD_PROOF = 11
    INCONSISTENT_STATE = 12


def clip_reason(reason: str) -> str:
    """``reason`` cut to fit a Goodbye or a RetrieveFailure: at most MAX_REASON_SIZE bytes of UTF-8."""
    data = reason.encode()
    return reason if len(data) <= MAX_REASON_SIZE else data[:MAX_REASON_SIZE].decode(errors="ignore")


def overlay_address(public_key: bytes, network_id: int) -> bytes:
    """A node's overlay address: Keccak-256 of its Ed25519 public key and the network ID (u64 BE).

    Because the overlay is derived from the key, no peer can claim an arbitrary address.
    """
    key = to_bytes("overlay_address", "public_key", public_key, PUBLIC_KEY_SIZE)
    nid = uint("overlay_address", "network_id", network_id, 64)
    return keccak256(key + struct.pack(">Q", nid))


@message(0x05)
class Hello(Message):
    """Very first message each side sends: a fresh random challenge.

    Each side's `Handshake` signature covers the *other* side's nonce, so a handshake recorded
    on one connection cannot be replayed on another.
    """

    nonce: Annotated[bytes, Bytes(NONCE_SIZE)]


@message(0x01)
class Handshake(Message):
    """First message each side sends: who I am, signed with the key the overlay derives from."""

    version: U16
    network_id: U64
    overlay: Address
    epoch: U64
    host: Host
    port: U16
    public_key: PublicKey
    signature: Signature


@message(0x02)
class Goodbye(Message):
    """Last message before closing: a :class:`GoodbyeCode` (or an unknown int code) and a reason."""

    code: Annotated[int, Code(GoodbyeCode, 16)]
    reason: Reason = ""


@message(0x03)
class Ping(Message):
    """A keep-alive or a timed round trip: the receiver answers at once with a `Pong` of the same nonce."""

    nonce: U64


@message(0x04)
class Pong(Message):
    """The answer to a `Ping`, echoing its nonce."""

    nonce: U64
