"""HandshakeMachine and connection_reply: the greeting's rules, message by message, no event loop."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from streamer.errors import RemoteProtocolError
from streamer.greeting import HandshakeMachine, HandshakeRefused, connection_reply
from streamer.identity import HandshakeError, NodeIdentity, make_handshake
from streamer.messages import (
    NONCE_SIZE,
    PLAIN_BINDING,
    PROTOCOL_VERSION,
    CursorsRequest,
    Goodbye,
    GoodbyeCode,
    Handshake,
    Hello,
    Message,
    Ping,
    Pong,
)

NET = 5
A, B = NodeIdentity.generate(), NodeIdentity.generate()
NONCE_A, NONCE_B = bytes([1]) * NONCE_SIZE, bytes([2]) * NONCE_SIZE


def signer(identity: NodeIdentity, *, network_id: int = NET, version: int = PROTOCOL_VERSION) -> Callable:
    def make(challenge: bytes, binding: bytes = PLAIN_BINDING) -> Handshake:
        return make_handshake(
            identity,
            version=version,
            network_id=network_id,
            epoch=9,
            host="h",
            port=1,
            challenge=challenge,
            binding=binding,
        )

    return make


def machine(identity: NodeIdentity = A, nonce: bytes = NONCE_A) -> HandshakeMachine:
    return HandshakeMachine(nonce, signer(identity), network_id=NET)


def test_two_machines_greet_each_other() -> None:
    a, b = machine(A, NONCE_A), machine(B, NONCE_B)
    hello_a, hello_b = a.start(), b.start()
    assert hello_a == Hello(NONCE_A)
    hs_a = a.receive(hello_b)
    hs_b = b.receive(hello_a)
    assert hs_a is not None and hs_b is not None and not a.done
    assert a.receive(hs_b) is None and b.receive(hs_a) is None
    assert a.done and b.done
    assert a.remote == b.local and b.remote == a.local
    assert a.remote is not None and a.remote.overlay == B.overlay(NET)


def _their_handshake(over_nonce: bytes = NONCE_A, **changes: object) -> Handshake:
    hs = signer(B)(over_nonce)
    return dataclasses.replace(hs, **changes) if changes else hs


Case = tuple[str, list[Message], type[Exception], int | None, str]

CASES: list[Case] = [
    (
        "handshake before hello (version 1)",
        [_their_handshake()],
        HandshakeError,
        GoodbyeCode.VERSION_MISMATCH,
        "without a Hello",
    ),
    (
        "another message first",
        [CursorsRequest()],
        RemoteProtocolError,
        GoodbyeCode.PROTOCOL_ERROR,
        "expected Hello, got CursorsRequest",
    ),
    (
        "second hello",
        [Hello(NONCE_B), Hello(NONCE_B)],
        RemoteProtocolError,
        GoodbyeCode.PROTOCOL_ERROR,
        "expected Handshake, got Hello",
    ),
    (
        "signed over another nonce (replayed)",
        [Hello(NONCE_B), _their_handshake(over_nonce=NONCE_B)],
        HandshakeError,
        GoodbyeCode.BAD_HANDSHAKE,
        "signature",
    ),
    (
        "wrong network",
        [Hello(NONCE_B), _their_handshake(network_id=NET + 1)],
        HandshakeError,
        GoodbyeCode.WRONG_NETWORK,
        "network",
    ),
    (
        "wrong version",
        [Hello(NONCE_B), _their_handshake(version=PROTOCOL_VERSION + 1)],
        HandshakeError,
        GoodbyeCode.VERSION_MISMATCH,
        "version",
    ),
    (
        "overlay not of its key",
        [Hello(NONCE_B), _their_handshake(overlay=bytes(32))],
        HandshakeError,
        GoodbyeCode.BAD_HANDSHAKE,
        "claims overlay",
    ),
    (
        "ourselves",
        [Hello(NONCE_B), signer(A)(NONCE_A)],
        HandshakeError,
        GoodbyeCode.DUPLICATE_CONNECTION,
        "ourselves",
    ),
    (
        "refused with a goodbye",
        [Hello(NONCE_B), Goodbye(GoodbyeCode.WRONG_NETWORK, "no")],
        HandshakeRefused,
        GoodbyeCode.WRONG_NETWORK,
        "refused",
    ),
]


@pytest.mark.parametrize(
    ("messages", "error", "code", "match"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_what_the_machine_refuses(
    messages: list[Message], error: type[Exception], code: int | None, match: str
) -> None:
    m = machine()
    m.start()
    *before, last = messages
    for msg in before:
        m.receive(msg)
    with pytest.raises(error, match=match) as info:
        m.receive(last)
    assert getattr(info.value, "code", None) == code
    assert not m.done


def test_connection_messages_after_the_greeting() -> None:
    assert connection_reply(Ping(42)) == Pong(42)
    assert connection_reply(Pong(42)) is None
    with pytest.raises(RemoteProtocolError, match="Hello on an established connection"):
        connection_reply(Hello(NONCE_A))
    with pytest.raises(RemoteProtocolError, match="second handshake"):
        connection_reply(_their_handshake())
