"""Single-owner chunks (SOC), byte for byte as bee (`pkg/soc`) and bee-js make them.

A SOC is content its owner signs and names, instead of content named by its hash:

- data = ``id (32) || signature (65) || span (8, little-endian) || payload (0..4096)``, so 105 to
  4201 bytes. ``span || payload`` is a content chunk, the *wrapped* chunk; its BMT address is
  ``cac``.
- address = ``keccak256(id || owner)``, owner = the 20-byte Ethereum address of the signer. The
  address depends on who and which id, not on the content: the owner can put other content at
  the same address (bee's feeds do, one id per update), and nobody else can.
- signature = the owner's Ethereum personal-message signature of ``id || cac`` (see
  `chunks.ethkey`).

A SOC that arrives by sync or retrieval carries no owner: validation recovers it from the
signature and checks that it, with the id, hashes to the address. One special owner
(`REPLICAS_OWNER`, bee's dispersed replicas, whose key is public) is further bound to its
content: its id must equal the wrapped chunk's address but for the first byte.

Everything here is pure; a `Soc` is a parsed, checked value, `Soc.data` its chunk data.
"""

from __future__ import annotations

from dataclasses import dataclass

from chunks.bmt import CHUNK_PAYLOAD_SIZE, MAX_SPAN, bmt_address, keccak256
from chunks.ethkey import OWNER_SIZE, SIGNATURE_SIZE, BadSignature, Secp256k1Key, recover_owner
from chunks.invalid import InvalidChunk

__all__ = [
    "ID_SIZE",
    "MAX_SOC_DATA_SIZE",
    "MIN_SOC_DATA_SIZE",
    "REPLICAS_OWNER",
    "SOC_HEADER_SIZE",
    "InvalidSoc",
    "Soc",
    "equivocation",
    "make_soc",
    "parse_soc",
    "soc_address",
    "soc_from_parts",
    "validate_soc",
]

ID_SIZE = 32
_SPAN_SIZE = 8
SOC_HEADER_SIZE = ID_SIZE + SIGNATURE_SIZE
"""Bytes before the wrapped chunk: id and signature (97)."""
MIN_SOC_DATA_SIZE = SOC_HEADER_SIZE + _SPAN_SIZE
"""A SOC with an empty payload: 105 bytes."""
MAX_SOC_DATA_SIZE = MIN_SOC_DATA_SIZE + CHUNK_PAYLOAD_SIZE
"""A SOC with a full payload: 4201 bytes."""
REPLICAS_OWNER = bytes.fromhex("dc5b20847f43d67928f49cd4f85d696b5a7617b5")
"""Owner of bee's dispersed replicas (`swarm.ReplicasOwner`); its SOCs must have
``id[1:] == cac[1:]``."""


class InvalidSoc(InvalidChunk):
    """Data that is not a valid single-owner chunk (for its address, when one is known)."""

    def __init__(self, address: bytes | None, problem: str) -> None:
        where = f" {address.hex()}" if address else ""
        ValueError.__init__(self, f"invalid single-owner chunk{where}: {problem}")
        self.address = address or b""
        self.problem = problem


@dataclass(frozen=True, slots=True)
class Soc:
    """A checked single-owner chunk: its signature is the owner's over ``id || cac_address``."""

    id: bytes
    signature: bytes
    wrapped: bytes
    """``span || payload``: the data of the wrapped content chunk."""
    owner: bytes
    cac_address: bytes
    """BMT address of the wrapped content chunk."""
    address: bytes
    """``keccak256(id || owner)``: where the SOC lives."""

    @property
    def data(self) -> bytes:
        """The chunk data as stored and sent: ``id || signature || span || payload``."""
        return self.id + self.signature + self.wrapped

    @property
    def span(self) -> int:
        return int.from_bytes(self.wrapped[:_SPAN_SIZE], "little")

    @property
    def payload(self) -> bytes:
        return self.wrapped[_SPAN_SIZE:]

    def __repr__(self) -> str:
        return (
            f"Soc(address={self.address.hex()}, owner={self.owner.hex()}, id={self.id.hex()}, "
            f"{len(self.wrapped) - _SPAN_SIZE} payload bytes)"
        )


def soc_address(id: bytes, owner: bytes) -> bytes:
    """The address of the SOC with this id and owner: ``keccak256(id || owner)``."""
    if len(id) != ID_SIZE:
        raise ValueError(f"a SOC id is {ID_SIZE} bytes, got {len(id)}")
    if len(owner) != OWNER_SIZE:
        raise ValueError(f"an owner address is {OWNER_SIZE} bytes, got {len(owner)}")
    return keccak256(id + owner)


def _wrapped_address(address: bytes | None, wrapped: bytes) -> bytes:
    """The BMT address of ``span || payload``, or InvalidSoc naming what is wrong with it."""
    if len(wrapped) < _SPAN_SIZE:
        raise InvalidSoc(address, f"wrapped chunk is {len(wrapped)} bytes, shorter than its 8-byte span")
    payload_size = len(wrapped) - _SPAN_SIZE
    if payload_size > CHUNK_PAYLOAD_SIZE:
        raise InvalidSoc(
            address, f"payload is {payload_size} bytes, over the {CHUNK_PAYLOAD_SIZE}-byte limit"
        )
    return bmt_address(wrapped[_SPAN_SIZE:], int.from_bytes(wrapped[:_SPAN_SIZE], "little"))


