"""Spaces at a node, in one process: the HTTP routes, the client, a stall and its resumption."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import trio

from chunks.ethkey import Secp256k1Key
from chunks.feeds import update_address
from swarm.node import Node
from swarm.spaces.client import SpaceApiError, SpaceClient
from swarm.spaces.messages import MEMBERS_TOPIC, Kind, message_topic
from swarm.testing import node_config, start_node, wait_for

T = TypeVar("T")


async def call(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking client call in a thread, so the node (in this event loop) can answer it."""
    return await trio.to_thread.run_sync(lambda: function(*args, **kwargs))


def client_of(node: Node) -> SpaceClient:
    return SpaceClient(f"http://127.0.0.1:{node.api_port}")


async def test_members_write_and_every_reading_agrees(tmp_path: Path) -> None:
    alice, bob = Secp256k1Key.generate(), Secp256k1Key.generate()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            node = await start_node(nursery, node_config(tmp_path / "n"))
            client = client_of(node)
            space = await call(client.create, "chat", alice)
            assert await call(client.join, space, bob) == 1
            assert await call(client.join, space, bob) == 1  # joining twice changes nothing
            assert await call(client.write, space.space, alice, Kind.SAY, text="hello") == (0, 0)
            assert await call(client.write, space.space, bob, Kind.SET, key="colour", value="blue") == (1, 0)
            assert await call(client.write, space.space, alice, Kind.SET, key="colour", value="red") == (0, 1)
            page = await call(client.log, space.space)
            assert [(e["member"], e["seq"], e["kind"]) for e in page["entries"]] == [
                (0, 0, "say"),
                (1, 0, "set"),
                (0, 1, "set"),
            ]
            assert page["entries"][0]["text"] == "hello" and page["entries"][2]["timeframe"] == [0, 0]
            state = json.loads(await call(client.state, space.space))
            assert state == {"colour": {"value": "red", "writer": alice.owner.hex(), "seq": 1}}
            summary = await call(client.summary, space.space)
            assert summary["name"] == "chat" and [m["owner"] for m in summary["members"]] == [
                alice.owner.hex(),
                bob.owner.hex(),
            ]
            outsider = Secp256k1Key.generate()
            with pytest.raises(SpaceApiError, match="not a member"):
                await call(client.write, space.space, outsider, Kind.SAY, text="let me in")
            with pytest.raises(SpaceApiError, match="no member list"):
                await call(client.write, bytes(20), alice, Kind.SAY, text="where am I")
            response = await call(
                httpx.post,
                f"{client.api}/spaces/{space.space.hex()}/messages/{alice.owner.hex()}/2",
                content=b"junk",
            )
            assert response.status_code == 400 and "not message 2" in response.json()["message"]
            await call(client.close)
            nursery.cancel_scope.cancel()
    assert json.loads((tmp_path / "n" / "spaces.json").read_text()) == [space.space.hex()]


