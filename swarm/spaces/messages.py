"""What a space is made of on the swarm, byte by byte: its member list and its members' messages.

A **space** is named by its *space key*'s owner address (20 bytes, the space id). Two kinds of
sequence feeds (`chunks.feeds`) make it up:

- the **member list**: the feed ``(space id, MEMBERS_TOPIC)``, written with the space key (the
  invitation: whoever holds it may admit members). Update 0 is the genesis, naming the space and
  its first member; every later update admits one member. Member ``i`` is the ``i``-th distinct
  owner in it (an owner listed again is ignored), so every reader numbers members alike.
- one **message feed** per member: ``(member owner, message_topic(space id))``, update ``n`` being
  the member's message ``n`` (its sequence number). Each update wraps one space message (Bee's v2
  feed update: the payload is the message itself, at most 4096 bytes).

A space message::

    version u8 (1) | kind u8 | varint written_at (unix ms, the writer's clock, shown only)
    | timeframe delta (swarm.spaces.timeframe) | body

The body of ``SAY`` is UTF-8 text (not empty); of ``SET``, ``varint(key length) || key || value``
(UTF-8; an empty value clears the key); a ``HEARTBEAT`` has none: it only tells readers how far
its writer got (total order needs to hear from every active member).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from chunks.bmt import keccak256
from chunks.chunk import CHUNK_SIZE
from chunks.ethkey import OWNER_SIZE
from swarm.spaces.timeframe import (
    Delta,
    InvalidTimeframe,
    Timeframe,
    decode_delta,
    delta_between,
    encode_delta,
    read_varint,
    varint,
)

__all__ = [
    "MAX_KEY_BYTES",
    "MAX_MESSAGE_BYTES",
    "MAX_NAME_BYTES",
    "MEMBERS_TOPIC",
    "InvalidSpaceMessage",
    "Kind",
    "MemberEntry",
    "SpaceMessage",
    "compose",
    "decode_member_entry",
    "decode_message",
    "encode_member_entry",
    "encode_message",
    "message_topic",
]

VERSION = 1
MAX_MESSAGE_BYTES = CHUNK_SIZE
MAX_KEY_BYTES = 256
MAX_NAME_BYTES = 64
MEMBERS_TOPIC = keccak256(b"swarmpy/space/v1/members")
_MEMBERS_MAGIC = b"swarmpy-space\x01"


def message_topic(space: bytes) -> bytes:
    """The topic of every member's message feed in the space ``space``."""
    if len(space) != OWNER_SIZE:
        raise ValueError(f"a space id is {OWNER_SIZE} bytes, got {len(space)}")
    return keccak256(b"swarmpy/space/v1/messages" + space)


class InvalidSpaceMessage(ValueError):
    """Bytes that are not a space message (or member entry); the text says what is wrong."""


class Kind(IntEnum):
    HEARTBEAT = 0
    SAY = 1
    SET = 2


@dataclass(frozen=True, slots=True)
class SpaceMessage:
    """One message of a member's feed, its timeframe as the delta since the member's previous one."""

    kind: Kind
    delta: Delta
    written_at: int = 0
    text: str = ""  # SAY
    key: str = ""  # SET
    value: str = ""  # SET

    def describe(self) -> str:
        if self.kind is Kind.SAY:
            return self.text
        if self.kind is Kind.SET:
            return f"set {self.key} = {self.value}" if self.value else f"clear {self.key}"
        return "(heartbeat)"


def encode_message(message: SpaceMessage) -> bytes:
    """The payload of a member feed update; InvalidSpaceMessage if it breaks a limit."""
    head = bytes([VERSION, message.kind]) + varint(message.written_at) + encode_delta(message.delta)
    if message.kind is Kind.SAY:
        if not message.text:
            raise InvalidSpaceMessage("a message says something: the text is empty")
        body = message.text.encode("utf-8")
    elif message.kind is Kind.SET:
        key = message.key.encode("utf-8")
        if not 0 < len(key) <= MAX_KEY_BYTES:
            raise InvalidSpaceMessage(f"a key is 1..{MAX_KEY_BYTES} bytes of UTF-8, got {len(key)}")
        body = varint(len(key)) + key + message.value.encode("utf-8")
    else:
        body = b""
    if len(head) + len(body) > MAX_MESSAGE_BYTES:
        raise InvalidSpaceMessage(
            f"the message is {len(head) + len(body)} bytes; at most {MAX_MESSAGE_BYTES} fit one chunk"
        )
    return head + body


