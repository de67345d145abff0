"""The live HTTP routes of one in-process node: server-sent events, publishing, errors, /loss, /metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import trio

from chunks.ethkey import Secp256k1Key
from chunks.feeds import make_update_v2, topic_from_text, update_address
from swarm.live.config import LiveConfig
from swarm.live.follower import FollowerConfig
from swarm.testing import node_config, start_node

KEY = Secp256k1Key(b"\x0b" * 32)
TOPIC = topic_from_text("api-test")
FEED = f"/live/feeds/{KEY.owner.hex()}/{TOPIC.hex()}"
LIVE = LiveConfig(follower=FollowerConfig(lookup_timeout=0.5, probe_interval=1.0))


def update(index: int, text: str | None = None) -> bytes:
    return make_update_v2(KEY, TOPIC, index, (text or f"update {index}").encode()).data


async def read_events(
    response: httpx.Response, count: int, name: str
) -> list[tuple[str | None, dict[str, Any]]]:
    """The next ``count`` events called ``name``: (id, data)."""
    found: list[tuple[str | None, dict[str, Any]]] = []
    event, ident = "", None
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("id: "):
            ident = line[4:]
        elif line.startswith("data: ") and event == name:
            found.append((ident, json.loads(line[6:])))
            if len(found) == count:
                return found
    raise AssertionError(f"the stream ended after {len(found)} {name} events")


async def test_follow_publish_resume_and_errors(tmp_path: Path) -> None:
    with trio.fail_after(40):
        async with trio.open_nursery() as nursery:
            node = await start_node(nursery, node_config(tmp_path / "n", live=LIVE))
            base = f"http://127.0.0.1:{node.api_port}"
            async with httpx.AsyncClient(base_url=base, timeout=10) as client:
                for i in range(3):
                    response = await client.post(f"{FEED}/{i}", content=update(i))
                    assert response.status_code == 201
                    doc = response.json()
                    assert doc["reference"] == update_address(KEY.owner, TOPIC, i).hex()
                    assert (doc["index"], doc["outcome"]) == (i, "new")
                again = await client.post(f"{FEED}/1", content=update(1))
                assert (again.status_code, again.json()["outcome"]) == (201, "repeat")
                conflict = await client.post(f"{FEED}/1", content=update(1, "something else"))
                assert conflict.status_code == 409 and "two updates at index 1" in conflict.json()["message"]
                forged = await client.post(
                    f"{FEED}/3", content=make_update_v2(Secp256k1Key(b"\x0c" * 32), TOPIC, 3, b"x").data
                )
                assert forged.status_code == 400 and "invalid" in forged.json()["message"]
                assert (await client.get(f"{FEED}/next")).json() == {"latest": 2, "next": 3}
                for bad, status in (
                    (f"/live/feeds/zz/{TOPIC.hex()}", 400),
                    (f"{FEED}?mode=eager", 400),
                    (f"{FEED}?from=-1", 400),
                ):
                    response = await client.get(bad)
                    assert response.status_code == status, bad
                    assert response.json()["code"] == status

                async with client.stream("GET", FEED, params={"from": "0"}) as stream:
                    assert stream.headers["content-type"].startswith("text/event-stream")
                    got = await read_events(stream, 3, "update")
                assert [(ident, doc["index"], doc["text"], doc["via"]) for ident, doc in got] == [
                    (str(i), i, f"update {i}", "catch-up") for i in range(3)
                ]
                # an EventSource reconnecting sends the last id it got: the stream resumes after it
                async with client.stream("GET", FEED, headers={"Last-Event-ID": "1"}) as stream:
                    (first,) = await read_events(stream, 1, "update")
                assert first[1]["index"] == 2

                loss = (await client.get("/loss")).json()
                assert loss["traffic"]["published"] == 3 and loss["totals"]["equivocations"] == 1
                assert loss["rows"][0]["peer"] == "local" and loss["rows"][0]["invalid"] == 1
                # per stream (the dashboard's live table): the feed's three updates and the conflict
                (feed,) = [row for row in loss["streams"] if row["new"]]
                assert feed["stream"].startswith("feed ") and feed["new"] == 3 and feed["equivocations"] == 1
                assert feed["received"] == sum(feed[k] for k in ("new", "repeat", "not_subscribed", "invalid",
                                                                 "equivocations"))  # fmt: skip
                metrics = (await client.get("/metrics")).text
                assert 'swarm_live_loss_total{counter="equivocations",peer="local"} 1.0' in metrics
                assert 'swarm_live_messages_total{outcome="published"} 3.0' in metrics
            nursery.cancel_scope.cancel()


async def test_topic_stream_over_http(tmp_path: Path) -> None:
    with trio.fail_after(40):
        async with trio.open_nursery() as nursery:
            node = await start_node(nursery, node_config(tmp_path / "n", live=LIVE))
            base = f"http://127.0.0.1:{node.api_port}"
            async with httpx.AsyncClient(base_url=base, timeout=10) as client:
                async with client.stream("GET", "/live/topics/chat") as stream:
                    with trio.fail_after(10):
                        while not node.live.statistics().subscribers:
                            await trio.sleep(0.02)
                    posted = await client.post("/live/topics/chat", content=b"hello")
                    assert posted.status_code == 201
                    assert posted.json()["publisher"] == node.live.key.owner.hex()
                    ((_, message),) = await read_events(stream, 1, "message")
                assert (message["text"], message["status"], message["seq"]) == (
                    "hello",
                    "first",
                    posted.json()["seq"],
                )
                assert message["topic"] == topic_from_text("chat").hex()
                too_big = await client.post("/live/topics/chat", content=bytes(4097))
                assert too_big.status_code == 413
            nursery.cancel_scope.cancel()


async def test_idle_streams_stay_open_across_keepalives(tmp_path: Path, monkeypatch: Any) -> None:
    """Issue 30 item 10: the keep-alive timer once shut the topic's event generator, so an idle
    subscription ended after KEEPALIVE seconds. Here KEEPALIVE is 0.1 s: after a second of
    silence (ten keep-alives) both a topic and a feed stream still deliver."""
    from swarm.api import live

    monkeypatch.setattr(live, "KEEPALIVE", 0.1)
    with trio.fail_after(40):
        async with trio.open_nursery() as nursery:
            node = await start_node(nursery, node_config(tmp_path / "n", live=LIVE))
            base = f"http://127.0.0.1:{node.api_port}"
            async with httpx.AsyncClient(base_url=base, timeout=10) as client:
                for path in ("/live/topics/idle", FEED):
                    async with client.stream("GET", path) as stream:
                        lines = stream.aiter_lines()
                        keepalives = 0
                        with trio.fail_after(10):
                            while keepalives < 10:
                                keepalives += (await lines.__anext__()) == ": keep-alive"
                        if path == FEED:
                            posted = await client.post(f"{FEED}/0", content=update(0))
                        else:
                            posted = await client.post(path, content=b"after the silence")
                        assert posted.status_code == 201
                        name = "update" if path == FEED else "message"
                        with trio.fail_after(10):
                            while (await lines.__anext__()) != f"event: {name}":
                                pass
                            doc = json.loads((await lines.__anext__())[len("data: ") :])
                        assert doc["text"] in ("update 0", "after the silence")
            nursery.cancel_scope.cancel()
