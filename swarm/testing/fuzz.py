"""Fuzz drivers: arbitrary input into the pure protocol cores, every outcome sorted.

Shared by the test suite (`tests/test_fuzz.py`, driven by hypothesis at a size CI affords) and
`benches/fuzz.py` (a longer random campaign). Each driver feeds one core what a hostile peer
could send and returns what came out: the values, and the exceptions by type. The only
acceptable exceptions are the ones the shell handles (a `RemoteProtocolError` drops the peer, a
`HandshakeError` refuses it); anything else is a bug the campaign exists to find.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Sequence

from streamer.errors import RemoteProtocolError
from streamer.framing import FrameDecoder
from streamer.greeting import HandshakeMachine, HandshakeRefused
from streamer.identity import HandshakeError, NodeIdentity, make_handshake
from streamer.messages import (
    PROTOCOL_VERSION,
    ChunkDeliveries,
    ChunkDelivery,
    CursorsReply,
    CursorsRequest,
    Handshake,
    Message,
    OfferedHashes,
    Subscribe,
    Unsubscribed,
    WantedHashes,
)
from syncer.session import DownstreamSession
from syncer.session_events import OfferReceived

__all__ = [
    "EXPECTED",
    "feed_decoder",
    "feed_greeting",
    "feed_session",
    "mutate",
]

EXPECTED = (RemoteProtocolError, HandshakeError, HandshakeRefused)
"""What a core may raise at a peer's input; any other exception type is a bug."""


def mutate(rng: random.Random, frames: Sequence[bytes], *, rounds: int = 3) -> bytes:
    """Valid frames, joined and then damaged: bytes flipped, cut, repeated or inserted."""
    data = bytearray(b"".join(frames))
    for _ in range(rng.randrange(rounds + 1)):
        if not data:
            break
        kind = rng.randrange(4)
        at = rng.randrange(len(data))
        if kind == 0:
            data[at] ^= 1 << rng.randrange(8)
        elif kind == 1:
            del data[at : at + rng.randrange(1, 16)]
        elif kind == 2:
            data[at:at] = data[at : at + rng.randrange(1, 64)]
        else:
            data[at:at] = rng.randbytes(rng.randrange(1, 8))
    return bytes(data)


def feed_decoder(data: bytes, splits: Iterable[int], outcomes: Counter[str]) -> list[Message]:
    """Feed `data` to a decoder in pieces cut at `splits`, draining after each; the messages."""
    decoder = FrameDecoder()
    messages: list[Message] = []
    start = 0
    try:
        for cut in [*sorted(set(splits)), len(data)]:
            if cut <= start:
                continue
            decoder.receive_data(data[start:cut])
            start = cut
            while (msg := decoder.next_message()) is not None:
                messages.append(msg)
        decoder.receive_eof()
        outcomes["clean"] += 1
    except Exception as exc:
        outcomes[type(exc).__name__] += 1
        if not isinstance(exc, EXPECTED):
            raise
    return messages


_UPSTREAM = bytes(range(32))
_EPOCH = 7


def feed_session(messages: Iterable[Message], outcomes: Counter[str]) -> None:
    """A downstream session that asks for cursors and subscribes to every stream it sees offered,
    and answers every offer it accepts, fed a peer's `messages` until one breaks a rule."""
    session = DownstreamSession(_UPSTREAM, _EPOCH)
    try:
        for msg in messages:
            if isinstance(msg, CursorsReply):
                session.send(CursorsRequest())
            if isinstance(msg, OfferedHashes) and not session.active((msg.bin, msg.live)):
                end = 0 if msg.live else min(msg.end, session.cursor(msg.bin))
                if msg.live or end >= msg.start:
                    session.send(Subscribe(msg.bin, msg.live, msg.start, end))
            if not isinstance(
                msg, CursorsReply | OfferedHashes | Unsubscribed | ChunkDelivery | ChunkDeliveries
            ):
                continue
            event = session.receive(msg)
            if isinstance(event, OfferReceived):
                o = event.offer
                session.send(WantedHashes.from_indices(o.bin, o.live, o.start, o.end, range(len(o.hashes))))
        outcomes["clean"] += 1
    except Exception as exc:
        outcomes[type(exc).__name__] += 1
        if not isinstance(exc, EXPECTED):
            raise


def feed_greeting(messages: Iterable[Message], outcomes: Counter[str], identity: NodeIdentity) -> None:
    """One side's greeting fed a peer's `messages` until it is done or refuses."""

    def make_local(challenge: bytes, binding: bytes) -> Handshake:
        return make_handshake(
            identity,
            version=PROTOCOL_VERSION,
            network_id=1,
            epoch=1,
            host="",
            port=0,
            challenge=challenge,
            binding=binding,
        )

    machine = HandshakeMachine(bytes(32), make_local, network_id=1)
    machine.start()
    try:
        for msg in messages:
            if machine.done:
                break
            machine.receive(msg)
        outcomes["done" if machine.done else "clean"] += 1
    except Exception as exc:
        outcomes[type(exc).__name__] += 1
        if not isinstance(exc, EXPECTED):
            raise
