"""Live propagation between real `swarm node` processes, followed with the real command line.

One swarm per test, static peering (``--no-gossip``) so that the paths are known:

    A (publisher) -- R1 -- F (follower)
           \\------- R2 --/

The feed test runs the story of the issue's "done when" list in one go: updates reach the
follower in order and exactly once although every one arrives twice (a repeat, counted, not
shown); a hostile peer's forged and malformed pushes drop nothing but themselves and are counted;
a relay SIGKILLed mid-stream leaves a gap that is filled from the swarm; a follower whose node was
down catches up from its last index when the node is back. The topic test restarts a publisher:
its subscriber sees a cycle, not a loss.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from chunks.ethkey import Secp256k1Key, save_key_file
from chunks.feeds import make_update_v2, topic_from_text
from streamer.messages import FeedPush, TopicPush
from swarm.live.messages import make_topic_push
from swarm.testing import NodeProcess, poll
from tests.test_hostile_peer import HostilePeer

pytestmark = pytest.mark.process

PLAIN = ["--channel", "plain"]  # the hostile peer speaks the protocol's frames in the clear
STATIC = ["--no-gossip", *PLAIN]
TOPIC_TEXT = "live-process-test"
TOPIC = topic_from_text(TOPIC_TEXT)
WAIT = 45.0


class Cli:
    """A `swarm` command running in the background, its stdout lines collected as they come."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "swarm", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.errors: list[str] = []
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.errors), daemon=True).start()

    @staticmethod
    def _read(pipe: Any, into: list[str]) -> None:
        for line in pipe:
            into.append(line.rstrip("\n"))

    def events(self, name: str) -> list[dict[str, Any]]:
        docs = [json.loads(line) for line in list(self.lines) if line.startswith("{")]
        return [doc for doc in docs if doc["event"] == name]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextmanager
def cli(*args: str) -> Iterator[Cli]:
    process = Cli(*args)
    try:
        yield process
    finally:
        process.stop()


def node(data_dir: Path, *peers: NodeProcess, ports: tuple[int, int] | None = None) -> NodeProcess:
    """A node process; ``ports`` (p2p, api) to come back where it was after a kill."""
    extra = list(STATIC)
    if ports is not None:
        extra += ["--port", str(ports[0]), "--api-port", str(ports[1])]
    return NodeProcess(data_dir, peers=[p.p2p for p in peers], extra=extra)


def ports_of(n: NodeProcess) -> tuple[int, int]:
    return n.p2p[1], int(n.info["api_port"])  # type: ignore[call-overload]


def connected(n: NodeProcess) -> int:
    return len(n.get("/sync").json()["peers"])


def loss(n: NodeProcess) -> dict[str, Any]:
    doc: dict[str, Any] = n.get("/loss").json()
    return doc


def row(n: NodeProcess, peer: str) -> dict[str, Any]:
    return next((r for r in loss(n)["rows"] if r["peer"] == peer), {"invalid": 0, "repeat": 0})


def publish(n: NodeProcess, key: Secp256k1Key, index: int) -> dict[str, Any]:
    data = make_update_v2(key, TOPIC, index, f"update {index}".encode()).data
    response = httpx.post(
        f"{n.api}/live/feeds/{key.owner.hex()}/{TOPIC.hex()}/{index}", content=data, timeout=10
    )
    assert response.status_code == 201, response.text
    doc: dict[str, Any] = response.json()
    return doc


def shown(follower: Cli) -> list[int]:
    return [doc["index"] for doc in follower.events("update")]


def waited(condition: Any, nodes: list[NodeProcess], what: str) -> None:
    """poll(condition); on a timeout, print what the nodes say (for the failure report)."""
    try:
        poll(condition, timeout=WAIT)
    except TimeoutError:
        for n in nodes:
            if n.proc is not None and n.proc.poll() is None:
                doc = loss(n)
                print(
                    n.data_dir.name,
                    n.overlay[:12],
                    doc["interest"],
                    doc["traffic"],
                    [r["peer"][:12] for r in doc["rows"]],
                )
                print("  peers:", [p["overlay"][:12] for p in n.get("/sync").json()["peers"]])
            print((n.data_dir / "node.log").read_text(errors="replace")[-1500:])
        raise AssertionError(f"timed out waiting for {what}") from None


