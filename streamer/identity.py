"""Node identity: an Ed25519 key, the overlay address derived from it, signed handshakes and records.

The overlay address is ``keccak256(public_key || network_id as u64 BE)``, so a peer cannot pick
its address. A handshake and a peer record are signed over a domain-separated encoding of all
their other fields (different tags, so one can never be replayed as the other). The private key
is a 32-byte Ed25519 seed (RFC 8032), kept in a key file readable by its owner only.
"""

from __future__ import annotations

import dataclasses
import os
import struct
from functools import lru_cache
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from chunks.keyfile import KeyFileError, create_owner_only, read_owner_only
from streamer.messages import (
    CHANNEL_BINDING_SIZE,
    NONCE_SIZE,
    PLAIN_BINDING,
    PUBLIC_KEY_SIZE,
    SIGNATURE_SIZE,
    GoodbyeCode,
    Handshake,
    PeerRecord,
    overlay_address,
)

__all__ = [
    "HANDSHAKE_DOMAIN",
    "PEER_RECORD_DOMAIN",
    "PRIVATE_KEY_SIZE",
    "BadPeerRecord",
    "HandshakeError",
    "KeyFileError",
    "NodeIdentity",
    "handshake_signing_bytes",
    "load_or_create_identity",
    "make_handshake",
    "make_peer_record",
    "overlay_address",
    "peer_record_signing_bytes",
    "verify_handshake",
    "verify_peer_record",
    "verify_signature",
]

PRIVATE_KEY_SIZE = 32
HANDSHAKE_DOMAIN = b"swarm-handshake-v1"
PEER_RECORD_DOMAIN = b"swarm-peer-record-v1"


class HandshakeError(Exception):
    """A peer's handshake is unacceptable; ``code`` is the Goodbye code to send before closing."""

    def __init__(self, message: str, code: GoodbyeCode = GoodbyeCode.BAD_HANDSHAKE) -> None:
        super().__init__(message)
        self.code = code


class BadPeerRecord(HandshakeError):
    """A gossiped peer record is forged or belongs to another network."""


class NodeIdentity:
    """An Ed25519 key pair. Equality is by public key; ``repr`` never shows the private key."""

    __slots__ = ("_key", "_public_key")

    def __init__(self, key: Ed25519PrivateKey) -> None:
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError("NodeIdentity needs an Ed25519 private key")
        self._key = key  # `cryptography` (OpenSSL); pycryptodome's ECC took 0.1 s to import
        self._public_key: bytes = key.public_key().public_bytes_raw()

    @classmethod
    def generate(cls) -> NodeIdentity:
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_private_bytes(cls, b: bytes) -> NodeIdentity:
        """From a 32-byte Ed25519 seed (RFC 8032 private key)."""
        if not isinstance(b, bytes | bytearray) or len(b) != PRIVATE_KEY_SIZE:
            raise ValueError(f"an Ed25519 private key is {PRIVATE_KEY_SIZE} bytes")
        return cls(Ed25519PrivateKey.from_private_bytes(bytes(b)))

    def private_bytes(self) -> bytes:
        return self._key.private_bytes_raw()

    @property
    def public_key(self) -> bytes:
        return self._public_key

    def overlay(self, network_id: int) -> bytes:
        return overlay_address(self._public_key, network_id)

    def sign(self, data: bytes) -> bytes:
        """The RFC 8032 Ed25519 signature of ``data``, made by `cryptography` (OpenSSL): the same
        deterministic signature as pycryptodome's, about 0.05 ms against 0.3 (docs/performance.md)."""
        return self._key.sign(data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NodeIdentity) and other._public_key == self._public_key

    def __hash__(self) -> int:
        return hash(self._public_key)

    def __repr__(self) -> str:
        return f"NodeIdentity(public_key={self._public_key.hex()})"


def verify_signature(public_key: bytes, data: bytes, signature: bytes) -> bool:
    """True iff ``signature`` is a valid RFC 8032 Ed25519 signature of ``data`` by ``public_key``."""
    key = _public_key(bytes(public_key))
    if key is None or len(signature) != SIGNATURE_SIZE:
        return False
    try:
        key.verify(bytes(signature), data)
    except InvalidSignature:
        return False
    return True


@lru_cache(maxsize=1024)
def _public_key(raw: bytes) -> Ed25519PublicKey | None:
    """A peer's public key, decoded once (a node checks many signatures of few peers)."""
    if len(raw) != PUBLIC_KEY_SIZE:
        return None
    try:
        return Ed25519PublicKey.from_public_bytes(raw)
    except ValueError:  # not 32 bytes
        return None


# -- handshake ------------------------------------------------------------------------------------


def _host8(host: str) -> bytes:
    raw = host.encode("utf-8")
    return struct.pack(">B", len(raw)) + raw


def handshake_signing_bytes(hs: Handshake, challenge: bytes, binding: bytes = PLAIN_BINDING) -> bytes:
    """What a handshake's signature covers: the domain tag, every field but the signature, the
    receiver's challenge (its `Hello` nonce), which binds the handshake to one connection, and the
    channel binding (`streamer.channel`), which binds it to one TLS channel."""
    if len(challenge) != NONCE_SIZE:
        raise ValueError(f"handshake challenge must be {NONCE_SIZE} bytes, got {len(challenge)}")
    if len(binding) != CHANNEL_BINDING_SIZE:
        raise ValueError(f"channel binding must be {CHANNEL_BINDING_SIZE} bytes, got {len(binding)}")
    return (
        HANDSHAKE_DOMAIN
        + struct.pack(">HQ", hs.version, hs.network_id)
        + hs.overlay
        + struct.pack(">QH", hs.epoch, hs.port)
        + hs.public_key
        + _host8(hs.host)
        + challenge
        + binding
    )


