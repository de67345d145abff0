"""Secp256k1 keys the Ethereum way: the owner address, recoverable signatures, a key file.

Single-owner chunks and feeds are signed like Ethereum messages, byte for byte as bee and bee-js
do: ``sign(data)`` signs ``keccak256("\\x19Ethereum Signed Message:\\n32" || keccak256(data))`` and
encodes the signature ``r || s || v`` (65 bytes, ``v`` in {27, 28}); the signer is named by its
owner address, the last 20 bytes of the Keccak-256 of its uncompressed public key (x || y).
Verification recovers the public key from the signature, since a chunk carries no owner.

The curve arithmetic is libsecp256k1's, through coincurve (signing uses its RFC 6979 nonces, as
bee's btcec does, so the same key and data give the same signature in both).

The key file holds the private key as 64 hex characters and a newline, readable by its owner only
(mode 0600; a file that group or others may read is refused, as ssh does). A hex text file rather
than a raw one, so that the key can be handed to bee-js (``new PrivateKey(hex)``) or swarm-cli.
"""

from __future__ import annotations

import os

import coincurve

from chunks.bmt import keccak256
from chunks.keyfile import KeyFileError, create_owner_only, read_owner_only

__all__ = [
    "OWNER_SIZE",
    "PRIVATE_KEY_SIZE",
    "SIGNATURE_SIZE",
    "BadSignature",
    "KeyFileError",
    "Secp256k1Key",
    "checksum_address",
    "ethereum_digest",
    "load_key_file",
    "owner_of_public_key",
    "recover_owner",
    "save_key_file",
]

PRIVATE_KEY_SIZE = 32
OWNER_SIZE = 20
"""An owner (Ethereum) address: 20 bytes."""
SIGNATURE_SIZE = 65
"""``r (32) || s (32) || v (1)``."""
_ETHEREUM_PREFIX = b"\x19Ethereum Signed Message:\n32"
_V_OFFSET = 27


class BadSignature(ValueError):
    """A signature from which no public key can be recovered (malformed, or v not 27/28)."""


def ethereum_digest(data: bytes) -> bytes:
    """What an Ethereum personal-message signature of ``data`` signs (EIP-191 over its Keccak)."""
    return keccak256(_ETHEREUM_PREFIX + keccak256(data))


def owner_of_public_key(public_key: bytes) -> bytes:
    """The 20-byte owner address of a 64-byte uncompressed public key ``x || y``."""
    if len(public_key) != 64:
        raise ValueError(f"an uncompressed public key is 64 bytes (x || y), got {len(public_key)}")
    return keccak256(public_key)[12:]


def checksum_address(owner: bytes) -> str:
    """The owner address as ``0x`` and mixed-case hex (EIP-55), as bee shows it."""
    if len(owner) != OWNER_SIZE:
        raise ValueError(f"an owner address is {OWNER_SIZE} bytes, got {len(owner)}")
    plain = owner.hex()
    nibbles = keccak256(plain.encode("ascii")).hex()[: len(plain)]
    return "0x" + "".join(c.upper() if n in "89abcdef" else c for c, n in zip(plain, nibbles, strict=True))


def _recover_public_key(signature: bytes, data: bytes) -> bytes:
    if len(signature) != SIGNATURE_SIZE:
        raise BadSignature(f"signature is {len(signature)} bytes, not {SIGNATURE_SIZE}")
    v = signature[64]
    if v not in (27, 28):
        raise BadSignature(f"signature v is {v}, not 27 or 28")
    compact = signature[:64] + bytes((v - _V_OFFSET,))
    try:
        key = coincurve.PublicKey.from_signature_and_message(compact, ethereum_digest(data), hasher=None)
    except ValueError as exc:  # r or s out of range, or no point for r
        raise BadSignature(f"no public key can be recovered from the signature ({exc})") from None
    public: bytes = key.format(compressed=False)
    return public[1:]


