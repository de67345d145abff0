"""PeerConnection and the handshake, over in-memory streams (TCP is covered by the node tests)."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

import pytest
import trio
import trio.testing

from streamer.codec import encode
from streamer.connection import Disconnect, PeerConnection, PingTimeout
from streamer.errors import RemoteProtocolError
from streamer.framing import FrameDecoder
from streamer.handshake import HandshakeFailed, handshake
from streamer.identity import NodeIdentity, make_handshake, verify_handshake
from streamer.messages import (
    NONCE_SIZE,
    PLAIN_BINDING,
    PROTOCOL_VERSION,
    ChunkDelivery,
    CursorsRequest,
    Goodbye,
    GoodbyeCode,
    Handshake,
    Hello,
    Message,
    Ping,
    Pong,
    RetrieveDelivery,
    RetrieveFailure,
    RetrieveRequest,
)
from streamer.outbox import Priority
from streamer.requests import RequestTable, RetrieveFailed

NET = 7


def hs(
    identity: NodeIdentity, network_id: int = NET, version: int = PROTOCOL_VERSION, port: int = 1
) -> Callable[..., Handshake]:
    """The handshake factory `handshake` wants: our handshake, signed over the peer's nonce."""

    def make(challenge: bytes, binding: bytes = PLAIN_BINDING) -> Handshake:
        return make_handshake(
            identity,
            version=version,
            network_id=network_id,
            epoch=5,
            host="127.0.0.1",
            port=port,
            challenge=challenge,
            binding=binding,
        )

    return make


async def pair(
    a_kwargs: dict | None = None,
    b_kwargs: dict | None = None,
    stream_pair=trio.testing.memory_stream_pair,
    *,
    identities: tuple[NodeIdentity, NodeIdentity] | None = None,
    challenges: dict[str, bytes] | None = None,
) -> tuple[PeerConnection, PeerConnection]:
    """Two handshaken connections; `challenges` records the nonce each side signed over."""
    ia, ib = identities or (NodeIdentity.generate(), NodeIdentity.generate())
    sa, sb = stream_pair()
    result: dict[str, PeerConnection] = {}

    async def side(name: str, stream, identity: NodeIdentity, outbound: bool, kwargs: dict | None) -> None:
        make = hs(identity)

        def make_local(challenge: bytes, binding: bytes) -> Handshake:
            if challenges is not None:
                challenges[name] = challenge
            return make(challenge, binding)

        result[name] = await handshake(
            stream, make_local, network_id=NET, outbound=outbound, **(kwargs or {})
        )

    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(side, "a", sa, ia, True, a_kwargs)
            n.start_soon(side, "b", sb, ib, False, b_kwargs)
    return result["a"], result["b"]


class RawPeer:
    """The far end of a stream, spoken to frame by frame (to break the handshake on purpose)."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.decoder = FrameDecoder()

    async def send(self, *msgs: Message) -> None:
        await self.stream.send_all(b"".join(encode(m) for m in msgs))

    async def receive(self) -> Message | None:
        """The next message; None at EOF."""
        while (msg := self.decoder.next_message()) is None:
            data = await self.stream.receive_some(65536)
            if not data:
                self.decoder.receive_eof()
                return None
            self.decoder.receive_data(data)
        return msg

    async def greet(self) -> bytes:
        """Read the other side's Hello and answer with ours; returns its nonce."""
        hello = await self.receive()
        assert isinstance(hello, Hello), hello
        await self.send(Hello(bytes(NONCE_SIZE)))
        return hello.nonce


def collector(into: list[Message]) -> Callable[[Message], Awaitable[None]]:
    async def handler(msg: Message) -> None:
        into.append(msg)

    return handler


async def test_handshake_exchanges_identities_and_messages_flow_with_byte_accounting() -> None:
    a, b = await pair()
    assert a.overlay == b.local.overlay and b.overlay == a.local.overlay
    assert a.outbound and not b.outbound
    got: list[Message] = []
    data = b"\x03" + bytes(7) + b"abc"
    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(a.run, collector([]))
            n.start_soon(b.run, collector(got))
            await a.send(CursorsRequest())
            await a.send(ChunkDelivery(bin=3, live=False, start=1, index=0, data=data), Priority.HISTORICAL)
            while len(got) < 2:
                await trio.sleep(0.01)
            a.close(GoodbyeCode.NORMAL, "done")
    assert got == [CursorsRequest(), ChunkDelivery(bin=3, live=False, start=1, index=0, data=data)]
    frame_bytes = len(encode(CursorsRequest())) + len(encode(got[1]))
    assert b.stats.payload_bytes_in == len(data)
    goodbye = len(encode(Goodbye(0, "done")))
    assert b.stats.protocol_bytes_in == frame_bytes - len(data) + goodbye
    assert a.stats.payload_bytes_out == len(data)
    # the Goodbye counts as protocol bytes out
    assert a.stats.protocol_bytes_out == frame_bytes - len(data) + goodbye


