"""A stalled reader on real `swarm node` processes, driven by the `swarm space` commands.

Alice and Bob write through node W with the command line (Bob after reading Alice's three
messages); a lying member, Carol, claims Bob's message without what Bob had seen. Node R, cut
off from W, is handed the member list, Bob's and Carol's messages only: `swarm space status`
says R waits for Alice's message 0 and since when. A `swarm space log --follow` runs on R
meanwhile. W then restarts linked to R: R fetches Alice's messages through the swarm, processing
resumes by itself, the follower prints the four honest messages in causal order, and `status`
shows Carol's feed invalid from her message 0, nothing stalled.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from chunks.ethkey import load_key_file
from chunks.feeds import make_update_v2, update_address
from swarm.spaces.client import SpaceClient
from swarm.spaces.messages import MEMBERS_TOPIC, Kind, SpaceMessage, encode_message, message_topic
from swarm.testing import NodeProcess, poll

pytestmark = pytest.mark.process

NODE_OPTIONS = ["--no-gossip"]
TIMEOUT = 60.0
ENV = os.environ | {"PYTHONUNBUFFERED": "1"}


def swarm(*argv: str) -> subprocess.CompletedProcess[str]:
    """`python -m swarm ARGV`, which must succeed."""
    result = subprocess.run(
        [sys.executable, "-m", "swarm", *argv], capture_output=True, text=True, timeout=TIMEOUT, env=ENV
    )
    assert result.returncode == 0, (argv, result.stderr)
    return result


def copy_chunk(source: NodeProcess, target: NodeProcess, address: bytes, route: str) -> None:
    """Fetch a feed update (SOC data) from ``source``'s store and post it to ``target``'s space
    route: R gets exactly these messages and nothing else."""
    fetched = source.get(f"/chunks/{address.hex()}")
    assert fetched.status_code == 200
    data = fetched.content
    response = httpx.post(target.api + route, content=data, timeout=TIMEOUT)
    assert response.status_code == 201, response.text


def lines_of(stream: IO[str]) -> queue.Queue[str]:
    """The lines of ``stream`` as a thread reads them (so each wait can be bounded)."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stream:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    return lines


def test_a_stalled_node_names_the_missing_message_and_resumes_when_the_swarm_brings_it(
    tmp_path: Path,
) -> None:
    keys = {name: tmp_path / f"{name}.key" for name in ("alice", "bob", "carol")}
    invite = tmp_path / "talk.space"
    writer = NodeProcess(tmp_path / "W", extra=NODE_OPTIONS).start()
    reader = NodeProcess(tmp_path / "R", extra=NODE_OPTIONS).start()  # linked to nobody
    follower: subprocess.Popen[str] | None = None
    try:
        on_w, on_r = ["--api", writer.api], ["--api", reader.api]
        swarm("space", "new", "talk", "--key", str(keys["alice"]), "--out", str(invite), *on_w)
        swarm("space", "join", str(invite), "--key", str(keys["bob"]), *on_w)
        swarm("space", "join", str(invite), "--key", str(keys["carol"]), *on_w)
        space = bytes.fromhex(json.loads(invite.read_text())["space"])
        for n in range(3):
            swarm("space", "say", space.hex(), "--key", str(keys["alice"]), f"alice {n}", *on_w)
        swarm("space", "set", str(invite), "--key", str(keys["bob"]), "topic", "stalls", *on_w)
        alice, bob, carol = (load_key_file(keys[n]) for n in ("alice", "bob", "carol"))

        # R gets the member list and Bob's message (which covers Alice's 0..2), not Alice's
        for index in range(3):
            address = update_address(space, MEMBERS_TOPIC, index)
            copy_chunk(writer, reader, address, f"/spaces/{space.hex()}/members/{index}")
        topic = message_topic(space)
        route = f"/spaces/{space.hex()}/messages/{bob.owner.hex()}/0"
        copy_chunk(writer, reader, update_address(bob.owner, topic, 0), route)
        # Carol claims Bob's message but not the three of Alice's it covers: a lie
        lie = encode_message(SpaceMessage(Kind.SAY, ((1, 1),), text="I saw Bob, not Alice"))
        soc = make_update_v2(carol, topic, 0, lie)
        response = httpx.post(
            f"{reader.api}/spaces/{space.hex()}/messages/{carol.owner.hex()}/0", content=soc.data
        )
        assert response.status_code == 201, response.text

        client = SpaceClient(reader.api)
        poll(lambda: client.status(space)["stalled"], timeout=TIMEOUT)
        status = client.status(space)
        assert status["processed"] == 0
        [missing] = status["missing"]
        assert (missing["member"], missing["owner"], missing["seq"]) == (0, alice.owner.hex(), 0)
        assert [1, 0] in missing["needed_by"] and missing["since"] <= status["now"]
        assert status["members"][1]["waiting_for"]["seq"] == 2
        shown = swarm("space", "status", space.hex(), *on_r).stdout
        assert f"STALLED: waiting for message 0 of member 0 ({alice.owner.hex()[:8]}) since " in shown
        assert "waits for 0:2 since" in shown and "s ago)" in shown

        follower = subprocess.Popen(
            [sys.executable, "-m", "swarm", "space", "log", space.hex(), "--follow", "--json", *on_r],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        assert follower.stdout is not None and follower.stderr is not None
        printed = lines_of(follower.stdout)

        # W comes back linked to R: R asks the swarm for Alice's messages and gets them from W
        assert writer.stop() == 0
        writer = NodeProcess(tmp_path / "W", peers=[reader.p2p], extra=NODE_OPTIONS).start()
        entries: list[dict[str, Any]] = [json.loads(printed.get(timeout=TIMEOUT)) for _ in range(4)]
        assert [(e["member"], e["seq"]) for e in entries] == [(0, 0), (0, 1), (0, 2), (1, 0)]
        assert [e.get("text") for e in entries[:3]] == ["alice 0", "alice 1", "alice 2"]
        assert entries[3]["timeframe"][:2] == [2, -1] and entries[3]["value"] == "stalls"

        status = client.status(space)
        assert not status["stalled"] and status["processed"] == 4
        assert status["members"][2]["invalid"]["from"] == 0
        shown = swarm("space", "status", space.hex(), *on_r).stdout
        assert "not stalled" in shown and "INVALID from 0" in shown and "understates" in shown
        assert json.loads(swarm("space", "state", space.hex(), "--json", *on_r).stdout)["topic"]["value"] == (
            "stalls"
        )
        assert printed.empty()  # Carol's lie is never processed
        follower.send_signal(signal.SIGINT)  # Ctrl-C: stops quietly
        assert follower.wait(timeout=TIMEOUT) == 130
        assert "Traceback" not in follower.stderr.read()
        client.close()
    finally:
        if follower is not None and follower.poll() is None:
            follower.kill()
            follower.wait()
        for node in (writer, reader):
            if node.proc is not None and node.proc.poll() is None:
                node.stop()
