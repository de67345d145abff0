"""A connection's messages go to the services that registered for their class (streamer/dispatch.py,
swarm/peer_wiring.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from streamer.dispatch import Dispatch
from streamer.errors import RemoteProtocolError
from streamer.messages import MESSAGE_CLASSES, ChunkDelivery, Hello, Ping, Pong
from streamer.wire import connection
from streamer.wire.declare import declared_in
from swarm.testing import node_config, start_node, wait_for


async def test_dispatch_hands_each_class_to_its_handler_and_awaits_what_it_returns() -> None:
    seen: list[Any] = []

    async def slow(msg: Any) -> None:
        await trio.sleep(0)
        seen.append(("slow", msg))

    dispatch = Dispatch()
    dispatch.handle({Ping: seen.append, Hello: slow})
    await dispatch(Ping(1))
    await dispatch(Hello(bytes(32)))
    assert seen == [Ping(1), ("slow", Hello(bytes(32)))]
    assert dispatch.handles(Ping) and not dispatch.handles(ChunkDelivery)
    with pytest.raises(ValueError, match="already handled: Ping"):
        dispatch.handle({Ping: seen.append})
    with pytest.raises(RemoteProtocolError, match="unexpected Pong"):
        await dispatch(Pong(1))


async def test_a_node_s_peer_takes_every_message_but_the_connection_s_own(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            a = await start_node(nursery, node_config(tmp_path / "a"))
            b = await start_node(nursery, node_config(tmp_path / "b", peers=[("127.0.0.1", a.p2p_port)]))
            await wait_for(lambda: a.overlay in b.peers)
            peer = b.peers[a.overlay]
            handled = {cls for cls in MESSAGE_CLASSES if peer._dispatch.handles(cls)}
            assert set(MESSAGE_CLASSES) - handled == set(declared_in(connection))
            nursery.cancel_scope.cancel()