async def test_the_connection_answers_a_ping_itself_and_refuses_a_second_hello() -> None:
    """Connection messages never reach the handler: a Ping is answered with its Pong, a Pong is
    dropped, and a Hello on an established connection is a violation."""
    a, b = await pair()
    got_a: list[Message] = []
    got_b: list[Message] = []
    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(a.run, collector(got_a))
            n.start_soon(b.run, collector(got_b))
            await a.send(Ping(7))
            await a.send(CursorsRequest())
            while not got_b:
                await trio.sleep(0.01)
            while b.stats.messages_out < 1 or a.stats.messages_in < 1:
                await trio.sleep(0.01)
            await a.send(Hello(bytes(NONCE_SIZE)))
            ended = await b.wait_closed()
    assert got_b == [CursorsRequest()] and got_a == []
    assert a.stats.messages_in >= 1  # the Pong (and then b's Goodbye)
    assert ended.violation and "Hello on an established connection" in ended.reason


async def test_close_sends_a_goodbye_the_peer_reports() -> None:
    a, b = await pair()
    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(a.run, collector([]))
            a.close(GoodbyeCode.PRUNED, "bin over-saturated")
            d = await b.run(collector([]))
    assert d == Disconnect("remote", GoodbyeCode.PRUNED, "bin over-saturated")
    assert await a.wait_closed() == Disconnect("local", GoodbyeCode.PRUNED, "bin over-saturated")


@pytest.mark.parametrize(
    ("tweak", "code", "words"),
    [
        ({"network_id": NET + 1}, GoodbyeCode.WRONG_NETWORK, "network"),
        ({"version": PROTOCOL_VERSION + 1}, GoodbyeCode.VERSION_MISMATCH, "version"),
    ],
)
async def test_refused_handshake_reports_the_reason_on_both_sides(tweak: dict, code: int, words: str) -> None:
    ia, ib = NodeIdentity.generate(), NodeIdentity.generate()
    sa, sb = trio.testing.memory_stream_pair()
    errors: dict[str, HandshakeFailed] = {}

    async def side(name: str, stream, make_local, expect: dict) -> None:
        try:
            await handshake(stream, make_local, outbound=name == "a", **expect)
        except HandshakeFailed as exc:
            errors[name] = exc

    a_expects = {
        "network_id": tweak.get("network_id", NET),
        "version": tweak.get("version", PROTOCOL_VERSION),
    }
    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(side, "a", sa, hs(ia, **tweak), a_expects)  # a is on another network / version
            n.start_soon(side, "b", sb, hs(ib), {"network_id": NET})
    # each side refuses the other's handshake, naming the mismatch
    for name in "ab":
        assert errors[name].code == code and words in errors[name].reason, errors[name]


async def test_hello_goes_first_and_each_handshake_is_signed_over_the_other_sides_nonce() -> None:
    """On the wire: Hello, and only after the peer's Hello our Handshake, signed over its nonce."""
    ia, ib = NodeIdentity.generate(), NodeIdentity.generate()
    sa, sb = trio.testing.memory_stream_pair()
    raw = RawPeer(sa)
    mine = bytes(range(NONCE_SIZE))
    result: list[PeerConnection] = []

    async def accept() -> None:
        result.append(await handshake(sb, hs(ib), network_id=NET, outbound=False))

    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(accept)
            hello = await raw.receive()
            assert isinstance(hello, Hello) and len(hello.nonce) == NONCE_SIZE
            # no handshake before it has our nonce: nothing more is on its way
            await trio.testing.wait_all_tasks_blocked()
            assert raw.decoder.buffered_bytes == 0
            with trio.move_on_after(0.1) as silence:
                await raw.stream.receive_some(65536)
            assert silence.cancelled_caught
            await raw.send(Hello(mine))
            theirs = await raw.receive()
            assert isinstance(theirs, Handshake) and theirs.overlay == ib.overlay(NET)
            verify_handshake(theirs, network_id=NET, version=PROTOCOL_VERSION, challenge=mine)
            ours = hs(ia)(hello.nonce)
            await raw.send(ours)
    (conn,) = result
    assert conn.remote == ours and conn.local == theirs