def recover_owner(signature: bytes, data: bytes) -> bytes:
    """The owner address whose key made ``signature`` over ``data``; raises BadSignature.

    Any well-formed signature recovers *some* key: the caller compares the result with the owner
    it expects (a SOC's address commits to it).
    """
    return owner_of_public_key(_recover_public_key(signature, data))


class Secp256k1Key:
    """A secp256k1 private key. Equality is by owner address; ``repr`` never shows the key."""

    __slots__ = ("_key", "_owner", "_public_key")

    def __init__(self, private_key: bytes) -> None:
        if not isinstance(private_key, bytes) or len(private_key) != PRIVATE_KEY_SIZE:
            raise ValueError(f"a secp256k1 private key is {PRIVATE_KEY_SIZE} bytes")
        try:
            self._key = coincurve.PrivateKey(private_key)
        except ValueError:
            raise ValueError("not a secp256k1 private key: zero or not below the curve order") from None
        self._public_key: bytes = self._key.public_key.format(compressed=False)[1:]
        self._owner = owner_of_public_key(self._public_key)

    @classmethod
    def generate(cls) -> Secp256k1Key:
        return cls(coincurve.PrivateKey().secret)

    @classmethod
    def from_hex(cls, text: str) -> Secp256k1Key:
        """From 64 hex characters (a ``0x`` prefix and surrounding whitespace allowed)."""
        text = text.strip().removeprefix("0x")
        if len(text) != 2 * PRIVATE_KEY_SIZE:
            raise ValueError(f"a private key is {2 * PRIVATE_KEY_SIZE} hex characters, got {len(text)}")
        try:
            raw = bytes.fromhex(text)
        except ValueError:
            raise ValueError("private key is not hexadecimal") from None
        return cls(raw)

    def private_bytes(self) -> bytes:
        secret: bytes = self._key.secret
        return secret

    @property
    def public_key(self) -> bytes:
        """Uncompressed public key without its 0x04 prefix: ``x || y``, 64 bytes."""
        return self._public_key

    @property
    def public_key_compressed(self) -> bytes:
        """The 33-byte compressed public key (as bee shows it on /addresses)."""
        compressed: bytes = self._key.public_key.format(compressed=True)
        return compressed

    @property
    def owner(self) -> bytes:
        """The 20-byte owner (Ethereum) address."""
        return self._owner

    def shared_x(self, public_key: bytes) -> bytes:
        """The x coordinate of ECDH with `public_key` (33 or 65 bytes): 32 bytes, big-endian.

        Raises ValueError if `public_key` is not a point of the curve."""
        try:
            point = coincurve.PublicKey(public_key).multiply(self._key.secret)
        except (ValueError, TypeError):
            raise ValueError("not a secp256k1 public key") from None
        x: bytes = point.format(compressed=False)[1:33]
        return x

    def sign(self, data: bytes) -> bytes:
        """The Ethereum personal-message signature of ``data``: ``r || s || v``, v in {27, 28}."""
        compact: bytes = self._key.sign_recoverable(ethereum_digest(data), hasher=None)
        return compact[:64] + bytes((compact[64] + _V_OFFSET,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secp256k1Key) and other._owner == self._owner

    def __hash__(self) -> int:
        return hash(self._owner)

    def __repr__(self) -> str:
        return f"Secp256k1Key(owner={self._owner.hex()})"


def save_key_file(key: Secp256k1Key, path: str | os.PathLike[str]) -> None:
    """Write ``key`` to a new file at ``path`` (mode 0600); never overwrites (FileExistsError)."""
    create_owner_only(path, key.private_bytes().hex().encode() + b"\n")


def load_key_file(path: str | os.PathLike[str]) -> Secp256k1Key:
    """The key in the file at ``path``; KeyFileError naming the path if it cannot be used."""
    text = read_owner_only(path, 200)
    try:
        return Secp256k1Key.from_hex(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise KeyFileError(
            f"key file {path} does not hold a secp256k1 private key as 64 hex characters: {exc}"
        ) from None
