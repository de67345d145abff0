"""The secure channel: what a wire-tapper, a byte flipper and a splicing relay get out of it.

A relay written here sits on the TCP path between two nodes: it records what passes, flips a
byte, or (the man in the middle) terminates TLS on both sides with a certificate of its own and
passes the protocol's frames through in the clear. The first two run between real `swarm node`
processes (the test's own event loop runs the relay; blocking calls go to a thread).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from streamer.channel import TlsCredentials, open_channel
from swarm.testing import NodeProcess, node_config, poll, preload, random_chunks, start_node, wait_for

pytestmark = pytest.mark.process

CHUNKS = random_chunks(120, seed=501)


class Relay:
    """Forwards each connection it accepts to `target_port`, recording (or changing) the bytes."""

    def __init__(self, target_port: int, *, flip_at: int | None = None) -> None:
        self.target_port = target_port
        self.flip_at = flip_at  # offset in the first connection's bytes towards the dialler
        self.captured = bytearray()  # every byte that passed, both ways
        self.connections = 0
        self.flipped = False

    async def handle(self, dialler: trio.SocketStream) -> None:
        self.connections += 1
        towards_dialler_may_flip = self.connections == 1
        target = await trio.open_tcp_stream("127.0.0.1", self.target_port)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._pump, dialler, target, False, nursery.cancel_scope)
            nursery.start_soon(self._pump, target, dialler, towards_dialler_may_flip, nursery.cancel_scope)

    async def _pump(
        self, source: trio.abc.Stream, sink: trio.abc.Stream, may_flip: bool, scope: trio.CancelScope
    ) -> None:
        seen = 0
        try:
            while data := await source.receive_some(65536):
                at = (self.flip_at or 0) - seen
                if may_flip and self.flip_at is not None and not self.flipped and at < len(data):
                    data = data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]
                    self.flipped = True
                seen += len(data)
                self.captured += data
                await sink.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        scope.cancel()


@asynccontextmanager
async def serving(handler: Any) -> AsyncIterator[int]:
    """Serve `handler` on a free loopback port for the block; yields the port."""
    async with trio.open_nursery() as nursery:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        nursery.start_soon(trio.serve_listeners, handler, listeners)
        yield listeners[0].socket.getsockname()[1]
        nursery.cancel_scope.cancel()


async def sync_through(tmp_path: Path, relay: Relay) -> dict[str, Any]:
    """A (holding CHUNKS) and B, B dialling A through the relay; B's /sync once B holds them all
    (checked chunk by chunk against A's data)."""
    a = NodeProcess(tmp_path / "a")
    await trio.to_thread.run_sync(preload, tmp_path / "a", CHUNKS)
    with await trio.to_thread.run_sync(a.start):
        relay.target_port = a.p2p[1]
        async with serving(relay.handle) as port:
            b = NodeProcess(tmp_path / "b", peers=[("127.0.0.1", port)])
            with await trio.to_thread.run_sync(b.start):

                def synced() -> bool:
                    doc = b.sync()
                    return bool(doc["chunks"] >= len(CHUNKS) and doc["fully_synced"])

                await trio.to_thread.run_sync(lambda: poll(synced, timeout=60))
                for chunk in CHUNKS:
                    response = await trio.to_thread.run_sync(b.get, f"/chunks/{chunk.address.hex()}")
                    assert response.content == chunk.data
                return b.sync()


async def test_a_wiretap_between_two_nodes_sees_no_chunk_data(tmp_path: Path) -> None:
    relay = Relay(0)
    await sync_through(tmp_path, relay)
    assert len(relay.captured) > len(CHUNKS) * 4096, "the chunks went through the relay"
    captured = bytes(relay.captured)
    assert [c for c in CHUNKS if c.payload[1000:1064] in captured] == []


async def test_a_byte_changed_in_flight_breaks_the_connection_and_nothing_wrong_is_stored(
    tmp_path: Path,
) -> None:
    relay = Relay(0, flip_at=200_000)  # among the chunk deliveries
    doc = await sync_through(tmp_path, relay)  # after B has dialled A again
    assert relay.flipped
    broken = doc["disconnected"][-1]  # the oldest: the first connection
    assert "connection lost" in broken["reason"] and not broken["violation"], broken
    assert doc["totals"]["invalid"] == 0, "the changed byte never reached the chunk checks"


async def _forward(source: trio.abc.Stream, sink: trio.abc.Stream, scope: trio.CancelScope) -> None:
    try:
        while data := await source.receive_some(65536):
            await sink.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    scope.cancel()


async def test_a_relay_that_terminates_tls_on_both_sides_cannot_splice_them(tmp_path: Path) -> None:
    """The relay holds TLS with each node under its own certificate and passes the frames on: each
    node's handshake is signed over the channel it saw, so each refuses the other's."""
    relay_tls = TlsCredentials()

    async def splice(dialler: trio.SocketStream, target_port: int) -> None:
        inner, _ = await open_channel(dialler, relay_tls, server_side=True)
        outer, _ = await open_channel(
            await trio.open_tcp_stream("127.0.0.1", target_port), relay_tls, server_side=False
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_forward, inner, outer, nursery.cancel_scope)
            nursery.start_soon(_forward, outer, inner, nursery.cancel_scope)

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            a = await start_node(nursery, node_config(tmp_path / "a", api_port=None))
            async with serving(lambda s: splice(s, a.p2p_port)) as port:
                config = node_config(tmp_path / "b", api_port=None, peers=[("127.0.0.1", port)])
                b = await start_node(nursery, config)
                await wait_for(lambda: bool(a.sessions.handshakes_refused and b.sessions.handshakes_refused))
                assert not a.peers and not b.peers
            nursery.cancel_scope.cancel()


async def test_a_plain_node_and_a_tls_node_do_not_connect(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            tls = await start_node(nursery, node_config(tmp_path / "tls", api_port=None))
            peers = [("127.0.0.1", tls.p2p_port)]
            config = node_config(tmp_path / "plain", api_port=None, channel="plain", peers=peers)
            plain = await start_node(nursery, config)
            refused = (tls.sessions, plain.sessions)
            await wait_for(lambda: all(sessions.handshakes_refused for sessions in refused))
            assert not tls.peers and not plain.peers
            nursery.cancel_scope.cancel()
