"""Sequence feeds as bee (`pkg/feeds`) and bee-js write them: formats only, no lookup.

A feed is named by ``(owner, topic)``: an owner address and a 32-byte topic. Its updates are
single-owner chunks of that owner, update ``i`` at the id ``keccak256(topic || u64be(i))``, so
anyone who knows owner and topic can compute where update ``i`` lives; the latest update is
found by probing (``swarm.feeds.lookup``).

The wrapped chunk of an update comes in two versions, which nothing in the chunk tells apart:

- v1 (legacy; bee-js ``upload(reference)``): payload = ``u64be(unix seconds) || reference``,
  the reference 32 bytes (64 for an encrypted one), so the wrapped data is 48 or 80 bytes.
- v2 (bee-js ``uploadPayload``): the wrapped chunk is the content's own root chunk: the payload
  itself when it fits one chunk, else the root chunk of its tree (its span the content size).

`FeedUpdate.v1_fields` reads the v1 fields where the length allows them; whether the update *is*
v1 is decided by the reader (bee tries both; see `swarm.feeds.finder`).
"""

from __future__ import annotations

from dataclasses import dataclass

from chunks.bmt import keccak256
from chunks.ethkey import OWNER_SIZE, Secp256k1Key
from chunks.soc import Soc, make_soc, soc_address, validate_soc

__all__ = [
    "MAX_INDEX",
    "TOPIC_SIZE",
    "FeedUpdate",
    "make_update_v1",
    "make_update_v2",
    "parse_update",
    "topic_from_text",
    "update_address",
    "update_id",
]

TOPIC_SIZE = 32
MAX_INDEX = 2**64 - 1
_TIMESTAMP_SIZE = 8
_V1_REFERENCE_SIZES = (32, 64)


def topic_from_text(text: str) -> bytes:
    """The 32-byte topic for ``text``: 64 hex characters are taken as they are, anything else is
    hashed as bee-js's ``Topic.fromString`` does (Keccak-256 of its UTF-8 bytes)."""
    if len(text) == 2 * TOPIC_SIZE:
        try:
            return bytes.fromhex(text)
        except ValueError:
            pass
    return keccak256(text.encode("utf-8"))


def _index_bytes(index: int) -> bytes:
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= MAX_INDEX:
        raise ValueError(f"a feed index is an integer in 0..2**64-1, got {index!r}")
    return index.to_bytes(8, "big")


def update_id(topic: bytes, index: int) -> bytes:
    """The SOC id of update ``index`` of a sequence feed: ``keccak256(topic || u64be(index))``."""
    if len(topic) != TOPIC_SIZE:
        raise ValueError(f"a topic is {TOPIC_SIZE} bytes, got {len(topic)}")
    return keccak256(topic + _index_bytes(index))


def update_address(owner: bytes, topic: bytes, index: int) -> bytes:
    """The chunk address of update ``index`` of the feed ``(owner, topic)``."""
    if len(owner) != OWNER_SIZE:
        raise ValueError(f"an owner address is {OWNER_SIZE} bytes, got {len(owner)}")
    return soc_address(update_id(topic, index), owner)


def make_update_v1(key: Secp256k1Key, topic: bytes, index: int, reference: bytes, timestamp: int) -> Soc:
    """Update ``index`` of ``key``'s feed pointing at ``reference``, stamped ``timestamp`` (unix s)."""
    if len(reference) not in _V1_REFERENCE_SIZES:
        raise ValueError(f"a reference is 32 or 64 bytes, got {len(reference)}")
    if not 0 <= timestamp < 2**64:
        raise ValueError(f"timestamp {timestamp} is outside 0..2**64-1")
    return make_soc(key, update_id(topic, index), timestamp.to_bytes(_TIMESTAMP_SIZE, "big") + reference)


def make_update_v2(
    key: Secp256k1Key, topic: bytes, index: int, payload: bytes, *, span: int | None = None
) -> Soc:
    """Update ``index`` of ``key``'s feed wrapping the content's root chunk (``payload``, ``span``).

    For content of up to 4096 bytes the payload is the content (span its length); for larger
    content pass the root chunk's payload and span (``Chunk.payload``, ``Chunk.span``).
    """
    return make_soc(key, update_id(topic, index), payload, span=span)


@dataclass(frozen=True, slots=True)
class FeedUpdate:
    """A checked update of a sequence feed: the SOC at update ``index``'s address."""

    owner: bytes
    topic: bytes
    index: int
    soc: Soc

    @property
    def v1_fields(self) -> tuple[int, bytes] | None:
        """``(timestamp, reference)`` if the wrapped chunk has a v1 update's length, else None.

        A v2 update of 40 or 72 payload bytes has that length too (bee #5027): treat the fields
        as a claim, to be confirmed by finding the reference.
        """
        payload = self.soc.payload
        if self.soc.span != len(payload) or len(payload) - _TIMESTAMP_SIZE not in _V1_REFERENCE_SIZES:
            return None
        return int.from_bytes(payload[:_TIMESTAMP_SIZE], "big"), payload[_TIMESTAMP_SIZE:]


def parse_update(owner: bytes, topic: bytes, index: int, data: bytes) -> FeedUpdate:
    """The update ``index`` of ``(owner, topic)`` that ``data`` holds; InvalidSoc if it is not one."""
    return FeedUpdate(owner, topic, index, validate_soc(update_address(owner, topic, index), data))
