"""What a live message is and how it is checked (pure): feed updates and signed topic messages.

Two kinds of message travel by push (`streamer.messages`, 0x40..0x42):

- a **feed update**: update ``index`` of the sequence feed ``(owner, topic)``, a single-owner chunk
  (`chunks.feeds`); it is valid if the chunk is the owner's SOC at the update's address, which
  the receiver computes from owner, topic and index. Feed updates are also stored and synced like
  any chunk: pushing them is what makes them *live*.
- a **topic message**: an ephemeral payload on a 32-byte topic, numbered with raims' sequence
  numbers (`swarm.live.seqno`) and signed by its publisher's secp256k1 key. It is never stored.

The signature of a topic message is an Ethereum personal-message signature (`chunks.ethkey`,
as feed updates are signed) over fixed-size, domain-separated bytes::

    "swarm-sync/topic-message/v1" || topic (32) || seq (u64 BE) || chain (u64 BE) || time (u64 BE)
        || keccak256(payload)

so no two different messages sign the same bytes (unlike Streamr's string concatenation, which
the research notes as a canonicalisation weakness). The message names its publisher's owner
address; the signature must recover to it.

Each message has a `Chain` (publisher, chain): the unit of duplicate detection. A feed is one
chain, numbered by its indices; a topic has one chain per publisher.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from chunks.bmt import keccak256
from chunks.ethkey import BadSignature, Secp256k1Key, recover_owner
from chunks.feeds import FeedUpdate, parse_update
from chunks.invalid import InvalidChunk
from streamer.messages import FeedPush, StreamKind, TopicPush
from swarm.live.seqno import previous_of, seqno_counter

__all__ = [
    "ANY_OWNER",
    "TOPIC_DOMAIN",
    "Chain",
    "InvalidLiveMessage",
    "Stream",
    "chain_of",
    "check_feed_push",
    "check_topic_push",
    "edge_of",
    "make_topic_push",
    "stream_of",
    "topic_signing_bytes",
]

TOPIC_DOMAIN = b"swarm-sync/topic-message/v1"
ANY_OWNER = bytes(20)
"""The owner of a topic *stream*: a topic carries every publisher's messages."""


class Stream(NamedTuple):
    """What a follower asks for and interest names: a feed ``(owner, topic)`` or a topic."""

    kind: StreamKind
    owner: bytes
    topic: bytes

    @classmethod
    def feed(cls, owner: bytes, topic: bytes) -> Stream:
        return cls(StreamKind.FEED, owner, topic)

    @classmethod
    def topic_of(cls, topic: bytes) -> Stream:
        return cls(StreamKind.TOPIC, ANY_OWNER, topic)

    @property
    def name(self) -> str:
        """Short and readable: ``feed 1a2b3c4d/5e6f7a8b`` (owner/topic) or ``topic 5e6f7a8b``."""
        if self.kind is StreamKind.FEED:
            return f"feed {self.owner.hex()[:8]}/{self.topic.hex()[:8]}"
        return f"topic {self.topic.hex()[:8]}"


Chain = Stream
"""A publisher's chain, the unit of duplicate detection: a feed's `Stream` itself, or a topic
`Stream` whose owner is the publisher."""


def stream_of(msg: FeedPush | TopicPush) -> Stream:
    if isinstance(msg, FeedPush):
        return Stream(StreamKind.FEED, msg.owner, msg.topic)
    return Stream(StreamKind.TOPIC, ANY_OWNER, msg.topic)


def chain_of(msg: FeedPush | TopicPush) -> Chain:
    return Stream(StreamKind.FEED if isinstance(msg, FeedPush) else StreamKind.TOPIC, msg.owner, msg.topic)


def edge_of(msg: FeedPush | TopicPush) -> tuple[int | None, int]:
    """``(previous, number)`` for the duplicate detector: a feed update follows the index before
    it (update 0 follows nothing); a topic message as `seqno.previous_of` says."""
    if isinstance(msg, FeedPush):
        return (msg.index - 1 if msg.index else None), msg.index
    return previous_of(msg.seq, msg.chain), msg.seq


class InvalidLiveMessage(ValueError):
    """A pushed message that is malformed or forged: dropped and counted, never forwarded."""


def check_feed_push(msg: FeedPush) -> FeedUpdate:
    """The update ``msg`` carries, if it is the owner's SOC at the update's address."""
    try:
        return parse_update(msg.owner, msg.topic, msg.index, msg.data)
    except InvalidChunk as exc:
        raise InvalidLiveMessage(f"feed update {msg.index}: {exc}") from None


_NUMBERS = struct.Struct(">QQQ")


def topic_signing_bytes(topic: bytes, seq: int, chain: int, time: int, payload: bytes) -> bytes:
    """The bytes a topic message's signature covers (see the module docstring)."""
    return TOPIC_DOMAIN + topic + _NUMBERS.pack(seq, chain, time) + keccak256(payload)


def make_topic_push(
    key: Secp256k1Key, topic: bytes, seq: int, chain: int, time: int, payload: bytes
) -> TopicPush:
    signature = key.sign(topic_signing_bytes(topic, seq, chain, time, payload))
    return TopicPush(topic, key.owner, seq, chain, time, signature, payload)


def check_topic_push(msg: TopicPush) -> None:
    """Raise InvalidLiveMessage unless ``msg`` is well numbered and signed by its owner."""
    if seqno_counter(msg.seq) == 0:
        raise InvalidLiveMessage(f"topic message seq {msg.seq:#x} has counter 0 (counters start at 1)")
    if msg.chain and (seqno_counter(msg.seq) != 1 or msg.chain >= msg.seq):
        raise InvalidLiveMessage(
            f"topic message seq {msg.seq:#x} carries chain {msg.chain:#x}: only a frame's first "
            "message does, with a lower number"
        )
    try:
        signer = recover_owner(
            msg.signature, topic_signing_bytes(msg.topic, msg.seq, msg.chain, msg.time, msg.payload)
        )
    except BadSignature as exc:
        raise InvalidLiveMessage(f"topic message {msg.seq:#x}: {exc}") from None
    if signer != msg.owner:
        raise InvalidLiveMessage(
            f"topic message {msg.seq:#x} claims publisher {msg.owner.hex()} but is signed by {signer.hex()}"
        )