def no_traceback(*nodes: NodeProcess) -> None:
    for n in nodes:
        log = (n.data_dir / "node.log").read_text(errors="replace")
        assert "Traceback" not in log, log[-3000:]


async def attack(port: int, key: Secp256k1Key) -> tuple[str, bool]:
    """From a hostile peer: a forged update, a malformed one, and a badly signed topic message on
    a topic nobody wants. Returns its overlay and whether the target still answers it afterwards."""
    forger = Secp256k1Key(b"\x66" * 32)
    hostile = await HostilePeer.connect(port)
    async with hostile.stream:
        await hostile.handshake()
        bad_topic = topic_from_text("hostile")
        forged = make_update_v2(forger, TOPIC, 5, b"forged").data  # claims `key`'s feed
        await hostile.send(FeedPush(key.owner, TOPIC, 5, forged))
        await hostile.send(FeedPush(key.owner, TOPIC, 5, b"\x00" * 40))  # not a chunk at all
        real = make_topic_push(forger, bad_topic, (1 << 35) | 1, 0, 1, b"x")
        await hostile.send(TopicPush(bad_topic, key.owner, real.seq, 0, 1, real.signature, b"x"))
        seen = await hostile.ping(77)  # the target read and judged all of it
        return hostile.overlay.hex(), not any(type(m).__name__ == "Goodbye" for m in seen)