def _check_replica(address: bytes | None, id: bytes, owner: bytes, cac: bytes) -> None:
    if owner == REPLICAS_OWNER and id[1:] != cac[1:]:
        raise InvalidSoc(address, "a dispersed replica's id must equal its content address but for byte 0")


def make_soc(key: Secp256k1Key, id: bytes, payload: bytes, *, span: int | None = None) -> Soc:
    """The SOC of ``key``'s owner at ``id`` wrapping ``payload`` (span defaults to its length).

    Give the span of a tree's root chunk to wrap a root (bee's v2 feed updates). Raises
    ValueError for an id that is not 32 bytes, a payload over 4096 bytes or a span out of range.
    """
    if len(id) != ID_SIZE:
        raise ValueError(f"a SOC id is {ID_SIZE} bytes, got {len(id)}")
    if span is None:
        span = len(payload)
    if not 0 <= span <= MAX_SPAN:
        raise ValueError(f"span {span} is outside 0..2**64-1")
    cac = bmt_address(payload, span)  # ValueError over 4096 bytes
    wrapped = span.to_bytes(_SPAN_SIZE, "little") + bytes(payload)
    signature = key.sign(id + cac)
    return Soc(id, signature, wrapped, key.owner, cac, keccak256(id + key.owner))


def soc_from_parts(owner: bytes, id: bytes, signature: bytes, wrapped: bytes) -> Soc:
    """The SOC made of parts a client sends (bee's ``POST /soc/{owner}/{id}?sig=``), checked.

    Raises InvalidSoc if the parts are malformed or the signature is not ``owner``'s over
    ``id || BMT(wrapped)``.
    """
    if len(owner) != OWNER_SIZE or len(id) != ID_SIZE:
        raise InvalidSoc(
            None, f"owner must be {OWNER_SIZE} bytes and id {ID_SIZE}, got {len(owner)} and {len(id)}"
        )
    address = keccak256(id + owner)
    return _checked(address, id, signature, wrapped, expected_owner=owner)


def _checked(
    address: bytes | None, id: bytes, signature: bytes, wrapped: bytes, *, expected_owner: bytes | None
) -> Soc:
    cac = _wrapped_address(address, wrapped)
    try:
        owner = recover_owner(signature, id + cac)
    except BadSignature as exc:
        raise InvalidSoc(address, f"bad signature: {exc}") from None
    if expected_owner is not None and owner != expected_owner:
        raise InvalidSoc(
            address,
            f"signature is by owner {owner.hex()}, not {expected_owner.hex()} (or the data was changed)",
        )
    _check_replica(address, id, owner, cac)
    actual = keccak256(id + owner)
    if address is not None and actual != address:
        raise InvalidSoc(
            address,
            f"id and signer {owner.hex()} give the address {actual.hex()} (a forged signature, "
            "or changed data)",
        )
    return Soc(id, signature, wrapped, owner, cac, actual)


def _split(address: bytes | None, data: bytes) -> tuple[bytes, bytes, bytes]:
    size = len(data)
    if size < MIN_SOC_DATA_SIZE:
        raise InvalidSoc(
            address, f"data is {size} bytes, shorter than the {MIN_SOC_DATA_SIZE} of id, signature and span"
        )
    if size > MAX_SOC_DATA_SIZE:
        raise InvalidSoc(
            address,
            f"data is {size} bytes, over {MAX_SOC_DATA_SIZE} (payload of {size - MIN_SOC_DATA_SIZE} bytes, "
            f"the limit is {CHUNK_PAYLOAD_SIZE})",
        )
    return data[:ID_SIZE], data[ID_SIZE:SOC_HEADER_SIZE], data[SOC_HEADER_SIZE:]


def validate_soc(address: bytes, data: bytes) -> Soc:
    """The SOC ``data`` is, if it is a valid SOC at ``address``; else InvalidSoc says why."""
    id, signature, wrapped = _split(address, data)
    return _checked(address, id, signature, wrapped, expected_owner=None)


def parse_soc(data: bytes) -> Soc:
    """The SOC ``data`` is, with the owner its signature names (no address to check against).

    Any well-formed signature names *some* owner, so this says nothing about authenticity by
    itself: compare ``.owner`` or ``.address`` with what you expected, or use validate_soc.
    """
    id, signature, wrapped = _split(None, data)
    return _checked(None, id, signature, wrapped, expected_owner=None)


def equivocation(address: bytes, stored: bytes, incoming: bytes) -> tuple[Soc, Soc] | None:
    """Both SOCs if ``stored`` and ``incoming`` are valid SOCs at ``address`` wrapping different
    content: the owner signed two contents under one id, and the pair is the proof. None if they
    wrap the same content (a re-signature: signatures of one content may differ, e.g. bee's and
    bee-js's nonces) or if either is not a valid SOC at ``address`` (InvalidSoc is not raised).
    """
    try:
        first, second = validate_soc(address, stored), validate_soc(address, incoming)
    except InvalidSoc:
        return None
    return None if first.cac_address == second.cac_address else (first, second)