async def test_every_connection_gets_fresh_nonces() -> None:
    seen: list[dict[str, bytes]] = [{}, {}]
    identities = (NodeIdentity.generate(), NodeIdentity.generate())
    a, b = await pair(identities=identities, challenges=seen[0])
    await pair(identities=identities, challenges=seen[1])
    nonces = [c for s in seen for c in s.values()]
    assert len(nonces) == 4 and len(set(nonces)) == 4 and {len(c) for c in nonces} == {NONCE_SIZE}
    # b holds a's handshake, signed over the nonce b sent (the challenge a's factory was given)
    assert b.remote == a.local and a.remote == b.local
    verify_handshake(b.remote, network_id=NET, version=PROTOCOL_VERSION, challenge=seen[0]["a"])


async def test_forged_handshake_is_refused() -> None:
    ia, ib = NodeIdentity.generate(), NodeIdentity.generate()
    sa, sb = trio.testing.memory_stream_pair()
    raw = RawPeer(sa)

    async def forge() -> None:
        nonce = await raw.greet()
        await raw.send(dataclasses.replace(hs(ia)(nonce), signature=bytes(64)))

    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(forge)
            with pytest.raises(HandshakeFailed, match="signature") as info:
                await handshake(sb, hs(ib), network_id=NET, outbound=False)
    assert info.value.code == GoodbyeCode.BAD_HANDSHAKE and info.value.by == "local"


async def test_a_handshake_replayed_on_another_connection_is_refused() -> None:
    """B's handshake, recorded on B's connection to A, is replayed to A on a new connection by an
    impostor: it was signed over the nonce of the first connection, so A refuses it."""
    ia, ib = NodeIdentity.generate(), NodeIdentity.generate()
    challenges: dict[str, bytes] = {}
    a, _ = await pair(identities=(ia, ib), challenges=challenges)
    recorded = a.remote  # B's handshake, valid on that connection
    verify_handshake(recorded, network_id=NET, version=PROTOCOL_VERSION, challenge=challenges["b"])

    sa, sb = trio.testing.memory_stream_pair()
    impostor = RawPeer(sb)

    async def replay() -> None:
        await impostor.greet()
        await impostor.send(recorded)

    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(replay)
            with pytest.raises(HandshakeFailed, match="bad handshake signature") as info:
                await handshake(sa, hs(ia), network_id=NET, outbound=False)
        assert info.value.code == GoodbyeCode.BAD_HANDSHAKE and info.value.by == "local"
        # the refusal reached the impostor, after A's own handshake (signed over its nonce)
        assert isinstance(await impostor.receive(), Handshake)
        bye = await impostor.receive()
        assert isinstance(bye, Goodbye) and bye.code == GoodbyeCode.BAD_HANDSHAKE
        assert "bad handshake signature" in bye.reason
        assert await impostor.receive() is None


async def test_connecting_to_ourselves_is_refused() -> None:
    me = NodeIdentity.generate()
    sa, sb = trio.testing.memory_stream_pair()
    errors: list[HandshakeFailed] = []

    async def side(stream, outbound: bool) -> None:
        with pytest.raises(HandshakeFailed) as info:
            await handshake(stream, hs(me), network_id=NET, outbound=outbound)
        errors.append(info.value)

    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(side, sa, True)
            n.start_soon(side, sb, False)
    assert [(e.code, e.reason) for e in errors] == [
        (GoodbyeCode.DUPLICATE_CONNECTION, "connected to ourselves")
    ] * 2


@pytest.mark.parametrize(
    ("first", "expected"),
    [
        (CursorsRequest(), "expected Hello, got CursorsRequest"),
        (Ping(1), "expected Hello, got Ping"),
    ],
    ids=["CursorsRequest", "Ping"],
)
async def test_a_first_message_that_is_not_hello_is_a_violation(first: Message, expected: str) -> None:
    sa, sb = trio.testing.memory_stream_pair()
    raw = RawPeer(sa)
    with trio.fail_after(5):
        await raw.send(first)
        with pytest.raises(HandshakeFailed, match=expected) as info:
            await handshake(sb, hs(NodeIdentity.generate()), network_id=NET, outbound=False)
        assert info.value.code == GoodbyeCode.PROTOCOL_ERROR and info.value.by == "local"
        # the refusal reached the other end
        assert isinstance(await raw.receive(), Hello)  # ours, sent while reading theirs
        assert await raw.receive() == Goodbye(GoodbyeCode.PROTOCOL_ERROR, f"bad handshake: {expected}")
        assert await raw.receive() is None