def test_feed_followed_across_relays_repeats_forgeries_a_killed_relay_and_a_node_down(tmp_path: Path) -> None:
    key = Secp256k1Key.generate()
    key_file = tmp_path / "owner.key"
    save_key_file(key, key_file)
    owner = key.owner.hex()
    a = node(tmp_path / "a").start()
    r1, r2 = node(tmp_path / "r1", a).start(), node(tmp_path / "r2", a).start()
    f = node(tmp_path / "f", r1, r2).start()
    nodes = [a, r1, r2, f]
    try:
        poll(lambda: (connected(a), connected(f)) == (2, 2), timeout=WAIT)
        with cli("feed", "follow", owner, TOPIC_TEXT, "--from", "0", "--json", "--api", f.api) as follower:
            poll(lambda: bool(follower.events("start")), timeout=WAIT)
            poll(lambda: loss(a)["interest"]["relayed"] == 1, timeout=WAIT)  # interest reached A

            # 1. in order, exactly once, though updates come through two relays
            command = ["feed", "publish", TOPIC_TEXT, "update 0", "--key", str(key_file), "--api", a.api]
            published = subprocess.run(
                [sys.executable, "-m", "swarm", *command],
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert published.returncode == 0, published.stderr
            assert "pushed to 2 peers" in published.stdout
            for i in range(1, 5):
                assert publish(a, key, i)["pushed"] == 2
            poll(lambda: shown(follower) == [0, 1, 2, 3, 4], timeout=WAIT)
            # each update comes once through each relay (unless F passed it to a relay first): the
            # second copy is a repeat, counted and not shown
            poll(lambda: loss(f)["totals"]["repeat"] >= 1, timeout=WAIT)
            traffic = loss(f)["traffic"]
            assert traffic["accepted"] == 5 and traffic["received"] == 5 + loss(f)["totals"]["repeat"]
            assert [doc["text"] for doc in follower.events("update")] == [f"update {i}" for i in range(5)]

            # 2. forged and malformed pushes drop only themselves, and are counted
            hostile, still_connected = trio.run(attack, f.p2p[1], key)
            assert still_connected
            assert (row(f, hostile)["invalid"], row(f, hostile)["not_subscribed"]) == (2, 1)
            publish(a, key, 5)
            poll(lambda: shown(follower)[-1:] == [5], timeout=WAIT)
            assert follower.events("update")[-1]["text"] == "update 5"  # the forged 5 was not taken

            # 3. a relay killed mid-stream: R2 first (no gap: R1 still carries), then R1 after update 6
            r2.kill()
            publish(a, key, 6)
            poll(lambda: shown(follower)[-1:] == [6], timeout=WAIT)
            r1_ports = ports_of(r1)
            r1.kill()
            for i in (7, 8):  # nobody carries these to F
                assert publish(a, key, i)["pushed"] == 0
            r1 = nodes[1] = node(tmp_path / "r1", a, ports=r1_ports).start()
            poll(lambda: connected(f) == 1 and connected(r1) == 2, timeout=WAIT)
            waited(lambda: loss(a)["interest"]["relayed"] == 1, nodes, "interest through the restarted R1")
            publish(a, key, 9)
            poll(lambda: shown(follower) == list(range(10)), timeout=WAIT)
            vias = {doc["index"]: doc["via"] for doc in follower.events("update")}
            assert vias[7] in ("fill", "probe") and vias[9] == "push"
            assert loss(f)["totals"]["msg_loss"] == 0

            # 4. the follower's node goes down; what was published meanwhile is caught up
            f_ports = ports_of(f)
            f.kill()
            for i in (10, 11):
                publish(a, key, i)
            f = nodes[3] = node(tmp_path / "f", r1, ports=f_ports).start()
            poll(lambda: shown(follower)[-2:] == [10, 11], timeout=WAIT)
            poll(lambda: loss(a)["interest"]["relayed"] == 1, timeout=WAIT)
            publish(a, key, 12)
            poll(lambda: shown(follower)[-1:] == [12], timeout=WAIT)
            assert shown(follower) == list(range(13))  # never a repeat, never out of order
        for n in nodes:
            if n.proc is not None and n.proc.poll() is None:
                assert n.stop() == 0
        no_traceback(a, r1, f)
    finally:
        for n in nodes:
            n.kill()


def test_a_topic_publisher_restart_is_a_cycle_not_a_loss(tmp_path: Path) -> None:
    a = node(tmp_path / "a").start()
    f = node(tmp_path / "f", a).start()
    try:
        poll(lambda: connected(f) == 1, timeout=WAIT)
        with cli("topic", "subscribe", TOPIC_TEXT, "--json", "--api", f.api) as subscriber:
            poll(lambda: loss(a)["interest"]["relayed"] == 1, timeout=WAIT)
            for text in ("one", "two"):
                out = subprocess.run(
                    [sys.executable, "-m", "swarm", "topic", "publish", TOPIC_TEXT, text, "--api", a.api],
                    capture_output=True,
                    text=True,
                    timeout=30,
                )
                assert out.returncode == 0, out.stderr
            poll(lambda: len(subscriber.events("message")) == 2, timeout=WAIT)
            ports = ports_of(a)
            assert a.stop() == 0  # a clean restart: the publisher's numbering is gone
            a = node(tmp_path / "a", ports=ports).start()
            poll(lambda: connected(a) == 1 and loss(a)["interest"]["relayed"] == 1, timeout=WAIT)
            response = httpx.post(f"{a.api}/live/topics/{TOPIC_TEXT}", content=b"three", timeout=10)
            assert response.status_code == 201
            poll(lambda: len(subscriber.events("message")) == 3, timeout=WAIT)
            messages = subscriber.events("message")
            assert [m["status"] for m in messages] == ["first", "next", "cycle"]
            assert [m["text"] for m in messages] == ["one", "two", "three"]
            assert int(messages[2]["seq"], 16) > int(messages[1]["seq"], 16)  # it started above its old frame
            poll(lambda: bool(subscriber.events("advisory")), timeout=WAIT)
            advisory = subscriber.events("advisory")[-1]
            assert (advisory["lost"], advisory["restarts"], advisory["description"]) == (
                0,
                1,
                "publisher restarted",
            )
            totals = loss(f)["totals"]
            assert (totals["restarts"], totals["msg_loss"]) == (1, 0)
        no_traceback(a, f)
    finally:
        a.kill()
        f.kill()
