"""PeerConnection and the handshake, over in-memory streams (TCP is covered by the node tests)."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

import pytest
import trio
import trio.testing

from streamer.codec import FrameDecoder, encode
from streamer.connection import Disconnect, HandshakeFailed, PeerConnection, handshake
from streamer.errors import RemoteProtocolError
from streamer.identity import NodeIdentity, make_handshake
from streamer.messages import (
    PROTOCOL_VERSION,
    ChunkDelivery,
    CursorsRequest,
    Goodbye,
    GoodbyeCode,
    Handshake,
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


def hs(identity: NodeIdentity, network_id: int = NET, version: int = PROTOCOL_VERSION, port: int = 1):
    return make_handshake(
        identity, version=version, network_id=network_id, epoch=5, host="127.0.0.1", port=port
    )


async def pair(
    a_kwargs: dict | None = None, b_kwargs: dict | None = None, stream_pair=trio.testing.memory_stream_pair
) -> tuple[PeerConnection, PeerConnection]:
    ia, ib = NodeIdentity.generate(), NodeIdentity.generate()
    sa, sb = stream_pair()
    result: dict[str, PeerConnection] = {}

    async def side(name: str, stream, local, outbound: bool, kwargs: dict | None) -> None:
        result[name] = await handshake(stream, local, network_id=NET, outbound=outbound, **(kwargs or {}))

    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(side, "a", sa, hs(ia), True, a_kwargs)
            n.start_soon(side, "b", sb, hs(ib), False, b_kwargs)
    return result["a"], result["b"]


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
            await a.send(Ping(1))
            await a.send(ChunkDelivery(bin=3, live=False, start=1, index=0, data=data), Priority.HISTORICAL)
            while len(got) < 2:
                await trio.sleep(0.01)
            a.close(GoodbyeCode.NORMAL, "done")
    assert got == [Ping(1), ChunkDelivery(bin=3, live=False, start=1, index=0, data=data)]
    frame_bytes = len(encode(Ping(1))) + len(encode(got[1]))
    assert b.stats.payload_bytes_in == len(data)
    goodbye = len(encode(Goodbye(0, "done")))
    assert b.stats.protocol_bytes_in == frame_bytes - len(data) + goodbye
    assert a.stats.payload_bytes_out == len(data)
    # the Goodbye counts as protocol bytes out
    assert a.stats.protocol_bytes_out == frame_bytes - len(data) + goodbye


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

    async def side(name: str, stream, local, expect: dict) -> None:
        try:
            await handshake(stream, local, outbound=name == "a", **expect)
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


async def test_forged_handshake_is_refused() -> None:
    ia, ib = NodeIdentity.generate(), NodeIdentity.generate()
    forged = dataclasses.replace(hs(ia), signature=bytes(64))
    sa, sb = trio.testing.memory_stream_pair()
    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(sa.send_all, encode(forged))
            with pytest.raises(HandshakeFailed, match="signature") as info:
                await handshake(sb, hs(ib), network_id=NET, outbound=False)
    assert info.value.code == GoodbyeCode.BAD_HANDSHAKE


async def test_a_message_before_the_handshake_is_a_violation() -> None:
    sa, sb = trio.testing.memory_stream_pair()
    with trio.fail_after(5):
        await sa.send_all(encode(CursorsRequest()))
        with pytest.raises(HandshakeFailed, match="expected a handshake first"):
            await handshake(sb, hs(NodeIdentity.generate()), network_id=NET, outbound=False)
        # the refusal reached the other end
        dec = FrameDecoder()
        dec.receive_data(await sa.receive_some(65536))
        assert isinstance(dec.next_message(), Handshake)  # ours, sent while reading theirs
        assert dec.next_message() == Goodbye(
            GoodbyeCode.PROTOCOL_ERROR, "bad handshake: expected a handshake first, got CursorsRequest"
        )


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
            n.start_soon(a.send, Ping(9))
            n.start_soon(b.run, strict)
            d = await a.run(collector([]))
    assert d == Disconnect("remote", GoodbyeCode.INVALID_CHUNK, "chunk data does not match")


async def test_outbox_sends_most_urgent_first() -> None:
    a, b = await pair()
    got: list[Message] = []
    a.send_nowait(Ping(3), Priority.HISTORICAL)
    a.send_nowait(Ping(2), Priority.LIVE)
    a.send_nowait(Ping(1), Priority.RETRIEVAL)
    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            n.start_soon(a.run, collector([]))
            n.start_soon(b.run, collector(got))
            while len(got) < 3:
                await trio.sleep(0.01)
            n.cancel_scope.cancel()
    assert got == [Ping(1), Ping(2), Ping(3)]


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
            assert a.statistics()["outbox"]["producers_waiting"] == 1
            assert a.statistics()["outbox"]["queued"]["historical"] == 4
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