async def test_a_version_1_peer_that_starts_with_its_handshake_is_told_the_versions() -> None:
    """Version 1 had no Hello: such a peer's first frame is its Handshake."""
    sa, sb = trio.testing.memory_stream_pair()
    raw = RawPeer(sa)
    expected = (
        "peer sent a Handshake without a Hello first: "
        f"it speaks protocol version 1, this node speaks {PROTOCOL_VERSION}"
    )
    with trio.fail_after(5):
        await raw.send(hs(NodeIdentity.generate(), version=1)(bytes(NONCE_SIZE)))
        with pytest.raises(HandshakeFailed) as info:
            await handshake(sb, hs(NodeIdentity.generate()), network_id=NET, outbound=False)
        assert (info.value.code, info.value.reason, info.value.by) == (
            GoodbyeCode.VERSION_MISMATCH,
            expected,
            "local",
        )
        assert isinstance(await raw.receive(), Hello)
        assert await raw.receive() == Goodbye(GoodbyeCode.VERSION_MISMATCH, expected)
        assert await raw.receive() is None


async def test_a_second_hello_instead_of_the_handshake_is_a_violation() -> None:
    sa, sb = trio.testing.memory_stream_pair()
    raw = RawPeer(sa)

    async def twice() -> None:
        await raw.greet()
        await raw.send(Hello(b"\x01" * NONCE_SIZE))

    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(twice)
            with pytest.raises(HandshakeFailed, match="expected Handshake, got Hello") as info:
                await handshake(sb, hs(NodeIdentity.generate()), network_id=NET, outbound=False)
    assert info.value.code == GoodbyeCode.PROTOCOL_ERROR


@pytest.mark.parametrize("greet", [False, True], ids=["instead-of-hello", "after-hello"])
async def test_a_goodbye_during_the_handshake_is_the_peers_refusal(greet: bool) -> None:
    sa, sb = trio.testing.memory_stream_pair()
    raw = RawPeer(sa)

    async def refuse() -> None:
        if greet:
            await raw.greet()
        await raw.send(Goodbye(GoodbyeCode.OVERLOADED, "too many peers"))

    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(refuse)
            with pytest.raises(HandshakeFailed, match="peer refused the handshake: too many peers") as info:
                await handshake(sb, hs(NodeIdentity.generate()), network_id=NET, outbound=False)
    assert info.value.code == GoodbyeCode.OVERLOADED and info.value.by == "remote"


async def test_a_peer_that_never_sends_its_handshake_times_out() -> None:
    sa, sb = trio.testing.memory_stream_pair()
    raw = RawPeer(sa)
    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(raw.greet)  # Hello, then silence
            with pytest.raises(HandshakeFailed, match=r"no handshake within 0\.2s") as info:
                await handshake(sb, hs(NodeIdentity.generate()), network_id=NET, outbound=False, timeout=0.2)
    assert info.value.code == GoodbyeCode.BAD_HANDSHAKE and info.value.by == "local"


async def test_garbage_after_the_handshake_drops_the_peer_with_a_goodbye() -> None:
    a, b = await pair()
    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(a._stream.send_all, b"\x00\x00\x00\x05\xee....")  # unknown type 0xee
            d = await b.run(collector([]))
    assert d.violation and d.by == "local" and "0xee" in d.reason
    dec = FrameDecoder()
    dec.receive_data(await a._stream.receive_some(65536))
    bye = dec.next_message()
    assert isinstance(bye, Goodbye) and bye.code == GoodbyeCode.PROTOCOL_ERROR and "0xee" in bye.reason


async def test_handler_violation_closes_with_its_code() -> None:
    a, b = await pair()

    async def strict(msg: Message) -> None:
        raise RemoteProtocolError("chunk data does not match", GoodbyeCode.INVALID_CHUNK)

    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(a.send, RetrieveFailure(9))
            n.start_soon(b.run, strict)
            d = await a.run(collector([]))
    assert d == Disconnect("remote", GoodbyeCode.INVALID_CHUNK, "chunk data does not match")


