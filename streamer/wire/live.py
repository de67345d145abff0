"""Live propagation (docs/protocol.md, section 5.11; docs/live.md): feed updates and topic
messages pushed along the paths of their followers' interest, and the pruning of redundant
paths."""

from __future__ import annotations

import enum
from typing import Annotated, TypeAlias

from streamer.wire.compound import Records
from streamer.wire.declare import Message, message, record
from streamer.wire.fields import U8, U64, Blob, Bytes, Choice, OneOf
from streamer.wire.limits import MAX_CHUNK_DATA_SIZE

OWNER_SIZE = 20
"""An owner (Ethereum) address: who signs a feed update or a topic message."""
TOPIC_SIZE = 32
ETH_SIGNATURE_SIZE = 65
"""A secp256k1 signature ``r || s || v`` (feed updates and topic messages)."""
MAX_INTEREST_ENTRIES = 512
MAX_TOPIC_PAYLOAD = 4096
INTEREST_WITHDRAWN = 0xFF
"""The ``hops`` of an interest entry that withdraws it."""


class StreamKind(enum.IntEnum):
    """What an interest entry names: a sequence feed ``(owner, topic)`` or an ephemeral topic."""

    FEED = 1
    TOPIC = 2


Kind: TypeAlias = Annotated[int, OneOf(StreamKind, 8)]
Owner: TypeAlias = Annotated[bytes, Bytes(OWNER_SIZE)]
Topic: TypeAlias = Annotated[bytes, Bytes(TOPIC_SIZE)]


@record
class InterestEntry:
    """One stream a peer wants pushed to it, and how many hops away its nearest follower is.

    Not a message by itself, carried in :class:`LiveInterest`. A topic's ``owner`` is 20 zero
    bytes (a topic stream carries every publisher's messages); ``hops`` 255 withdraws the entry.
    """

    kind: Kind
    owner: Owner
    topic: Topic
    hops: U8


@message(0x40)
class LiveInterest(Message):
    """Changes to the streams the sender wants pushed to it (entries it added, moved or withdrew)."""

    entries: Annotated[tuple[InterestEntry, ...], Records(InterestEntry, MAX_INTEREST_ENTRIES)]


@message(0x41)
class FeedPush(Message):
    """Update ``index`` of the feed ``(owner, topic)``: the single-owner chunk's data.

    ``data`` is not checked here beyond its length: the receiver validates the chunk (a forged
    or malformed one is dropped and counted, the connection stays).
    """

    owner: Owner
    topic: Topic
    index: U64
    data: Annotated[bytes, Blob(0, MAX_CHUNK_DATA_SIZE)]

    def __repr__(self) -> str:
        return (
            f"FeedPush(owner={self.owner.hex()}, topic={self.topic.hex()[:16]}.., index={self.index}, "
            f"data=<{len(self.data)} bytes>)"
        )


@message(0x42)
class TopicPush(Message):
    """An ephemeral message on ``topic`` signed by ``owner``, numbered the raims way.

    ``seq`` = frame << 35 | counter, ``chain`` the publisher's previous ``seq`` when its frame
    changed (else 0), ``time`` its clock in nanoseconds. The signature is checked by the
    receiver, not here.
    """

    topic: Topic
    owner: Owner
    seq: U64
    chain: U64
    time: U64
    signature: Annotated[bytes, Bytes(ETH_SIGNATURE_SIZE)]
    payload: Annotated[bytes, Blob(0, MAX_TOPIC_PAYLOAD)]

    def __repr__(self) -> str:
        return (
            f"TopicPush(topic={self.topic.hex()[:16]}.., owner={self.owner.hex()}, seq={self.seq:#x}, "
            f"chain={self.chain:#x}, payload=<{len(self.payload)} bytes>)"
        )


@message(0x43)
class LivePause(Message):
    """Stop (``paused`` 1) or start again (0) pushing one publisher's chain to the sender: the
    receiver of a repeat prunes the redundant path it came by (docs/live.md, "Pruning").

    A chain is a feed ``(owner, topic)`` (``kind`` 1) or one publisher's messages on a topic
    (``kind`` 2, ``owner`` the publisher).
    """

    kind: Kind
    owner: Owner
    topic: Topic
    paused: Annotated[int, Choice({0: "resume", 1: "pause"})]


@message(0x44)
class LiveHave(Message):
    """The sender has message ``number`` of a chain the receiver paused (`LivePause`), and did
    not push it: Plumtree's lazy push (``IHAVE``). A receiver that does not get the message
    by another path soon resumes the sender."""

    kind: Kind
    owner: Owner
    topic: Topic
    number: U64  # a feed update's index, a topic message's seq
