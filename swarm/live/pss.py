"""PSS over live topics: Bee's ``/pss`` messages addressed to neighbourhoods, sealed for a recipient.

Bee carries a PSS message in a trojan chunk pushed to the target neighbourhood; here it travels as
a signed live topic message (swarm/live, docs/live.md) to every node subscribed to its topic, and
this module decides what each of them hands to its local subscribers:

- **targets** (Bee's ``/pss/send/{topic}/{targets}``: hex prefixes, comma separated): a node hands
  the message on only if its overlay (in hex) starts with one of them;
- **recipient** (``?recipient=``, a secp256k1 public key): the message is sealed for it. An
  ephemeral key's ECDH with the recipient's key gives the cipher key (keccak256 of the shared x),
  and ``keccak256(topic) || message`` is encrypted with Bee's Keccak counter cipher
  (`swarm.files.encryption.transcrypt`); a node whose own key (eth.key, ``pssPublicKey``) does
  not open it to that check word drops it. Without a recipient the message travels in the clear.

The live topic is ``keccak256("pss" || topic)``, so PSS envelopes never mix with the messages of
`swarm topic` on the same topic. The envelope (the live message's payload)::

    version (1 byte: 1) | targets length (1 byte) | targets (ASCII, "ab,0f1")
    | 0 (clear) then the message, or 1 (sealed) then the ephemeral key (33 bytes) and the cipher text

Pure: no trio, no sockets.
"""

from __future__ import annotations

from string import hexdigits

from chunks import keccak256
from chunks.ethkey import Secp256k1Key
from swarm.files.encryption import transcrypt

__all__ = ["BadEnvelope", "live_topic", "open_envelope", "parse_targets", "seal"]

VERSION = 1
CLEAR, SEALED = 0, 1
EPHEMERAL_KEY_SIZE = 33
CHECK_SIZE = 32
MAX_TARGET_DIGITS = 6
"""Bee's targets are prefixes of at most 3 bytes."""


class BadEnvelope(ValueError):
    """A PSS envelope that is not one, or targets that are not hex prefixes."""


def live_topic(topic: bytes) -> bytes:
    """The live topic PSS messages of ``topic`` travel on."""
    return keccak256(b"pss" + topic)


def parse_targets(text: str) -> tuple[str, ...]:
    """Bee's comma-separated hex prefixes, lower case; BadEnvelope naming what is wrong."""
    targets = tuple(t.lower() for t in text.split(","))
    if not all(t and len(t) <= MAX_TARGET_DIGITS and all(c in hexdigits for c in t) for t in targets):
        raise BadEnvelope(f"targets must be hex prefixes of at most 3 bytes, comma separated: {text!r}")
    return targets


def seal(
    topic: bytes,
    message: bytes,
    targets: tuple[str, ...],
    recipient: bytes | None,
    ephemeral: Secp256k1Key | None = None,
) -> bytes:
    """The envelope of ``message`` for the nodes under ``targets``, sealed for ``recipient`` (a
    33- or 65-byte public key) when one is given. ``ephemeral`` is for tests (default: fresh)."""
    named = ",".join(targets).encode()
    if len(named) > 255:
        raise BadEnvelope(f"targets take {len(named)} bytes, at most 255")
    head = bytes([VERSION, len(named)]) + named
    if recipient is None:
        return head + bytes([CLEAR]) + message
    ephemeral = ephemeral or Secp256k1Key.generate()
    key = keccak256(ephemeral.shared_x(recipient))
    sealed = transcrypt(key, keccak256(topic) + message)
    return head + bytes([SEALED]) + ephemeral.public_key_compressed + sealed


def open_envelope(topic: bytes, envelope: bytes, overlay: bytes, own: Secp256k1Key) -> bytes | None:
    """The message for this node (``overlay``, key ``own``), or None when it is not one of the
    targets or cannot open the seal. BadEnvelope when ``envelope`` is malformed."""
    if len(envelope) < 3 or envelope[0] != VERSION:
        raise BadEnvelope("not a PSS envelope (version)")
    size = envelope[1]
    if len(envelope) < 3 + size:
        raise BadEnvelope("PSS envelope shorter than its targets")
    try:
        targets = parse_targets(envelope[2 : 2 + size].decode("ascii"))
    except UnicodeDecodeError:
        raise BadEnvelope("PSS targets are not ASCII") from None
    kind, body = envelope[2 + size], envelope[3 + size :]
    if not overlay.hex().startswith(targets):
        return None
    if kind == CLEAR:
        return body
    if kind != SEALED or len(body) < EPHEMERAL_KEY_SIZE + CHECK_SIZE:
        raise BadEnvelope("PSS envelope: unknown kind or a seal too short")
    try:
        key = keccak256(own.shared_x(body[:EPHEMERAL_KEY_SIZE]))
    except ValueError:
        raise BadEnvelope("PSS envelope: the ephemeral key is not a curve point") from None
    plain = transcrypt(key, body[EPHEMERAL_KEY_SIZE:])
    if plain[:CHECK_SIZE] != keccak256(topic):
        return None  # sealed for another key
    return plain[CHECK_SIZE:]
