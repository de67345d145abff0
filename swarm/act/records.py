"""The records of Bee's access control (ACT), as pkg/accesscontrol writes them. Pure.

- **Session keys**: ECDH of the node's key with a public key; the shared point's x coordinate
  (big-endian, leading zero bytes dropped, as Go's `big.Int.Bytes`) hashed with a one-byte nonce:
  `keccak256(x || nonce)`. Nonce 0 gives a grantee's *lookup key*, nonce 1 the key that encrypts
  the *access key* for it.
- **ACT**: lookup key -> access key encrypted for that grantee, stored as Bee's *simple manifest*
  (JSON `{"entries": {hex(lookup key): {"reference": hex(encrypted key)}}}`). The publisher is
  always a grantee of its own ACT.
- **Grantee list**: the grantees' uncompressed public keys (65 bytes each) one after the other,
  stored encrypted; its 64-byte reference is given out encrypted for the publisher (session key
  with itself, nonce 1).
- **History**: a mantaray manifest whose paths are `str(2**63 - 1 - unix time)` (the newest entry
  has the smallest path) naming an ACT, with the encrypted grantee list reference as metadata.

Ciphers are Bee's counter mode (swarm.files.encryption.transcrypt) with counters from 0.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from coincurve import PublicKey

from chunks.bmt import keccak256
from chunks.ethkey import Secp256k1Key
from swarm.manifest.trie import Entry

__all__ = [
    "GRANTEE_KEY_SIZE",
    "ActNotFound",
    "BadPublicKey",
    "EmptyGranteeList",
    "add_grantees",
    "compressed",
    "decode_act",
    "decode_grantees",
    "encode_act",
    "encode_grantees",
    "history_lookup",
    "history_path",
    "parse_public_key",
    "publisher_cipher_key",
    "remove_grantees",
    "session_key",
]

GRANTEE_KEY_SIZE = 65
"""An uncompressed secp256k1 public key: 0x04, x, y."""
MAX_INT64 = 2**63 - 1


class BadPublicKey(ValueError):
    """A grantee that is not a secp256k1 public key."""


class EmptyGranteeList(ValueError):
    """A revocation from a grantee list that holds nobody."""


class ActNotFound(LookupError):
    """A history with no entry (or an ACT without the publisher's key)."""


def parse_public_key(text: str) -> bytes:
    """A public key from hex (33 compressed or 65 uncompressed bytes), as 65 uncompressed bytes."""
    try:
        return bytes(PublicKey(bytes.fromhex(text)).format(compressed=False))
    except (ValueError, TypeError):
        raise BadPublicKey(f"not a secp256k1 public key: {text[:140]!r}") from None


def compressed(public_key: bytes) -> bytes:
    """The 33-byte compressed form of a 65-byte public key."""
    prefix = 2 + (public_key[-1] & 1)
    return bytes([prefix]) + public_key[1:33]


def session_key(own: Secp256k1Key, public_key: bytes, nonce: bytes) -> bytes:
    """Bee's `Session.Key`: keccak256(ECDH x, without leading zero bytes || nonce)."""
    return keccak256(own.shared_x(public_key).lstrip(b"\0") + nonce)


def publisher_cipher_key(own: Secp256k1Key) -> bytes:
    """The key that encrypts the grantee list's reference for the publisher (itself)."""
    return session_key(own, b"\x04" + own.public_key, b"\x01")


def encode_grantees(grantees: Iterable[bytes]) -> bytes:
    return b"".join(grantees)


def decode_grantees(data: bytes) -> list[bytes]:
    """The keys of a stored grantee list; [] if any is not a key (as Bee reads it)."""
    keys = [data[i : i + GRANTEE_KEY_SIZE] for i in range(0, len(data), GRANTEE_KEY_SIZE)]
    try:
        return [parse_public_key(key.hex()) for key in keys]
    except BadPublicKey:
        return []


def add_grantees(grantees: list[bytes], add: Iterable[bytes]) -> list[bytes]:
    """Bee's `Add`: the new keys not already listed (nor repeated), appended in order."""
    out = list(grantees)
    for key in add:
        if key not in out:
            out.append(key)
    return out


def remove_grantees(grantees: list[bytes], remove: Iterable[bytes]) -> list[bytes]:
    """Bee's `Remove`: each removed key's place is taken by the last key (order changes)."""
    out = list(grantees)
    if not out:
        raise EmptyGranteeList("remove from empty grantee list")
    for key in remove:
        i = 0
        while i < len(out):
            if out[i] == key:
                out[i] = out[-1]
                out.pop()
            i += 1
    return out


def encode_act(act: Mapping[bytes, bytes]) -> bytes:
    """An ACT as Bee's simple manifest: compact JSON, keys sorted (as Go's encoding/json)."""
    entries = {key.hex(): {"reference": value.hex()} for key, value in sorted(act.items())}
    return json.dumps({"entries": entries}, separators=(",", ":"), sort_keys=True).encode()


def decode_act(data: bytes) -> dict[bytes, bytes]:
    try:
        entries = json.loads(data)["entries"]
        return {bytes.fromhex(k): bytes.fromhex(v["reference"]) for k, v in entries.items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ActNotFound("the ACT is not a simple manifest of keys") from None


def history_path(unix_time: int) -> bytes:
    """A history entry's path: the newest has the smallest."""
    return str(MAX_INT64 - unix_time).encode()


def history_lookup(entries: Mapping[bytes, Entry], unix_time: int) -> Entry:
    """Bee's `History.Lookup`: the newest entry at or before `unix_time`, else the oldest."""
    if not entries:
        raise ActNotFound("the history has no entry")
    wanted = MAX_INT64 - unix_time
    ordered = sorted(entries.items())
    for path, entry in ordered:
        if path.isdigit() and int(path) >= wanted:
            return entry
    return ordered[-1][1]
