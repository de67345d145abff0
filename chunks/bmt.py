"""Legacy Keccak-256 (Ethereum's, not NIST SHA3-256) and the BMT chunk address.

keccak256 prefers the C-extension binding (safe-pysha3, ~0.7 us a call) and falls back to
pycryptodome (~4.4 us a call) when it is not installed.

The BMT address of a payload of at most 4096 bytes: zero-pad it to 4096 bytes, hash each
64-byte section (64 leaves), hash pairs of 32-byte hashes level by level up to one root, and
hash ``span (8 bytes little-endian) || root``. A full chunk costs 128 Keccak calls, so the
Keccak call overhead is everything: the hasher below does no per-call Python work beyond one
slice and the two binding calls, and never hashes an all-zero subtree (those hashes are
precomputed per level), so a short payload costs a handful of calls. bmt_reference.py holds
the slow, definition-shaped hasher it is tested against.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = [
    "BMT_BRANCHES",
    "BMT_LEVELS",
    "CHUNK_PAYLOAD_SIZE",
    "KECCAK_BACKEND",
    "MAX_SPAN",
    "BytesLike",
    "bmt_address",
    "bmt_address_pycryptodome",
    "keccak256",
    "keccak256_pycryptodome",
]

CHUNK_PAYLOAD_SIZE = 4096
"""Largest payload a chunk can carry; shorter payloads are zero-padded to it for hashing."""
BMT_BRANCHES = 128
"""Number of 32-byte segments of a padded payload (the tree's fan-in at the bottom)."""
BMT_LEVELS = 7
"""Pair-hashing rounds from 128 segments to one root (2**7 == 128)."""
MAX_SPAN = 2**64 - 1
"""The span is an unsigned 64-bit integer."""


class _KeccakHash(Protocol):
    def digest(self) -> bytes: ...


_HashNew = Callable[[bytes], _KeccakHash]
BytesLike = bytes | bytearray | memoryview


def _pycryptodome_new(data: bytes) -> _KeccakHash:
    # The class constructor skips keccak.new()'s keyword validation (~0.5 us a call). Imported
    # here, not with the module: with pysha3 installed it is not needed, and importing it (cffi
    # parsing C declarations) took a tenth of a node's start-up.
    from Crypto.Hash.keccak import Keccak_Hash

    return Keccak_Hash(data, 32, False)


def keccak256_pycryptodome(data: bytes) -> bytes:
    """Keccak-256 through pycryptodome, whatever backend is preferred (for tests and benches)."""
    return _pycryptodome_new(data).digest()


_new: _HashNew
try:  # pragma: no cover - which branch runs depends on the installation
    from sha3 import keccak_256 as _pysha3_keccak

    def _keccak_pysha3(data: bytes) -> bytes:
        return _pysha3_keccak(data).digest()

    keccak256: Callable[[bytes], bytes] = _keccak_pysha3
    KECCAK_BACKEND = "pysha3"
    _new = _pysha3_keccak
except ImportError:  # pragma: no cover
    from Crypto.Hash.keccak import Keccak_Hash as _PycryptodomeKeccak

    def _pycryptodome_new(data: bytes) -> _KeccakHash:  # bound once: the fallback is hot
        return _PycryptodomeKeccak(data, 32, False)

    keccak256 = keccak256_pycryptodome
    KECCAK_BACKEND = "pycryptodome"
    _new = _pycryptodome_new


def _zero_hashes() -> tuple[bytes, ...]:
    """Hashes of all-zero subtrees: index 0 is a zero segment, index 7 the root of a zero chunk."""
    zeros = [bytes(32)]
    for _ in range(BMT_LEVELS):
        zeros.append(keccak256(zeros[-1] * 2))
    return tuple(zeros)


_ZEROS = _zero_hashes()
_LEVEL_ZEROS = _ZEROS[:BMT_LEVELS]
_ZERO_ROOT = _ZEROS[BMT_LEVELS]


def _address(payload: BytesLike, span: int | None, new: _HashNew) -> bytes:
    if type(payload) is not bytes:
        payload = bytes(payload)
    size = len(payload)
    if size > CHUNK_PAYLOAD_SIZE:
        raise ValueError(f"payload is {size} bytes, over the {CHUNK_PAYLOAD_SIZE}-byte chunk limit")
    if span is None:
        span = size
    elif not 0 <= span <= MAX_SPAN:
        raise ValueError(f"span {span} is outside 0..2**64-1")
    # Only the non-zero prefix of each level is hashed: pad it to whole pairs, then hash the
    # pairs; the all-zero remainder of the level is implied by the precomputed zero hashes.
    level = payload
    if size & 63:
        level += bytes(64 - (size & 63))
    for zero in _LEVEL_ZEROS:
        if len(level) & 32:
            level += zero
        level = b"".join([new(level[i : i + 64]).digest() for i in range(0, len(level), 64)])
    return new(span.to_bytes(8, "little") + (level or _ZERO_ROOT)).digest()


def bmt_address(payload: BytesLike, span: int | None = None) -> bytes:
    """The 32-byte BMT address of ``payload`` with ``span`` (default: the payload length).

    Raises ValueError if the payload is over 4096 bytes or the span is not an unsigned 64-bit
    integer.
    """
    return _address(payload, span, _new)


def bmt_address_pycryptodome(payload: BytesLike, span: int | None = None) -> bytes:
    """bmt_address through the pycryptodome fallback, whatever backend is preferred."""
    return _address(payload, span, _pycryptodome_new)