async def test_outbox_sends_most_urgent_first() -> None:
    a, b = await pair()
    got: list[Message] = []
    a.send_nowait(RetrieveFailure(3), Priority.HISTORICAL)
    a.send_nowait(RetrieveFailure(2), Priority.LIVE)
    a.send_nowait(RetrieveFailure(1), Priority.RETRIEVAL)
    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(a.run, collector([]))
            n.start_soon(b.run, collector(got))
            while len(got) < 3:
                await trio.sleep(0.01)
            n.cancel_scope.cancel()
    assert got == [RetrieveFailure(1), RetrieveFailure(2), RetrieveFailure(3)]


async def test_a_peer_that_does_not_read_makes_senders_wait() -> None:
    a, _ = await pair(a_kwargs={"outbox_capacity": 4}, stream_pair=trio.testing.lockstep_stream_pair)
    sent = 0

    async def producer() -> None:
        nonlocal sent
        while True:
            await a.send(Pong(sent), Priority.HISTORICAL)
            sent += 1

    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(a.run, collector([]))
            n.start_soon(producer)
            await trio.testing.wait_all_tasks_blocked()
            # b never reads: one coalesced write is stuck in send_all, the outbox is full again and
            # the producer waits instead of queueing more
            stuck = sent
            assert a.statistics().outbox.producers_waiting == 1
            assert a.statistics().outbox.queued["historical"] == 4
            await trio.sleep(0.2)
            assert sent == stuck < 4 + 4 + 2
            n.cancel_scope.cancel()


async def test_retrieve_requests_match_answers_and_reject_unknown_ids() -> None:
    a, b = await pair()
    table = RequestTable()

    async def a_handler(msg: Message) -> None:
        if isinstance(msg, RetrieveDelivery):
            table.on_delivery(msg)
        elif isinstance(msg, RetrieveFailure):
            table.on_failure(msg)

    async def b_handler(msg: Message) -> None:
        assert isinstance(msg, RetrieveRequest)
        if msg.address == bytes(32):
            b.send_nowait(RetrieveDelivery(msg.request_id, bytes(8)))
        else:
            b.send_nowait(RetrieveFailure(msg.request_id, "not found"))

    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(a.run, a_handler)
            n.start_soon(b.run, b_handler)
            assert await table.retrieve(a, bytes(32), hop_limit=0, timeout=2) == bytes(8)
            with pytest.raises(RetrieveFailed, match="not found"):
                await table.retrieve(a, b"\x01" * 32, hop_limit=0, timeout=2)
            assert len(table) == 0
            # an answer to an ID never issued is a violation
            with pytest.raises(RemoteProtocolError, match="never sent"):
                table.on_delivery(RetrieveDelivery(99, bytes(8)))
            # a late answer (ID issued, request finished) is ignored
            table.on_delivery(RetrieveDelivery(1, bytes(8)))
            assert table.late == 1
            n.cancel_scope.cancel()


async def test_ping_measures_a_round_trip_and_ignores_pongs_it_did_not_ask_for() -> None:
    a, b = await pair()
    got_a: list[Message] = []
    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(a.run, collector(got_a))
            n.start_soon(b.run, collector([]))
            rtts = [await a.ping(2) for _ in range(3)]
            await b.send(Pong(12345))  # a Pong no Ping of a's asked for
            while a.stats.messages_in < 4:
                await trio.sleep(0.01)
            assert await b.ping(2) > 0  # either side may ping
            n.cancel_scope.cancel()
    assert all(0 < rtt < 2 for rtt in rtts)
    assert got_a == [] and a._pings.sent == 3 and a._pings.ignored == 1 and len(a._pings) == 0
    assert a.stats.messages_out >= 3 and b.stats.messages_in >= 3  # three Pings went out


async def test_a_ping_without_answer_times_out_and_one_cut_short_by_closing_fails() -> None:
    a, _b = await pair()  # b never runs: nothing answers a's Pings
    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(a.run, collector([]))
            with pytest.raises(PingTimeout, match=r"no Pong within 0\.2 s"):
                await a.ping(0.2)
            outcome: list[BaseException] = []

            async def ping() -> None:
                try:
                    await a.ping(3)
                except trio.ClosedResourceError as exc:
                    outcome.append(exc)

            n.start_soon(ping)
            await trio.sleep(0.05)
            a.close(GoodbyeCode.NORMAL, "bye")
    assert len(outcome) == 1 and len(a._pings) == 0
    with pytest.raises(trio.ClosedResourceError):
        await a.ping(1)  # a closed connection sends nothing more
