"""TlsStream: what it hands back per read, how it ends, and that it speaks with trio's SSLStream.

Over real loopback TCP sockets (and trio's in-memory stream pairs where a test needs a transport
that holds nothing): the same TLS 1.3 contexts the node uses (`TlsCredentials`).
"""

from __future__ import annotations

import os
import ssl

import pytest
import trio
import trio.testing

from streamer.channel import TlsCredentials
from streamer.tls import TlsStream

CREDENTIALS = TlsCredentials()


async def _tcp_pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    client = await trio.open_tcp_stream("127.0.0.1", port)
    server = await listeners[0].accept()
    await listeners[0].aclose()
    return client, server


async def _handshaken(
    client_transport: trio.abc.Stream, server_transport: trio.abc.Stream, *, client_ours: bool = True
) -> tuple[trio.abc.Stream, trio.abc.Stream]:
    client: TlsStream | trio.SSLStream[trio.abc.Stream]
    if client_ours:
        client = TlsStream(client_transport, CREDENTIALS.client, server_side=False)
    else:
        client = trio.SSLStream(client_transport, CREDENTIALS.client, server_side=False)
    server = TlsStream(server_transport, CREDENTIALS.server, server_side=True)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.do_handshake)
        nursery.start_soon(server.do_handshake)
    return client, server


async def _receive_exactly(stream: trio.abc.Stream, size: int) -> tuple[bytes, list[int]]:
    got = bytearray()
    reads = []
    while len(got) < size:
        data = await stream.receive_some()
        assert data, "EOF before all the data came"
        reads.append(len(data))
        got += data
    return bytes(got), reads


async def test_one_read_returns_every_record_that_has_arrived() -> None:
    client_transport, server_transport = await _tcp_pair()
    client, server = await _handshaken(client_transport, server_transport)
    payload = os.urandom(100_000)  # 7 records of at most 16 KiB
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.send_all, payload)
        await trio.sleep(0.05)  # what the socket buffers hold has arrived
        got, reads = await _receive_exactly(server, len(payload))
    assert got == payload
    assert reads[0] > 16384  # trio's SSLStream returns one record (16 KiB at most) per call
    await client.aclose()
    await server.aclose()


async def test_max_bytes_is_respected_and_the_rest_kept() -> None:
    client_transport, server_transport = await _tcp_pair()
    client, server = await _handshaken(client_transport, server_transport)
    payload = os.urandom(50_000)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.send_all, payload)
        await trio.sleep(0.05)
        first = await server.receive_some(1000)
        assert len(first) == 1000
        rest, _ = await _receive_exactly(server, len(payload) - 1000)
    assert first + rest == payload


async def test_both_ways_at_once_with_trio_sslstream_on_the_other_side() -> None:
    """Interoperates with trio's SSLStream (dialler), both directions concurrently."""
    client_transport, server_transport = await _tcp_pair()
    client, server = await _handshaken(client_transport, server_transport, client_ours=False)
    up, down = os.urandom(700_000), os.urandom(900_000)
    results: dict[str, bytes] = {}

    async def send_in_pieces(stream: trio.abc.Stream, data: bytes) -> None:
        for at in range(0, len(data), 70_000):
            await stream.send_all(data[at : at + 70_000])

    async def receive(name: str, stream: trio.abc.Stream, size: int) -> None:
        results[name], _ = await _receive_exactly(stream, size)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send_in_pieces, client, up)
        nursery.start_soon(send_in_pieces, server, down)
        nursery.start_soon(receive, "at server", server, len(up))
        nursery.start_soon(receive, "at client", client, len(down))
    assert results == {"at server": up, "at client": down}


async def test_a_handshake_over_a_lockstep_pipe_does_not_deadlock() -> None:
    """The listener's session tickets wait for its first send, as SSLStream's do."""
    client_transport, server_transport = trio.testing.lockstep_stream_pair()
    with trio.fail_after(5):
        client, server = await _handshaken(client_transport, server_transport)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.send_all, b"hello")
            assert await server.receive_some() == b"hello"
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.send_all, b"hi")
            assert await client.receive_some() == b"hi"


async def test_close_notify_reads_as_eof_and_a_closed_stream_refuses() -> None:
    client_transport, server_transport = await _tcp_pair()
    client, server = await _handshaken(client_transport, server_transport)
    await client.send_all(b"last words")
    await client.aclose()
    got, _ = await _receive_exactly(server, len(b"last words"))
    assert got == b"last words"
    assert await server.receive_some() == b""
    with pytest.raises(trio.ClosedResourceError):
        await client.send_all(b"more")
    with pytest.raises(trio.ClosedResourceError):
        await client.receive_some()
    await client.aclose()  # idempotent


async def test_transport_ending_without_close_notify_breaks_the_stream() -> None:
    client_transport, server_transport = await _tcp_pair()
    _, server = await _handshaken(client_transport, server_transport)
    await client_transport.aclose()  # under TLS: no close_notify
    with pytest.raises(trio.BrokenResourceError) as caught:
        await server.receive_some()
    assert isinstance(caught.value.__cause__, ssl.SSLError)
    with pytest.raises(trio.BrokenResourceError):
        await server.send_all(b"x")


async def test_garbage_instead_of_a_handshake_breaks_it() -> None:
    client_transport, server_transport = await _tcp_pair()
    server = TlsStream(server_transport, CREDENTIALS.server, server_side=True)
    await client_transport.send_all(b"GET / HTTP/1.1\r\n\r\n" * 10)
    with pytest.raises(trio.BrokenResourceError):
        await server.do_handshake()
    await client_transport.aclose()


class _Flipping(trio.abc.Stream):
    """A transport that, once armed, flips the last byte of what it sends (a forged record)."""

    def __init__(self, inner: trio.abc.Stream) -> None:
        self.inner = inner
        self.armed = False

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        raw = bytes(data)
        if self.armed:
            raw = raw[:-1] + bytes([raw[-1] ^ 1])
        await self.inner.send_all(raw)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_the_good_records_before_a_forged_one_are_read_then_the_stream_breaks() -> None:
    client_transport, server_transport = trio.testing.memory_stream_pair()
    flipping = _Flipping(client_transport)
    client, server = await _handshaken(flipping, server_transport)
    await client.send_all(b"good")
    flipping.armed = True
    await client.send_all(b"evil")  # its authentication tag no longer matches
    assert await server.receive_some() == b"good"  # both records came in one transport read
    with pytest.raises(trio.BrokenResourceError) as caught:
        await server.receive_some()
    assert isinstance(caught.value.__cause__, ssl.SSLError)