def decode_message(payload: bytes) -> SpaceMessage:
    """The message in a member feed update's payload; InvalidSpaceMessage if it is not one."""
    if len(payload) > MAX_MESSAGE_BYTES:
        raise InvalidSpaceMessage(f"{len(payload)} bytes: a message is at most {MAX_MESSAGE_BYTES}")
    if len(payload) < 4:
        raise InvalidSpaceMessage(f"{len(payload)} bytes is too short for a message")
    if payload[0] != VERSION:
        raise InvalidSpaceMessage(f"message version {payload[0]} is not {VERSION}")
    try:
        kind = Kind(payload[1])
    except ValueError:
        raise InvalidSpaceMessage(f"unknown message kind {payload[1]}") from None
    try:
        written_at, offset = read_varint(payload, 2)
        delta, offset = decode_delta(payload, offset)
    except InvalidTimeframe as exc:
        raise InvalidSpaceMessage(f"bad timeframe: {exc}") from None
    body = payload[offset:]
    try:
        return _with_body(kind, delta, written_at, body)
    except UnicodeDecodeError:
        raise InvalidSpaceMessage("the text is not UTF-8") from None


def _with_body(kind: Kind, delta: Delta, written_at: int, body: bytes) -> SpaceMessage:
    if kind is Kind.HEARTBEAT:
        if body:
            raise InvalidSpaceMessage(f"a heartbeat has no body, this one has {len(body)} bytes")
        return SpaceMessage(kind, delta, written_at)
    if kind is Kind.SAY:
        if not body:
            raise InvalidSpaceMessage("a message with empty text")
        return SpaceMessage(kind, delta, written_at, text=body.decode("utf-8"))
    try:
        size, offset = read_varint(body, 0)
    except InvalidTimeframe:
        raise InvalidSpaceMessage("a set without a key") from None
    if not 0 < size <= MAX_KEY_BYTES or offset + size > len(body):
        raise InvalidSpaceMessage(f"a key of {size} bytes (1..{MAX_KEY_BYTES}, within the message)")
    key = body[offset : offset + size].decode("utf-8")
    return SpaceMessage(kind, delta, written_at, key=key, value=body[offset + size :].decode("utf-8"))


# -- the member list --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemberEntry:
    """One update of a space's member list: a member's owner address; the genesis (update 0)
    also names the space."""

    owner: bytes
    name: str | None = None


def encode_member_entry(entry: MemberEntry) -> bytes:
    if len(entry.owner) != OWNER_SIZE:
        raise InvalidSpaceMessage(f"an owner address is {OWNER_SIZE} bytes, got {len(entry.owner)}")
    name = b"" if entry.name is None else entry.name.encode("utf-8")
    if entry.name is not None and not 0 < len(name) <= MAX_NAME_BYTES:
        raise InvalidSpaceMessage(f"a space name is 1..{MAX_NAME_BYTES} bytes of UTF-8, got {len(name)}")
    return _MEMBERS_MAGIC + entry.owner + name


def decode_member_entry(payload: bytes, index: int) -> MemberEntry:
    """Update ``index`` of a member list; InvalidSpaceMessage if it is not one."""
    head = len(_MEMBERS_MAGIC) + OWNER_SIZE
    if len(payload) < head or not payload.startswith(_MEMBERS_MAGIC):
        raise InvalidSpaceMessage(f"member list update {index} is not a member entry")
    owner, name = payload[len(_MEMBERS_MAGIC) : head], payload[head:]
    if index == 0 and not 0 < len(name) <= MAX_NAME_BYTES:
        raise InvalidSpaceMessage(f"the genesis names the space in 1..{MAX_NAME_BYTES} bytes")
    if index > 0 and name:
        raise InvalidSpaceMessage(f"member list update {index} carries a name; only the genesis does")
    try:
        return MemberEntry(owner, name.decode("utf-8") if index == 0 else None)
    except UnicodeDecodeError:
        raise InvalidSpaceMessage("the space name is not UTF-8") from None


def compose(
    member: int,
    previous: Timeframe,
    processed: Timeframe,
    kind: Kind,
    *,
    text: str = "",
    key: str = "",
    value: str = "",
    written_at: int = 0,
) -> bytes:
    """The payload of member ``member``'s next message: its timeframe is ``processed`` (what its
    reader has processed), sent as the change since ``previous`` (its previous message's)."""
    try:
        delta = delta_between(previous, processed, member)
    except ValueError as exc:
        raise InvalidSpaceMessage(f"cannot write from this timeframe: {exc}") from None
    return encode_message(SpaceMessage(kind, delta, written_at, text=text, key=key, value=value))