def make_handshake(
    identity: NodeIdentity,
    *,
    version: int,
    network_id: int,
    epoch: int,
    host: str,
    port: int,
    challenge: bytes,
    binding: bytes = PLAIN_BINDING,
) -> Handshake:
    """Our handshake for one connection, signed over the peer's `Hello` nonce (`challenge`) and
    the channel binding."""
    unsigned = Handshake(
        version=version,
        network_id=network_id,
        overlay=identity.overlay(network_id),
        epoch=epoch,
        host=host,
        port=port,
        public_key=identity.public_key,
        signature=bytes(SIGNATURE_SIZE),
    )
    signature = identity.sign(handshake_signing_bytes(unsigned, challenge, binding))
    return dataclasses.replace(unsigned, signature=signature)


def verify_handshake(
    hs: Handshake, *, network_id: int, version: int, challenge: bytes, binding: bytes = PLAIN_BINDING
) -> None:
    """Raise :class:`HandshakeError` (with the Goodbye code to send) unless ``hs`` is acceptable.

    `challenge` is the nonce of the `Hello` we sent on this connection: a handshake signed over
    any other nonce (recorded elsewhere and replayed) fails as a bad signature; so does one signed
    over another channel binding (relayed from another TLS channel).
    """
    if hs.network_id != network_id:
        raise HandshakeError(
            f"peer is on network {hs.network_id}, we are on network {network_id}", GoodbyeCode.WRONG_NETWORK
        )
    if hs.version != version:
        raise HandshakeError(
            f"peer speaks protocol version {hs.version}, we speak version {version}",
            GoodbyeCode.VERSION_MISMATCH,
        )
    expected = overlay_address(hs.public_key, hs.network_id)
    if hs.overlay != expected:
        raise HandshakeError(
            f"peer claims overlay {hs.overlay.hex()} but its public key gives {expected.hex()}",
            GoodbyeCode.BAD_HANDSHAKE,
        )
    if not verify_signature(hs.public_key, handshake_signing_bytes(hs, challenge, binding), hs.signature):
        raise HandshakeError(
            f"bad handshake signature from overlay {hs.overlay.hex()}", GoodbyeCode.BAD_HANDSHAKE
        )


# -- peer records ---------------------------------------------------------------------------------


def peer_record_signing_bytes(rec: PeerRecord) -> bytes:
    """What a peer record's signature covers: its domain tag, then every field but the signature."""
    return (
        PEER_RECORD_DOMAIN + struct.pack(">QH", rec.network_id, rec.port) + rec.public_key + _host8(rec.host)
    )


def make_peer_record(identity: NodeIdentity, *, network_id: int, host: str, port: int) -> PeerRecord:
    unsigned = PeerRecord(network_id, host, port, identity.public_key, bytes(SIGNATURE_SIZE))
    return dataclasses.replace(unsigned, signature=identity.sign(peer_record_signing_bytes(unsigned)))


def verify_peer_record(rec: PeerRecord, network_id: int) -> None:
    """Raise :class:`BadPeerRecord` unless ``rec`` is on ``network_id`` and signed by its key."""
    if rec.network_id != network_id:
        raise BadPeerRecord(
            f"peer record {rec.host}:{rec.port} is for network {rec.network_id}, "
            f"we are on network {network_id}",
            GoodbyeCode.WRONG_NETWORK,
        )
    if not verify_signature(rec.public_key, peer_record_signing_bytes(rec), rec.signature):
        raise BadPeerRecord(
            f"bad signature on peer record {rec.host}:{rec.port} (overlay {rec.overlay.hex()})",
            GoodbyeCode.BAD_HANDSHAKE,
        )


# -- key file -------------------------------------------------------------------------------------


def _read_key_file(path: Path) -> NodeIdentity:
    seed = read_owner_only(path, PRIVATE_KEY_SIZE + 1)
    if len(seed) != PRIVATE_KEY_SIZE:
        size = f"{len(seed)} bytes" if len(seed) <= PRIVATE_KEY_SIZE else "longer"
        raise KeyFileError(
            f"key file {path} is {size}, expected exactly {PRIVATE_KEY_SIZE} bytes (a raw Ed25519 seed); "
            "it was left untouched: restore it, or move it away to create a new identity (a new overlay)"
        )
    return NodeIdentity.from_private_bytes(seed)


def load_or_create_identity(path: str | os.PathLike[str]) -> NodeIdentity:
    """The identity in the key file at ``path``; a new one, saved there (mode 0600), if there is none.

    An existing file is never overwritten: a file of the wrong size, or one that group or others
    may access, raises :class:`KeyFileError` naming the path.
    """
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        identity = NodeIdentity.generate()
        try:
            create_owner_only(path, identity.private_bytes())
            return identity
        except FileExistsError:
            pass  # created concurrently: use that one
    return _read_key_file(path)
