"""Bee's chunk encryption: the cipher behind `Swarm-Encrypt: true` and 64-byte references.

Pure: no trio, no sockets, no disk. As ethersphere/bee's pkg/encryption (a Keccak-256 counter
mode): the data is cut into 32-byte segments; segment `i` is XORed with
`keccak256(keccak256(key || uint32_le(init_ctr + i)))` (the second hash allows disclosing one
segment's key without the others). A chunk is encrypted with a fresh random 32-byte key:

- its payload with counters from 0, padded to 4096 bytes with *random* bytes (never encrypted
  zeros), so every encrypted chunk is a full chunk and its length tells nothing;
- its 8-byte span separately, with counters from 4096 / 64 = 64 (Bee's choice: the span's key
  stream is the one of payload segment 64, kept so that references agree with Bee's).

The encrypted chunk is an ordinary content chunk (its address is the BMT hash of the encrypted
span and payload); the file's reference to it is `address || key`, 64 bytes. Intermediate
chunks hold such 64-byte references, 64 of them when full. Decrypting a chunk gives its span,
and its payload is cut back to what the span says (the data bytes, or the references).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from chunks import CHUNK_SIZE, SPAN_SIZE, Chunk, InvalidChunk, keccak256
from swarm.files.chunker import child_count

__all__ = [
    "ENCRYPTED_REF_SIZE",
    "KEY_SIZE",
    "DecryptedChunk",
    "EncryptingSeal",
    "decrypt_chunk",
    "encrypt_chunk",
    "open_encrypted",
    "transcrypt",
]

KEY_SIZE = 32
ENCRYPTED_REF_SIZE = 32 + KEY_SIZE
"""Length of a reference to an encrypted chunk: its address, then its key."""
SPAN_INIT_CTR = CHUNK_SIZE // ENCRYPTED_REF_SIZE
"""First counter of the span's key stream (64), as Bee sets it."""


def _segment_key(key: bytes, counter: int) -> bytes:
    return keccak256(keccak256(key + (counter & 0xFFFFFFFF).to_bytes(4, "little")))


def transcrypt(key: bytes, data: bytes, init_ctr: int = 0) -> bytes:
    """Encrypt or decrypt `data` (the same XOR both ways): segment i with key stream init_ctr + i."""
    if len(key) != KEY_SIZE:
        raise ValueError(f"encryption key must be {KEY_SIZE} bytes, not {len(key)}")
    if not data:
        return b""
    stream = b"".join(_segment_key(key, init_ctr + i) for i in range(-(-len(data) // KEY_SIZE)))
    size = len(data)
    mixed = int.from_bytes(data, "little") ^ int.from_bytes(stream[:size], "little")
    return mixed.to_bytes(size, "little")


def encrypt_chunk(payload: bytes, span: int, key: bytes, padding: bytes | None = None) -> bytes:
    """The encrypted data (encrypted span || 4096 encrypted and padded bytes) of a chunk.

    `padding` fills the payload up to 4096 bytes (random when not given, as Bee does)."""
    if len(payload) > CHUNK_SIZE:
        raise ValueError(f"payload of {len(payload)} bytes is longer than a chunk ({CHUNK_SIZE})")
    if padding is None:
        padding = os.urandom(CHUNK_SIZE - len(payload))
    if len(payload) + len(padding) != CHUNK_SIZE:
        raise ValueError(f"padding of {len(padding)} bytes does not fill a payload of {len(payload)}")
    encrypted_span = transcrypt(key, span.to_bytes(SPAN_SIZE, "little"), SPAN_INIT_CTR)
    return encrypted_span + transcrypt(key, payload) + padding


def decrypt_chunk(data: bytes, key: bytes) -> tuple[int, bytes]:
    """(span, payload) of an encrypted chunk's data: the payload cut to the bytes the span says
    (a data chunk's file bytes, or an intermediate chunk's references)."""
    if len(data) != SPAN_SIZE + CHUNK_SIZE:
        raise ValueError(f"an encrypted chunk has {SPAN_SIZE + CHUNK_SIZE} bytes of data, not {len(data)}")
    span = int.from_bytes(transcrypt(key, data[:SPAN_SIZE], SPAN_INIT_CTR), "little")
    if span <= CHUNK_SIZE:
        size = span
    else:
        size = min(child_count(span, ENCRYPTED_REF_SIZE) * ENCRYPTED_REF_SIZE, CHUNK_SIZE)
    return span, transcrypt(key, data[SPAN_SIZE : SPAN_SIZE + size])


class EncryptingSeal:
    """How the splitter seals a chunk of an encrypted file: encrypted with a fresh key; the
    reference is `address || key`."""

    ref_size = ENCRYPTED_REF_SIZE

    def __call__(self, payload: bytes, span: int) -> tuple[Chunk, bytes]:
        key = os.urandom(KEY_SIZE)
        data = encrypt_chunk(payload, span, key)
        chunk = Chunk.from_payload(data[SPAN_SIZE:], int.from_bytes(data[:SPAN_SIZE], "little"))
        return chunk, chunk.address + key


@dataclass(frozen=True, slots=True)
class DecryptedChunk(Chunk):
    """An encrypted chunk after decryption, named by its 64-byte reference (address || key).

    Its data is the plain span and the payload cut to it, so the tree's shape rules read it as
    they read a plain chunk (64-byte references in an intermediate one). It was checked against
    its address before decryption (`open_encrypted`), so `verify()` has nothing left to check.
    """

    def __post_init__(self) -> None:
        if len(self.address) != ENCRYPTED_REF_SIZE:
            raise InvalidChunk(self.address[:32], f"reference is {len(self.address)} bytes, not 64")

    def verify(self) -> None:
        return None


def open_encrypted(chunk: Chunk, reference: bytes) -> DecryptedChunk:
    """The chunk at `reference[:32]`, verified against that address, decrypted with `reference[32:]`."""
    address, key = reference[:32], reference[32:]
    if chunk.address != address:
        raise InvalidChunk(address, f"fetch returned the chunk {chunk.address.hex()} instead")
    chunk.verify()
    try:
        span, payload = decrypt_chunk(chunk.data, key)
    except ValueError as exc:
        raise InvalidChunk(address, f"not an encrypted chunk: {exc}") from None
    return DecryptedChunk(reference, span.to_bytes(SPAN_SIZE, "little") + payload)