async def test_a_stalled_node_names_the_missing_message_and_resumes_when_it_arrives(tmp_path: Path) -> None:
    """Bob wrote after reading Alice's three messages; a node holding Bob's message but none of
    Alice's says it waits for Alice's message 0, since when, and goes on once they arrive."""
    alice, bob = Secp256k1Key.generate(), Secp256k1Key.generate()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            first = await start_node(nursery, node_config(tmp_path / "a"))
            second = await start_node(nursery, node_config(tmp_path / "b"))  # not connected
            client = client_of(first)
            space = await call(client.create, "stall", alice)
            await call(client.join, space, bob)
            for n in range(3):
                await call(client.write, space.space, alice, Kind.SAY, text=f"a{n}")
            await call(client.write, space.space, bob, Kind.SAY, text="b0")

            def copy(owner: bytes, topic: bytes, indices: range) -> None:
                chunks = [first.store.get(update_address(owner, topic, i)) for i in indices]
                second.store_chunks(chunks, verified=True)

            copy(space.space, MEMBERS_TOPIC, range(2))
            copy(bob.owner, message_topic(space.space), range(1))
            other = client_of(second)
            status = await call(other.status, space.space)
            assert status["stalled"] and status["processed"] == 0
            [missing] = status["missing"]
            assert (missing["member"], missing["owner"], missing["seq"]) == (0, alice.owner.hex(), 0)
            assert missing["needed_by"] == [[1, 0]] and missing["since"] <= status["now"]
            bob_row = status["members"][1]
            assert bob_row["waiting_for"] == {
                "member": 0,
                "owner": alice.owner.hex(),
                "seq": 2,
                "since": missing["since"],
            }
            copy(alice.owner, message_topic(space.space), range(3))
            replica = second.spaces.replicas[space.space]
            await wait_for(lambda: replica.reader.orderer.processed == 4)
            status = await call(other.status, space.space)
            assert not status["stalled"] and not status["missing"]
            page = await call(other.log, space.space)
            assert [(e["member"], e["seq"]) for e in page["entries"]] == [(0, 0), (0, 1), (0, 2), (1, 0)]
            for c in (client, other):
                await call(c.close)
            nursery.cancel_scope.cancel()


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from swarm.cli.main import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def test_the_space_commands_print_what_the_node_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alice_key, bob_key = tmp_path / "alice.key", tmp_path / "bob.key"
    invite = tmp_path / "chat.space"
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            node = await start_node(nursery, node_config(tmp_path / "n"))
            api = ["--api", f"http://127.0.0.1:{node.api_port}"]

            async def cli(*argv: str) -> tuple[int, str, str]:
                return await call(run_cli, capsys, *argv)

            code, out, err = await cli(
                "space", "new", "chat", "--key", str(alice_key), "--out", str(invite), *api
            )
            assert code == 0 and "made a new key" in err and "member 0 is 0x" in out
            space = load_space(invite)
            assert (await cli("space", "join", str(invite), "--key", str(bob_key), *api))[1].startswith(
                "member 1 "
            )
            assert (await cli("space", "say", str(invite), "--key", str(alice_key), "hello", "bob", *api))[
                1
            ] == ("member 0 message 0\n")
            await cli("space", "set", space, "--key", str(bob_key), "colour", "blue", *api)
            await cli("space", "heartbeat", space, "--key", str(bob_key), *api)
            code, out, _ = await cli("space", "log", space, *api)
            lines = out.splitlines()
            assert len(lines) == 2 and "0:0" in lines[0] and lines[0].endswith(": hello bob")
            assert "1:0" in lines[1] and "[0,-]" in lines[1] and lines[1].endswith("set colour = blue")
            code, out, _ = await cli("space", "log", space, "--heartbeats", "--json", *api)
            assert [json.loads(line)["kind"] for line in out.splitlines()] == ["say", "set", "heartbeat"]
            code, out, _ = await cli("space", "state", space, *api)
            assert "colour" in out and "blue" in out
            code, out, _ = await cli("space", "state", space, "--json", *api)
            assert json.loads(out)["colour"]["value"] == "blue"
            code, out, _ = await cli("space", "status", space, *api)
            assert "not stalled" in out and "last processed" in out
            code, out, _ = await cli("space", "members", space, *api)
            assert "'chat'" in out and out.count("\n") == 5  # a title, a header, a rule, two members
            code, out, err = await cli("space", "say", space, "--key", str(tmp_path / "nokey"), "x", *api)
            assert code == 2 and err.startswith("swarm: error: cannot use key file") and err.count("\n") == 1
            code, out, err = await cli("space", "log", str(tmp_path / "nothing.space"), *api)
            assert code == 2 and "neither a space id" in err and err.count("\n") == 1
            code, out, err = await cli("space", "say", space, "--key", str(bob_key), "x" * 5000, *api)
            assert code == 2 and "at most 4096" in err
            nursery.cancel_scope.cancel()
    code, out, err = run_cli(capsys, "space", "status", space, "--api", "http://127.0.0.1:9")
    assert code == 2 and "cannot reach the node API" in err and err.count("\n") == 1


def load_space(path: Path) -> str:
    return str(json.loads(path.read_text())["space"])


def test_a_node_takes_its_space_inactivity_timeout_from_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from swarm.cli.main import build_parser
    from swarm.cli.space_args import space_config

    args = build_parser().parse_args(["node", "--data-dir", "d", "--space-inactive-after", "90"])
    assert space_config(args).inactive_after == 90.0
    with pytest.raises(SystemExit):
        build_parser().parse_args(["node", "--data-dir", "d", "--space-inactive-after", "0"])
    assert "seconds above 0" in capsys.readouterr().err


async def test_total_order_waits_for_a_quiet_member_until_it_is_shown_inactive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`log --mode total` holds Alice's messages back while Bob may still write something that
    sorts first; `status` names Bob as what it waits for; once Bob has been silent for the
    timeout he is shown inactive and the total order passes him. Bob's heartbeat makes him
    active again."""
    from swarm.spaces.config import SpaceConfig

    alice, bob = Secp256k1Key.generate(), Secp256k1Key.generate()
    config = node_config(tmp_path / "n", spaces=SpaceConfig(inactive_after=3.0, tick=0.1))
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            node = await start_node(nursery, config)
            client = client_of(node)
            api = ["--api", client.api]
            space = await call(client.create, "quiet", alice)
            await call(client.join, space, bob)
            await call(client.write, space.space, alice, Kind.SAY, text="anyone?")
            replica = node.spaces.replicas[space.space]
            await wait_for(lambda: replica.reader.orderer.processed == 1)
            total_log = ("space", "log", space.space.hex(), "--mode", "total", *api)
            # Bob was admitted just now: (unless this machine is very slow) not silent for long enough
            code, out, _ = await call(run_cli, capsys, "space", "status", space.space.hex(), *api)
            if replica.reader.status(replica.clock()).members[1].active:
                assert "total order waits for members 1 (1 processed messages not ordered yet)" in out
                assert await call(run_cli, capsys, *total_log) == (0, "", "")
            await wait_for(lambda: replica.reader.status(replica.clock()).ordered == 1)
            code, out, _ = await call(run_cli, capsys, *total_log)
            assert code == 0 and out.count("\n") == 1 and "0:0" in out and out.endswith(": anyone?\n")
            code, out, _ = await call(run_cli, capsys, "space", "status", space.space.hex(), *api)
            bob_row = next(line for line in out.splitlines() if line.strip().startswith("1 |"))
            assert "| NO " in bob_row and "total order waits" not in out
            await call(client.write, space.space, bob, Kind.HEARTBEAT)
            await wait_for(lambda: replica.reader.status(replica.clock()).members[1].active)
            await call(client.close)
            nursery.cancel_scope.cancel()
