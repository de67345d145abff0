"""One mantaray node as bytes: the format Bee (pkg/manifest/mantaray) and bee-js (MantarayNode) share.

    obfuscation key (32) || XOR(key, version hash (31) || target size (1) || target
                                 || fork bitmap (32) || forks in byte order)

A fork is `type (1) || prefix length (1) || prefix padded to 30 || child reference (32)`, then,
when its type has the metadata bit, `size (2, big-endian) || JSON padded with '\n'` so that size
and JSON fill whole 32-byte words. The bitmap has bit `b % 8` of byte `b // 8` set for each
fork's first byte `b`. Version 0.2 is written; 0.1 (forks without metadata) is read too.

Pure: values in, values out. `decode_node` refuses bytes that are not a node with
`InvalidManifest` naming what is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

__all__ = [
    "ENCRYPTED_REF_SIZE",
    "MAX_PREFIX",
    "TYPE_EDGE",
    "TYPE_VALUE",
    "TYPE_WITH_METADATA",
    "TYPE_WITH_PATH_SEPARATOR",
    "VERSION_01_HASH",
    "VERSION_02_HASH",
    "ForkRecord",
    "InvalidManifest",
    "NodeRecord",
    "decode_node",
    "encode_metadata",
    "encode_node",
]

VERSION_01_HASH = bytes.fromhex("025184789d63635766d78c41900196b57d7400875ebe4d9b5d1e76bd9652a9b7")
"""Keccak-256 of "mantaray:0.1"; the first 31 bytes are written."""
VERSION_02_HASH = bytes.fromhex("5768b3b6a7db56d21d1abff40d41cebfc83448fed8d7e9b06ec0d3b073f28f7b")
"""Keccak-256 of "mantaray:0.2"."""

TYPE_VALUE = 2
TYPE_EDGE = 4
TYPE_WITH_PATH_SEPARATOR = 8
TYPE_WITH_METADATA = 16

KEY_SIZE = 32
REF_SIZE = 32
ENCRYPTED_REF_SIZE = 64
"""An encrypted manifest's references (Bee's with `Swarm-Encrypt`): address and key. A node
whose target is 64 bytes long has forks with 64-byte references too (Bee's `refBytesSize`)."""
MAX_PREFIX = 30
"""A fork's prefix is at most 30 bytes: with its type and length byte it fills one 32-byte word."""


class InvalidManifest(ValueError):
    """Bytes that are not a mantaray node (or a fork that cannot be part of one)."""


@dataclass(frozen=True)
class ForkRecord:
    """A fork as stored in its parent: the path bytes it adds, the child's reference, the child's
    type bits and the child's metadata (None: no metadata)."""

    prefix: bytes
    ref: bytes
    type: int
    metadata: dict[str, str] | None = None

    def __post_init__(self) -> None:
        if not 1 <= len(self.prefix) <= MAX_PREFIX:
            raise InvalidManifest(f"fork prefix must be 1 to {MAX_PREFIX} bytes, got {len(self.prefix)}")
        if len(self.ref) not in (REF_SIZE, ENCRYPTED_REF_SIZE):
            raise InvalidManifest(f"fork reference must be {REF_SIZE} or 64 bytes, got {len(self.ref)}")
        if not 0 <= self.type <= 255:
            raise InvalidManifest(f"fork type must be a byte, got {self.type}")


@dataclass(frozen=True)
class NodeRecord:
    """A node: its target (the entry it names; b"" or zeros: none), its forks by first byte, and
    the key its bytes are XORed with (zeros: not obfuscated)."""

    target: bytes = bytes(REF_SIZE)
    forks: dict[int, ForkRecord] = field(default_factory=dict)
    obfuscation_key: bytes = bytes(KEY_SIZE)

    def __post_init__(self) -> None:
        if len(self.obfuscation_key) != KEY_SIZE:
            raise InvalidManifest(
                f"obfuscation key must be {KEY_SIZE} bytes, got {len(self.obfuscation_key)}"
            )
        if len(self.target) > 255:
            raise InvalidManifest(f"target must be at most 255 bytes, got {len(self.target)}")
        for first, fork in self.forks.items():
            if fork.prefix[0] != first:
                raise InvalidManifest(f"fork under byte {first} has a prefix starting with {fork.prefix[0]}")

    @property
    def has_target(self) -> bool:
        return any(self.target)


def encode_metadata(metadata: dict[str, str]) -> bytes:
    """Size (2 bytes) and JSON, padded with newlines to whole 32-byte words (bee-js's padding:
    when size and JSON already fill whole words nothing is added; Bee's Go adds a word there)."""
    text = json.dumps(metadata, separators=(",", ":"), ensure_ascii=False).encode()
    size = len(text) + 2
    padded = text + b"\n" * (-size % 32)
    if len(padded) > 0xFFFF:
        raise InvalidManifest(f"metadata of {len(padded)} bytes does not fit a fork (at most 65535)")
    return len(padded).to_bytes(2, "big") + padded


def _encode_fork(fork: ForkRecord) -> bytes:
    out = bytes([fork.type, len(fork.prefix)]) + fork.prefix.ljust(MAX_PREFIX, b"\0") + fork.ref
    if fork.type & TYPE_WITH_METADATA:
        out += encode_metadata(fork.metadata or {})
    return out


def encode_node(node: NodeRecord) -> bytes:
    bitmap = bytearray(32)
    for first in node.forks:
        bitmap[first // 8] |= 1 << (first % 8)
    body = b"".join(
        [VERSION_02_HASH[:31], bytes([len(node.target)]), node.target, bytes(bitmap)]
        + [_encode_fork(node.forks[first]) for first in sorted(node.forks)]
    )
    return node.obfuscation_key + _xor(body, node.obfuscation_key)


def decode_node(data: bytes) -> NodeRecord:
    if len(data) < KEY_SIZE + 32:
        raise InvalidManifest(f"a manifest node is at least 64 bytes, got {len(data)}")
    key = bytes(data[:KEY_SIZE])
    body = _xor(data[KEY_SIZE:], key)
    version = body[:31]
    if version not in (VERSION_02_HASH[:31], VERSION_01_HASH[:31]):
        raise InvalidManifest(f"not a mantaray node: unknown version hash {version.hex()}")
    with_metadata = version == VERSION_02_HASH[:31]
    reader = _Reader(body, 31)
    target = reader.take(reader.take(1)[0], "target")
    ref_size = ENCRYPTED_REF_SIZE if len(target) == ENCRYPTED_REF_SIZE else REF_SIZE
    bitmap = reader.take(32, "fork bitmap")
    forks: dict[int, ForkRecord] = {}
    for first in range(256):
        if bitmap[first // 8] >> (first % 8) & 1:
            forks[first] = _decode_fork(reader, first, with_metadata, ref_size)
    return NodeRecord(target, forks, key)


def _decode_fork(reader: _Reader, first: int, with_metadata: bool, ref_size: int) -> ForkRecord:
    what = f"fork {first}"
    kind, size = reader.take(2, what)
    padded = reader.take(MAX_PREFIX, what)
    if not 1 <= size <= MAX_PREFIX:
        raise InvalidManifest(f"{what}: prefix length {size} is not 1 to {MAX_PREFIX}")
    ref = reader.take(ref_size, what)
    metadata = None
    if with_metadata and kind & TYPE_WITH_METADATA:
        length = int.from_bytes(reader.take(2, what), "big")
        text = reader.take(length, f"{what}'s metadata")
        try:
            metadata = json.loads(text.decode())
        except (UnicodeDecodeError, ValueError) as exc:
            raise InvalidManifest(f"{what}: metadata is not JSON: {exc}") from None
        if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
            raise InvalidManifest(f"{what}: metadata must be an object of strings")
    try:
        return ForkRecord(padded[:size], ref, kind, metadata)
    except InvalidManifest as exc:
        raise InvalidManifest(f"{what}: {exc}") from None


class _Reader:
    def __init__(self, data: bytes, offset: int) -> None:
        self.data = data
        self.offset = offset

    def take(self, size: int, what: str = "header") -> bytes:
        end = self.offset + size
        if end > len(self.data):
            raise InvalidManifest(f"manifest node ends inside its {what} ({len(self.data) + KEY_SIZE} bytes)")
        piece = self.data[self.offset : end]
        self.offset = end
        return piece


def _xor(data: bytes, key: bytes) -> bytes:
    if not any(key):
        return bytes(data)
    stream = key * (len(data) // KEY_SIZE + 1)
    return bytes(a ^ b for a, b in zip(data, stream, strict=False))
