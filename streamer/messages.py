"""Messages of the streamer wire protocol: frozen dataclasses that validate every field.

A message is a value. Constructing one with a field out of range raises :class:`MessageError`
naming the message and the field, so an instance that exists is always encodable. Byte-like
fields accept ``bytes``, ``bytearray`` or ``memoryview`` and are stored as ``bytes``; sequence
fields accept any iterable and are stored as tuples. Each class carries its wire type code in
``TYPE``; the byte layout lives in :mod:`streamer.codec` and is written down in docs/protocol.md.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

from bitarray import bitarray

from chunks.bmt import keccak256
from pot import MAX_PO
from streamer.errors import MessageError

PROTOCOL_VERSION = 5
"""The ``version`` this implementation puts in its handshake. Version 2 added the Hello nonces
(handshake signatures bound to one connection) and the Unsubscribed acknowledgement; version 3
the TLS channel under the protocol, and the channel binding every handshake signature covers;
version 4 provable streams (signed states of each bin's log, proven offers and receipts), live
propagation and push syncing; version 5 the pruning of redundant live paths (`LivePause`,
`LiveHave`)."""

CHANNEL_BINDING_SIZE = 32
PLAIN_BINDING = bytes(CHANNEL_BINDING_SIZE)
"""The channel binding of a plain (unencrypted) connection: it binds nothing."""

FRAME_HEADER_SIZE = 4
MAX_FRAME_SIZE = 65536
"""Largest allowed value of a frame's length field (type byte + body)."""

ADDRESS_SIZE = 32
PUBLIC_KEY_SIZE = 32
SIGNATURE_SIZE = 64
SPAN_SIZE = 8
MAX_PAYLOAD_SIZE = 4096
MIN_CHUNK_DATA_SIZE = SPAN_SIZE
SOC_HEADER_SIZE = 32 + 65
"""A single-owner chunk's id and signature, before its ``span || payload``."""
MAX_CHUNK_DATA_SIZE = SOC_HEADER_SIZE + SPAN_SIZE + MAX_PAYLOAD_SIZE
"""Largest chunk data on the wire: a single-owner chunk with a full payload (4201 bytes); a
content chunk's data is at most 4104."""
MAX_BIN = MAX_PO
BIN_COUNT = MAX_BIN + 1
MAX_BATCH_SIZE = 128
"""Most hashes in one offer; also the number of bits of a want vector."""
OFFER_WINDOW = 2
"""Most offers of one stream the upstream may have sent and not had answered (section 8.2)."""
WANT_SIZE = MAX_BATCH_SIZE // 8
HOLES_SIZE = WANT_SIZE
"""Bytes of a proven offer's hole mask: one bit per offered entry, as in a want vector."""
HASH_SIZE = 32
MAX_PROOF_HASHES = 192
"""Most hashes in a proof: a frontier (at most 64) and a compact range (at most 2 per level)."""
MAX_HOST_SIZE = 255
MAX_REASON_SIZE = 1024
MAX_PEER_RECORDS = 128

_U8, _U16, _U64 = 8, 16, 64


class MessageType(enum.IntEnum):
    """Wire type codes: the byte after a frame's length field."""

    HANDSHAKE = 0x01
    GOODBYE = 0x02
    PING = 0x03
    PONG = 0x04
    HELLO = 0x05
    CURSORS_REQUEST = 0x10
    CURSORS_REPLY = 0x11
    SUBSCRIBE = 0x12
    UNSUBSCRIBE = 0x13
    OFFERED_HASHES = 0x14
    WANTED_HASHES = 0x15
    CHUNK_DELIVERY = 0x16
    UNSUBSCRIBED = 0x17
    STATE_REQUEST = 0x18
    STATE_REPLY = 0x19
    PROVEN_OFFER = 0x1A
    RECEIPT = 0x1B
    RETRIEVE_REQUEST = 0x20
    RETRIEVE_DELIVERY = 0x21
    RETRIEVE_FAILURE = 0x22
    PUSH_DELIVERY = 0x23
    PUSH_RECEIPT = 0x24
    PUSH_FAILURE = 0x25
    PEERS = 0x30
    LIVE_INTEREST = 0x40
    FEED_PUSH = 0x41
    TOPIC_PUSH = 0x42
    LIVE_PAUSE = 0x43
    LIVE_HAVE = 0x44


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
    key = _bytes("overlay_address", "public_key", public_key, PUBLIC_KEY_SIZE)
    nid = _uint("overlay_address", "network_id", network_id, _U64)
    return keccak256(key + struct.pack(">Q", nid))


# -- field validation -----------------------------------------------------------------------------


def _set(obj: object, field: str, value: object) -> None:
    object.__setattr__(obj, field, value)


def _uint(owner: str, field: str, value: Any, bits: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MessageError(f"{owner}.{field} must be an int, got {type(value).__name__}")
    if not 0 <= value < 1 << bits:
        raise MessageError(f"{owner}.{field} must be in 0..{(1 << bits) - 1} (u{bits}), got {value}")
    return value


def _bool(owner: str, field: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise MessageError(f"{owner}.{field} must be a bool, got {type(value).__name__}")
    return value


def _bin(owner: str, value: Any) -> int:
    _uint(owner, "bin", value, _U8)
    if value > MAX_BIN:
        raise MessageError(f"{owner}.bin must be in 0..{MAX_BIN}, got {value}")
    return int(value)


def _bytes(
    owner: str,
    field: str,
    value: Any,
    size: int | None = None,
    *,
    min_size: int = 0,
    max_size: int | None = None,
) -> bytes:
    if isinstance(value, bytes):
        data = value
    elif isinstance(value, bytearray | memoryview):
        data = bytes(value)
    else:
        raise MessageError(f"{owner}.{field} must be bytes, got {type(value).__name__}")
    if size is not None and len(data) != size:
        raise MessageError(f"{owner}.{field} must be {size} bytes, got {len(data)}")
    if len(data) < min_size or (max_size is not None and len(data) > max_size):
        raise MessageError(f"{owner}.{field} must be {min_size}..{max_size} bytes, got {len(data)}")
    return data


def _text(owner: str, field: str, value: Any, max_size: int) -> None:
    if not isinstance(value, str):
        raise MessageError(f"{owner}.{field} must be a str, got {type(value).__name__}")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise MessageError(f"{owner}.{field} is not encodable as UTF-8: {exc.reason}") from exc
    if size > max_size:
        raise MessageError(f"{owner}.{field} must be at most {max_size} bytes of UTF-8, got {size}")


def _tuple(owner: str, field: str, value: Any, max_len: int) -> tuple[Any, ...]:
    if isinstance(value, str | bytes | bytearray | memoryview) or not isinstance(value, Iterable):
        raise MessageError(f"{owner}.{field} must be a tuple, got {type(value).__name__}")
    items = value if isinstance(value, tuple) else tuple(value)
    if len(items) > max_len:
        raise MessageError(f"{owner}.{field} holds at most {max_len} items, got {len(items)}")
    return items


def _range(owner: str, start: Any, end: Any) -> None:
    _uint(owner, "start", start, _U64)
    _uint(owner, "end", end, _U64)
    if start < 1:
        raise MessageError(f"{owner}.start must be >= 1 (bin IDs start at 1), got {start}")
    if end < start:
        raise MessageError(f"{owner}.end must be >= start ({start}), got {end}")


def _chunk_data(owner: str, value: Any) -> bytes:
    return _bytes(owner, "data", value, min_size=MIN_CHUNK_DATA_SIZE, max_size=MAX_CHUNK_DATA_SIZE)


# -- connection messages --------------------------------------------------------------------------

NONCE_SIZE = 32


@dataclass(frozen=True, slots=True)
class Hello:
    """Very first message each side sends: a fresh random challenge.

    Each side's `Handshake` signature covers the *other* side's nonce, so a handshake recorded
    on one connection cannot be replayed on another.
    """

    TYPE: ClassVar[MessageType] = MessageType.HELLO

    nonce: bytes

    def __post_init__(self) -> None:
        _set(self, "nonce", _bytes("Hello", "nonce", self.nonce, NONCE_SIZE))


@dataclass(frozen=True, slots=True)
class Handshake:
    """First message each side sends: who I am, signed with the key the overlay derives from."""

    TYPE: ClassVar[MessageType] = MessageType.HANDSHAKE

    version: int
    network_id: int
    overlay: bytes
    epoch: int
    host: str
    port: int
    public_key: bytes
    signature: bytes

    def __post_init__(self) -> None:
        n = "Handshake"
        _uint(n, "version", self.version, _U16)
        _uint(n, "network_id", self.network_id, _U64)
        _set(self, "overlay", _bytes(n, "overlay", self.overlay, ADDRESS_SIZE))
        _uint(n, "epoch", self.epoch, _U64)
        _text(n, "host", self.host, MAX_HOST_SIZE)
        _uint(n, "port", self.port, _U16)
        _set(self, "public_key", _bytes(n, "public_key", self.public_key, PUBLIC_KEY_SIZE))
        _set(self, "signature", _bytes(n, "signature", self.signature, SIGNATURE_SIZE))


@dataclass(frozen=True, slots=True)
class Goodbye:
    """Last message before closing: a :class:`GoodbyeCode` (or an unknown int code) and a reason."""

    TYPE: ClassVar[MessageType] = MessageType.GOODBYE

    code: int
    reason: str = ""

    def __post_init__(self) -> None:
        _uint("Goodbye", "code", self.code, _U16)
        _text("Goodbye", "reason", self.reason, MAX_REASON_SIZE)
        try:
            _set(self, "code", GoodbyeCode(self.code))
        except ValueError:
            _set(self, "code", int(self.code))


@dataclass(frozen=True, slots=True)
class Ping:
    TYPE: ClassVar[MessageType] = MessageType.PING

    nonce: int

    def __post_init__(self) -> None:
        _uint("Ping", "nonce", self.nonce, _U64)


@dataclass(frozen=True, slots=True)
class Pong:
    TYPE: ClassVar[MessageType] = MessageType.PONG

    nonce: int

    def __post_init__(self) -> None:
        _uint("Pong", "nonce", self.nonce, _U64)


# -- pull syncing ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CursorsRequest:
    """Downstream asks the upstream for its epoch and its cursor (highest bin ID) per bin."""

    TYPE: ClassVar[MessageType] = MessageType.CURSORS_REQUEST


@dataclass(frozen=True, slots=True)
class CursorsReply:
    """The upstream's store epoch and its cursor per bin (index = bin; 0 = bin empty)."""

    TYPE: ClassVar[MessageType] = MessageType.CURSORS_REPLY

    epoch: int
    cursors: tuple[int, ...]

    def __post_init__(self) -> None:
        _uint("CursorsReply", "epoch", self.epoch, _U64)
        cursors = _tuple("CursorsReply", "cursors", self.cursors, BIN_COUNT)
        for i, cursor in enumerate(cursors):
            _uint("CursorsReply", f"cursors[{i}]", cursor, _U64)
        _set(self, "cursors", cursors)


@dataclass(frozen=True, slots=True)
class Subscribe:
    """Open the stream (bin, live): historical ``[start, end]`` or live ``[start, open)`` (end 0)."""

    TYPE: ClassVar[MessageType] = MessageType.SUBSCRIBE

    bin: int
    live: bool
    start: int
    end: int

    def __post_init__(self) -> None:
        n = "Subscribe"
        _bin(n, self.bin)
        _bool(n, "live", self.live)
        _uint(n, "start", self.start, _U64)
        _uint(n, "end", self.end, _U64)
        if self.start < 1:
            raise MessageError(f"{n}.start must be >= 1 (bin IDs start at 1), got {self.start}")
        if self.live and self.end != 0:
            raise MessageError(f"{n}.end must be 0 (open-ended) for a live stream, got {self.end}")
        if not self.live and self.end < self.start:
            raise MessageError(
                f"{n}.end must be >= start ({self.start}) for a historical stream, got {self.end}"
            )


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    TYPE: ClassVar[MessageType] = MessageType.UNSUBSCRIBE

    bin: int
    live: bool

    def __post_init__(self) -> None:
        _bin("Unsubscribe", self.bin)
        _bool("Unsubscribe", "live", self.live)


@dataclass(frozen=True, slots=True)
class Unsubscribed:
    """The upstream stopped the stream (bin, live): every offer of it was sent before this."""

    TYPE: ClassVar[MessageType] = MessageType.UNSUBSCRIBED

    bin: int
    live: bool

    def __post_init__(self) -> None:
        _bin("Unsubscribed", self.bin)
        _bool("Unsubscribed", "live", self.live)


@dataclass(frozen=True, slots=True, repr=False)
class OfferedHashes:
    """Addresses of the chunks with bin IDs in ``[start, end]`` of the upstream's pull index.

    Chunks removed from the store leave holes, so an offer may hold fewer hashes than the range
    is long, but never more, and never more than :data:`MAX_BATCH_SIZE`.
    """

    TYPE: ClassVar[MessageType] = MessageType.OFFERED_HASHES

    bin: int
    live: bool
    start: int
    end: int
    hashes: tuple[bytes, ...]

    def __post_init__(self) -> None:
        n = "OfferedHashes"
        _bin(n, self.bin)
        _bool(n, "live", self.live)
        _range(n, self.start, self.end)
        hashes = _tuple(n, "hashes", self.hashes, MAX_BATCH_SIZE)
        if len(hashes) > self.end - self.start + 1:
            raise MessageError(
                f"{n}.hashes holds {len(hashes)} hashes, more than the range "
                f"[{self.start}, {self.end}] has bin IDs"
            )
        if not all(type(h) is bytes and len(h) == ADDRESS_SIZE for h in hashes):
            hashes = tuple(_bytes(n, f"hashes[{i}]", h, ADDRESS_SIZE) for i, h in enumerate(hashes))
        _set(self, "hashes", hashes)

    def __repr__(self) -> str:
        return (
            f"OfferedHashes(bin={self.bin}, live={self.live}, start={self.start}, end={self.end}, "
            f"hashes=<{len(self.hashes)} hashes>)"
        )


@dataclass(frozen=True, slots=True)
class WantedHashes:
    """The downstream's answer to one offer: bit ``i`` set = send me the ``i``-th offered chunk.

    Bit ``i`` lives in byte ``i // 8`` under mask ``1 << (i % 8)`` (least significant bit first).
    """

    TYPE: ClassVar[MessageType] = MessageType.WANTED_HASHES

    bin: int
    live: bool
    start: int
    end: int
    want: bytes

    def __post_init__(self) -> None:
        n = "WantedHashes"
        _bin(n, self.bin)
        _bool(n, "live", self.live)
        _range(n, self.start, self.end)
        _set(self, "want", _bytes(n, "want", self.want, WANT_SIZE))

    @classmethod
    def from_indices(cls, bin: int, live: bool, start: int, end: int, indices: Iterable[int]) -> WantedHashes:
        bits = bitarray(MAX_BATCH_SIZE, endian="little")
        bits.setall(0)
        for i in indices:
            _uint("WantedHashes", "index", i, _U8)
            if i >= MAX_BATCH_SIZE:
                raise MessageError(f"WantedHashes index must be in 0..{MAX_BATCH_SIZE - 1}, got {i}")
            bits[i] = 1
        return cls(bin, live, start, end, bits.tobytes())

    def _bits(self) -> bitarray:
        bits = bitarray(endian="little")
        bits.frombytes(self.want)
        return bits

    def wanted_indices(self) -> list[int]:
        """Indices of the wanted offered hashes, ascending."""
        return list(self._bits().search(1))

    def is_wanted(self, i: int) -> bool:
        if not 0 <= i < MAX_BATCH_SIZE:
            raise IndexError(f"offer index must be in 0..{MAX_BATCH_SIZE - 1}, got {i}")
        return bool(self.want[i >> 3] >> (i & 7) & 1)


@dataclass(frozen=True, slots=True, repr=False)
class ChunkDelivery:
    """One wanted chunk: ``index`` is its position in the offer that started at ``start``."""

    TYPE: ClassVar[MessageType] = MessageType.CHUNK_DELIVERY

    bin: int
    live: bool
    start: int
    index: int
    data: bytes

    def __post_init__(self) -> None:
        n = "ChunkDelivery"
        _bin(n, self.bin)
        _bool(n, "live", self.live)
        _uint(n, "start", self.start, _U64)
        if self.start < 1:
            raise MessageError(f"{n}.start must be >= 1 (bin IDs start at 1), got {self.start}")
        _uint(n, "index", self.index, _U8)
        if self.index >= MAX_BATCH_SIZE:
            raise MessageError(f"{n}.index must be in 0..{MAX_BATCH_SIZE - 1}, got {self.index}")
        _set(self, "data", _chunk_data(n, self.data))

    def __repr__(self) -> str:
        return (
            f"ChunkDelivery(bin={self.bin}, live={self.live}, start={self.start}, index={self.index}, "
            f"data=<{len(self.data)} bytes>)"
        )


# -- provable streams (docs/protocol.md section 8.6) ---------------------------------------------


def _hashes(owner: str, field: str, value: Any, max_len: int) -> tuple[bytes, ...]:
    items = _tuple(owner, field, value, max_len)
    if not all(type(h) is bytes and len(h) == HASH_SIZE for h in items):
        items = tuple(_bytes(owner, f"{field}[{i}]", h, HASH_SIZE) for i, h in enumerate(items))
    return items


@dataclass(frozen=True, slots=True)
class SignedState:
    """A state of one bin's log, signed by the upstream: its ``size`` first leaves have ``root``.

    Not a message by itself: carried by :class:`StateReply` and by live :class:`ProvenOffer`. The
    signature covers the upstream's overlay too (streamer/states.py), which the wire leaves out.
    """

    bin: int
    epoch: int
    size: int
    root: bytes
    signature: bytes

    def __post_init__(self) -> None:
        n = "SignedState"
        _bin(n, self.bin)
        _uint(n, "epoch", self.epoch, _U64)
        _uint(n, "size", self.size, _U64)
        _set(self, "root", _bytes(n, "root", self.root, HASH_SIZE))
        _set(self, "signature", _bytes(n, "signature", self.signature, SIGNATURE_SIZE))


@dataclass(frozen=True, slots=True)
class StateRequest:
    """Downstream asks for the signed state of ``bin`` at ``size`` leaves, with the proof that it
    and the state of ``known`` leaves it accepted before (0: none) are one log."""

    TYPE: ClassVar[MessageType] = MessageType.STATE_REQUEST

    bin: int
    size: int
    known: int

    def __post_init__(self) -> None:
        _bin("StateRequest", self.bin)
        _uint("StateRequest", "size", self.size, _U64)
        _uint("StateRequest", "known", self.known, _U64)
        if self.size < 1:
            raise MessageError(f"StateRequest.size must be >= 1, got {self.size}")


@dataclass(frozen=True, slots=True, repr=False)
class StateReply:
    """The state asked for and its consistency proof with the state of ``known`` leaves: the
    frontier at the smaller size, then the compact range up to the larger (chunks/merkle.py)."""

    TYPE: ClassVar[MessageType] = MessageType.STATE_REPLY

    state: SignedState
    known: int
    proof: tuple[bytes, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.state, SignedState):
            raise MessageError(f"StateReply.state must be a SignedState, got {type(self.state).__name__}")
        _uint("StateReply", "known", self.known, _U64)
        _set(self, "proof", _hashes("StateReply", "proof", self.proof, MAX_PROOF_HASHES))

    def __repr__(self) -> str:
        st = self.state
        return (
            f"StateReply(bin={st.bin}, epoch={st.epoch}, size={st.size}, root={st.root.hex()[:12]}, "
            f"known={self.known}, proof=<{len(self.proof)} hashes>)"
        )


@dataclass(frozen=True, slots=True, repr=False)
class ProvenOffer:
    """An offer of a provable stream: every leaf of bin IDs ``[start, end]`` and the proof that
    they are exactly those leaves of the upstream's log.

    ``hashes`` holds one address per bin ID, holes included; bit ``i`` of ``holes`` (as in a want
    vector) marks an entry the upstream cannot deliver (a dropped chunk): it must not be wanted.
    A live offer carries the signed state at ``end`` (``state``), which the entries must extend
    the stream's last state to. A historical offer carries the frontier at ``start - 1`` (``left``,
    first offer of a subscription only) and the compact range from ``end`` to the subscription's
    end (``right``): with them the entries rebuild the state the downstream asked for there.
    """

    TYPE: ClassVar[MessageType] = MessageType.PROVEN_OFFER

    bin: int
    live: bool
    start: int
    end: int
    hashes: tuple[bytes, ...]
    holes: bytes = bytes(HOLES_SIZE)
    state: SignedState | None = None
    left: tuple[bytes, ...] = ()
    right: tuple[bytes, ...] = ()

    def __post_init__(self) -> None:
        n = "ProvenOffer"
        _bin(n, self.bin)
        _bool(n, "live", self.live)
        _range(n, self.start, self.end)
        hashes = _hashes(n, "hashes", self.hashes, MAX_BATCH_SIZE)
        if len(hashes) != self.end - self.start + 1:
            raise MessageError(
                f"{n}.hashes holds {len(hashes)} hashes, the range [{self.start}, {self.end}] "
                f"has {self.end - self.start + 1} bin IDs"
            )
        _set(self, "hashes", hashes)
        _set(self, "holes", _bytes(n, "holes", self.holes, HOLES_SIZE))
        if any(self.holes[i >> 3] >> (i & 7) & 1 for i in range(len(hashes), MAX_BATCH_SIZE)):
            raise MessageError(f"{n}.holes marks entries beyond the {len(hashes)} offered")
        if self.live:
            if not isinstance(self.state, SignedState):
                raise MessageError(f"{n}: a live offer carries the signed state at its end")
            if self.state.bin != self.bin or self.state.size != self.end:
                raise MessageError(f"{n}.state must be of bin {self.bin} at size {self.end}")
            if self.left or self.right:
                raise MessageError(f"{n}: a live offer carries no proof hashes")
        elif self.state is not None:
            raise MessageError(f"{n}: a historical offer carries no signed state")
        left = _hashes(n, "left", self.left, 64)
        right = _hashes(n, "right", self.right, MAX_PROOF_HASHES - 64)
        _set(self, "left", left)
        _set(self, "right", right)

    def hole_indices(self) -> list[int]:
        """Indices of the entries marked as holes, ascending."""
        return [i for i in range(len(self.hashes)) if self.holes[i >> 3] >> (i & 7) & 1]

    def __repr__(self) -> str:
        return (
            f"ProvenOffer(bin={self.bin}, live={self.live}, start={self.start}, end={self.end}, "
            f"hashes=<{len(self.hashes)}>, holes={self.hole_indices()}, "
            f"state={'yes' if self.state else 'no'}, left=<{len(self.left)}>, right=<{len(self.right)}>)"
        )


@dataclass(frozen=True, slots=True)
class Receipt:
    """The downstream's signed word that it took over bin IDs ``[start, end]`` of the upstream's
    log, whose state at ``end`` has ``root``: it stored every chunk of the range it wanted."""

    TYPE: ClassVar[MessageType] = MessageType.RECEIPT

    bin: int
    epoch: int
    start: int
    end: int
    root: bytes
    signature: bytes

    def __post_init__(self) -> None:
        n = "Receipt"
        _bin(n, self.bin)
        _uint(n, "epoch", self.epoch, _U64)
        _range(n, self.start, self.end)
        _set(self, "root", _bytes(n, "root", self.root, HASH_SIZE))
        _set(self, "signature", _bytes(n, "signature", self.signature, SIGNATURE_SIZE))


# -- retrieval ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RetrieveRequest:
    """Ask for the chunk at ``address``; ``hop_limit`` 0 = answer from your local store only."""

    TYPE: ClassVar[MessageType] = MessageType.RETRIEVE_REQUEST

    request_id: int
    address: bytes
    hop_limit: int

    def __post_init__(self) -> None:
        _uint("RetrieveRequest", "request_id", self.request_id, _U64)
        _set(self, "address", _bytes("RetrieveRequest", "address", self.address, ADDRESS_SIZE))
        _uint("RetrieveRequest", "hop_limit", self.hop_limit, _U8)


@dataclass(frozen=True, slots=True, repr=False)
class RetrieveDelivery:
    TYPE: ClassVar[MessageType] = MessageType.RETRIEVE_DELIVERY

    request_id: int
    data: bytes

    def __post_init__(self) -> None:
        _uint("RetrieveDelivery", "request_id", self.request_id, _U64)
        _set(self, "data", _chunk_data("RetrieveDelivery", self.data))

    def __repr__(self) -> str:
        return f"RetrieveDelivery(request_id={self.request_id}, data=<{len(self.data)} bytes>)"


@dataclass(frozen=True, slots=True)
class RetrieveFailure:
    TYPE: ClassVar[MessageType] = MessageType.RETRIEVE_FAILURE

    request_id: int
    reason: str = ""

    def __post_init__(self) -> None:
        _uint("RetrieveFailure", "request_id", self.request_id, _U64)
        _text("RetrieveFailure", "reason", self.reason, MAX_REASON_SIZE)


# -- push syncing (0x23-0x2F) --------------------------------------------------------------------


@dataclass(frozen=True, slots=True, repr=False)
class PushDelivery:
    """An uploaded chunk on its way to the node closest to ``address``, hop by hop; answered by a
    :class:`PushReceipt` from the node that stored it, or a :class:`PushFailure`."""

    TYPE: ClassVar[MessageType] = MessageType.PUSH_DELIVERY

    request_id: int
    address: bytes
    hop_limit: int
    data: bytes

    def __post_init__(self) -> None:
        n = "PushDelivery"
        _uint(n, "request_id", self.request_id, _U64)
        _set(self, "address", _bytes(n, "address", self.address, ADDRESS_SIZE))
        _uint(n, "hop_limit", self.hop_limit, _U8)
        _set(self, "data", _chunk_data(n, self.data))

    def __repr__(self) -> str:
        return (
            f"PushDelivery(request_id={self.request_id}, address={self.address.hex()[:12]}…, "
            f"hop_limit={self.hop_limit}, data=<{len(self.data)} bytes>)"
        )


@dataclass(frozen=True, slots=True)
class PushReceipt:
    """The storer's word that it keeps the chunk: signed by its identity key over the chunk's
    address, its overlay (derived from ``public_key``) and its storage ``radius``
    (streamer/push_receipts.py). Relayed unchanged back along the path."""

    TYPE: ClassVar[MessageType] = MessageType.PUSH_RECEIPT

    request_id: int
    address: bytes
    public_key: bytes
    radius: int
    signature: bytes

    def __post_init__(self) -> None:
        n = "PushReceipt"
        _uint(n, "request_id", self.request_id, _U64)
        _set(self, "address", _bytes(n, "address", self.address, ADDRESS_SIZE))
        _set(self, "public_key", _bytes(n, "public_key", self.public_key, PUBLIC_KEY_SIZE))
        _uint(n, "radius", self.radius, _U8)
        if self.radius > MAX_PO + 1:
            raise MessageError(f"{n}.radius must be in 0..{MAX_PO + 1}, got {self.radius}")
        _set(self, "signature", _bytes(n, "signature", self.signature, SIGNATURE_SIZE))


@dataclass(frozen=True, slots=True)
class PushFailure:
    TYPE: ClassVar[MessageType] = MessageType.PUSH_FAILURE

    request_id: int
    reason: str = ""

    def __post_init__(self) -> None:
        _uint("PushFailure", "request_id", self.request_id, _U64)
        _text("PushFailure", "reason", self.reason, MAX_REASON_SIZE)


# -- peer gossip ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PeerRecord:
    """A signed, dialable address of a node; not a message by itself, carried in :class:`Peers`."""

    network_id: int
    host: str
    port: int
    public_key: bytes
    signature: bytes

    def __post_init__(self) -> None:
        n = "PeerRecord"
        _uint(n, "network_id", self.network_id, _U64)
        _text(n, "host", self.host, MAX_HOST_SIZE)
        _uint(n, "port", self.port, _U16)
        _set(self, "public_key", _bytes(n, "public_key", self.public_key, PUBLIC_KEY_SIZE))
        _set(self, "signature", _bytes(n, "signature", self.signature, SIGNATURE_SIZE))

    @property
    def overlay(self) -> bytes:
        """The overlay address derived from the record's key and network ID."""
        return overlay_address(self.public_key, self.network_id)


@dataclass(frozen=True, slots=True)
class Peers:
    TYPE: ClassVar[MessageType] = MessageType.PEERS

    records: tuple[PeerRecord, ...]

    def __post_init__(self) -> None:
        records = _tuple("Peers", "records", self.records, MAX_PEER_RECORDS)
        for i, rec in enumerate(records):
            if not isinstance(rec, PeerRecord):
                raise MessageError(f"Peers.records[{i}] must be a PeerRecord, got {type(rec).__name__}")
        _set(self, "records", records)


# -- live propagation (feed updates and topic messages, docs/live.md) ---------------------------

OWNER_SIZE = 20
"""An owner (Ethereum) address: who signs a feed update or a topic message."""
TOPIC_SIZE = 32
ETH_SIGNATURE_SIZE = 65
"""A secp256k1 signature ``r || s || v`` (feed updates and topic messages)."""
MAX_INTEREST_ENTRIES = 512
MAX_TOPIC_PAYLOAD = 4096
INTEREST_WITHDRAWN = 0xFF
"""The ``hops`` of an interest entry that withdraws it."""


class StreamKind(enum.IntEnum):
    """What an interest entry names: a sequence feed ``(owner, topic)`` or an ephemeral topic."""

    FEED = 1
    TOPIC = 2


def _check_stream_fields(n: str, msg: Any) -> None:
    """Check (and normalise) the ``kind``, ``owner`` and ``topic`` that name a live stream or
    chain: in `InterestEntry`, `LivePause` and `LiveHave` alike."""
    _uint(n, "kind", msg.kind, _U8)
    try:
        _set(msg, "kind", StreamKind(msg.kind))
    except ValueError:
        raise MessageError(f"{n}.kind must be 1 (feed) or 2 (topic), got {msg.kind}") from None
    _set(msg, "owner", _bytes(n, "owner", msg.owner, OWNER_SIZE))
    _set(msg, "topic", _bytes(n, "topic", msg.topic, TOPIC_SIZE))


@dataclass(frozen=True, slots=True)
class InterestEntry:
    """One stream a peer wants pushed to it, and how many hops away its nearest follower is.

    Not a message by itself, carried in :class:`LiveInterest`. A topic's ``owner`` is 20 zero
    bytes (a topic stream carries every publisher's messages); ``hops`` 255 withdraws the entry.
    """

    kind: int
    owner: bytes
    topic: bytes
    hops: int

    def __post_init__(self) -> None:
        n = "InterestEntry"
        _check_stream_fields(n, self)
        _uint(n, "hops", self.hops, _U8)


@dataclass(frozen=True, slots=True)
class LiveInterest:
    """Changes to the streams the sender wants pushed to it (entries it added, moved or withdrew)."""

    TYPE: ClassVar[MessageType] = MessageType.LIVE_INTEREST

    entries: tuple[InterestEntry, ...]

    def __post_init__(self) -> None:
        entries = _tuple("LiveInterest", "entries", self.entries, MAX_INTEREST_ENTRIES)
        for i, entry in enumerate(entries):
            if not isinstance(entry, InterestEntry):
                raise MessageError(
                    f"LiveInterest.entries[{i}] must be an InterestEntry, got {type(entry).__name__}"
                )
        _set(self, "entries", entries)


@dataclass(frozen=True, slots=True, repr=False)
class FeedPush:
    """Update ``index`` of the feed ``(owner, topic)``: the single-owner chunk's data.

    ``data`` is not checked here beyond its length: the receiver validates the chunk (a forged
    or malformed one is dropped and counted, the connection stays).
    """

    TYPE: ClassVar[MessageType] = MessageType.FEED_PUSH

    owner: bytes
    topic: bytes
    index: int
    data: bytes

    def __post_init__(self) -> None:
        n = "FeedPush"
        _set(self, "owner", _bytes(n, "owner", self.owner, OWNER_SIZE))
        _set(self, "topic", _bytes(n, "topic", self.topic, TOPIC_SIZE))
        _uint(n, "index", self.index, _U64)
        _set(self, "data", _bytes(n, "data", self.data, max_size=MAX_CHUNK_DATA_SIZE))

    def __repr__(self) -> str:
        return (
            f"FeedPush(owner={self.owner.hex()}, topic={self.topic.hex()[:16]}.., index={self.index}, "
            f"data=<{len(self.data)} bytes>)"
        )


@dataclass(frozen=True, slots=True, repr=False)
class TopicPush:
    """An ephemeral message on ``topic`` signed by ``owner``, numbered the raims way.

    ``seq`` = frame << 35 | counter, ``chain`` the publisher's previous ``seq`` when its frame
    changed (else 0), ``time`` its clock in nanoseconds. The signature is checked by the
    receiver, not here.
    """

    TYPE: ClassVar[MessageType] = MessageType.TOPIC_PUSH

    topic: bytes
    owner: bytes
    seq: int
    chain: int
    time: int
    signature: bytes
    payload: bytes

    def __post_init__(self) -> None:
        n = "TopicPush"
        _set(self, "topic", _bytes(n, "topic", self.topic, TOPIC_SIZE))
        _set(self, "owner", _bytes(n, "owner", self.owner, OWNER_SIZE))
        _uint(n, "seq", self.seq, _U64)
        _uint(n, "chain", self.chain, _U64)
        _uint(n, "time", self.time, _U64)
        _set(self, "signature", _bytes(n, "signature", self.signature, ETH_SIGNATURE_SIZE))
        _set(self, "payload", _bytes(n, "payload", self.payload, max_size=MAX_TOPIC_PAYLOAD))

    def __repr__(self) -> str:
        return (
            f"TopicPush(topic={self.topic.hex()[:16]}.., owner={self.owner.hex()}, seq={self.seq:#x}, "
            f"chain={self.chain:#x}, payload=<{len(self.payload)} bytes>)"
        )


@dataclass(frozen=True, slots=True)
class LivePause:
    """Stop (``paused`` 1) or start again (0) pushing one publisher's chain to the sender: the
    receiver of a repeat prunes the redundant path it came by (docs/live.md, "Pruning").

    A chain is a feed ``(owner, topic)`` (``kind`` 1) or one publisher's messages on a topic
    (``kind`` 2, ``owner`` the publisher).
    """

    TYPE: ClassVar[MessageType] = MessageType.LIVE_PAUSE

    kind: int
    owner: bytes
    topic: bytes
    paused: int

    def __post_init__(self) -> None:
        n = "LivePause"
        _check_stream_fields(n, self)
        if self.paused not in (0, 1):
            raise MessageError(f"{n}.paused must be 0 (resume) or 1 (pause), got {self.paused!r}")


@dataclass(frozen=True, slots=True)
class LiveHave:
    """The sender has message ``number`` of a chain the receiver paused (`LivePause`), and did
    not push it: Plumtree's lazy push (``IHAVE``). A receiver that does not get the message
    by another path soon resumes the sender."""

    TYPE: ClassVar[MessageType] = MessageType.LIVE_HAVE

    kind: int
    owner: bytes
    topic: bytes
    number: int  # a feed update's index, a topic message's seq

    def __post_init__(self) -> None:
        n = "LiveHave"
        _check_stream_fields(n, self)
        _uint(n, "number", self.number, _U64)


Message: TypeAlias = (
    Hello
    | Handshake
    | Goodbye
    | Ping
    | Pong
    | CursorsRequest
    | CursorsReply
    | Subscribe
    | Unsubscribe
    | Unsubscribed
    | OfferedHashes
    | WantedHashes
    | ChunkDelivery
    | StateRequest
    | StateReply
    | ProvenOffer
    | Receipt
    | RetrieveRequest
    | RetrieveDelivery
    | RetrieveFailure
    | PushDelivery
    | PushReceipt
    | PushFailure
    | Peers
    | LiveInterest
    | FeedPush
    | TopicPush
    | LivePause
    | LiveHave
)

MESSAGE_CLASSES: tuple[type[Message], ...] = (
    Hello,
    Handshake,
    Goodbye,
    Ping,
    Pong,
    CursorsRequest,
    CursorsReply,
    Subscribe,
    Unsubscribe,
    Unsubscribed,
    OfferedHashes,
    WantedHashes,
    ChunkDelivery,
    StateRequest,
    StateReply,
    ProvenOffer,
    Receipt,
    RetrieveRequest,
    RetrieveDelivery,
    RetrieveFailure,
    PushDelivery,
    PushReceipt,
    PushFailure,
    Peers,
    LiveInterest,
    FeedPush,
    TopicPush,
    LivePause,
    LiveHave,
)


def payload_size(msg: Message) -> int:
    """Chunk-data bytes ``msg`` carries (the rest of its frame is protocol overhead)."""
    if isinstance(msg, ChunkDelivery | RetrieveDelivery | PushDelivery):
        return len(msg.data)
    return 0
