"""The seed's scenario (004, "Spacetime") on real `swarm node` processes.

Four writers A, B, C, D, each writing through its own node, 100 messages each while all nodes
are connected; then the swarm is cut into {A, C} and {B, D} (the nodes restart with peers only
on their side: members stop receiving each other's updates) and each writes 100 more; then all
rejoin. Every node must process all 800 messages in an order that respects causality, and all
four must hold the same shared map, byte for byte, as `swarm space state --json` prints it;
after a heartbeat from each writer, the total order is the same on all four. (The first
hundred are written by the four at once, so they are concurrent too.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from chunks.ethkey import Secp256k1Key
from swarm.spaces.client import SpaceClient
from swarm.spaces.messages import Kind
from swarm.testing import NodeProcess, poll

pytestmark = pytest.mark.process

# the partition lasts seconds; long enough under load that no member is taken for inactive
NODE_OPTIONS = ["--no-gossip", "--space-inactive-after", "600"]
WRITERS = 4
PER_PHASE = 100
TIMEOUT = 120.0


def start(
    dirs: Sequence[Path], hubs: Sequence[int | None], *, hub: NodeProcess | None = None
) -> list[NodeProcess]:
    """Start a node per directory; node ``i`` dials node ``hubs[i]`` (None: ``hub``, if given,
    else nobody). The nodes dialling nobody start first, the others then all at once."""
    nodes: list[NodeProcess | None] = [None] * len(dirs)
    peers = [] if hub is None else [hub.p2p]
    for i, dial in enumerate(hubs):
        if dial is None:
            nodes[i] = NodeProcess(dirs[i], peers=peers, extra=NODE_OPTIONS).start()

    def leaf(i: int, hub: int) -> None:
        peer = nodes[hub]
        assert peer is not None
        nodes[i] = NodeProcess(dirs[i], peers=[peer.p2p], extra=NODE_OPTIONS).start()

    threads = [threading.Thread(target=leaf, args=(i, d)) for i, d in enumerate(hubs) if d is not None]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    started = [n for n in nodes if n is not None]
    assert len(started) == len(dirs), "a node did not start"
    return started


def stop(nodes: Sequence[NodeProcess]) -> None:
    for node in nodes:
        if node.proc is not None and node.proc.poll() is None:
            node.proc.send_signal(signal.SIGTERM)
    for node in nodes:
        assert node.stop() == 0


def processed(client: SpaceClient, space: bytes) -> int:
    return int(client.summary(space)["processed"])


def wait_all(clients: Sequence[SpaceClient], space: bytes, count: Callable[[SpaceClient], bool]) -> None:
    poll(lambda: all(count(c) for c in clients), timeout=TIMEOUT, interval=0.25)


def write_rounds(
    clients: Sequence[SpaceClient], keys: Sequence[Secp256k1Key], space: bytes, phase: int
) -> None:
    """The four writers at once, each through its own node: chat lines, and writes to shared keys."""

    def writer(w: int) -> None:
        for n in range(PER_PHASE):
            if n % 3 == 2:
                clients[w].write(space, keys[w], Kind.SET, key=f"k{n % 7}", value=f"{'ABCD'[w]}{phase}.{n}")
            else:
                clients[w].write(space, keys[w], Kind.SAY, text=f"{'ABCD'[w]} phase {phase} line {n}")

    in_threads(writer, range(WRITERS))


def in_threads(function: Callable[[Any], Any], arguments: Sequence[Any]) -> list[Any]:
    """``function`` of each argument, each in its own thread; the first exception is raised."""
    results: list[Any] = [None] * len(arguments)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = function(arguments[i])
        except BaseException as exc:  # reported in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(arguments))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def full_log(client: SpaceClient, space: bytes, mode: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    start = 0
    while (page := client.log(space, mode=mode, start=start))["entries"]:
        entries += page["entries"]
        start = page["next"]
    return entries


def check_causal(entries: list[dict[str, Any]]) -> None:
    """Each message comes after every message its timeframe covers (its own feed's included)."""
    seen: dict[int, int] = {}
    for entry in entries:
        for member, last in enumerate(entry["timeframe"]):
            assert seen.get(member, -1) >= last, f"{entry['member']}:{entry['seq']} before {member}:{last}"
        assert seen.get(entry["member"], -1) == entry["seq"] - 1
        seen[entry["member"]] = entry["seq"]


def cli_state(api: str, space: bytes) -> bytes:
    command = [sys.executable, "-m", "swarm", "space", "state", space.hex(), "--json", "--api", api]
    result = subprocess.run(
        command, capture_output=True, timeout=60, env=os.environ | {"PYTHONUNBUFFERED": "1"}
    )
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


def test_four_writers_partitioned_then_rejoined_converge(tmp_path: Path) -> None:
    dirs = [tmp_path / name for name in "ABCD"]
    keys = [Secp256k1Key.generate() for _ in range(WRITERS)]
    nodes = start(dirs, [None, 0, 0, 0])  # all connected (A the hub everyone syncs through)
    try:
        clients = [SpaceClient(n.api) for n in nodes]
        invitation = clients[0].create("spacetime", keys[0])
        space = invitation.space
        for key in keys[1:]:
            clients[0].join(invitation, key)
        wait_all(clients, space, lambda c: len(c.summary(space)["members"]) == WRITERS)
        write_rounds(clients, keys, space, 1)
        wait_all(clients, space, lambda c: processed(c, space) == WRITERS * PER_PHASE)

        # the partition: {A, C} and {B, D}. B and D stop (their links to A go down with them)
        # and come back linked to each other only; A and C keep running
        stop(nodes[1::2])
        nodes[1], nodes[3] = start([dirs[1], dirs[3]], [None, 0])
        clients = [SpaceClient(n.api) for n in nodes]
        wait_all(clients, space, lambda c: processed(c, space) == WRITERS * PER_PHASE)
        write_rounds(clients, keys, space, 2)
        two_sides = WRITERS * PER_PHASE + 2 * PER_PHASE
        wait_all(clients, space, lambda c: processed(c, space) == two_sides)
        logs = [full_log(c, space, "causal") for c in clients]
        a_side = {(e["member"], e["seq"]) for e in logs[0]}
        assert (1, PER_PHASE) not in a_side and (2, 2 * PER_PHASE - 1) in a_side

        stop(nodes[1::2])  # rejoin: B and D come back linked to A
        nodes[1], nodes[3] = start([dirs[1], dirs[3]], [None, None], hub=nodes[0])
        clients = [SpaceClient(n.api) for n in nodes]
        total = 2 * WRITERS * PER_PHASE
        wait_all(clients, space, lambda c: processed(c, space) == total)
        for client in clients:
            status = client.status(space)
            assert not status["stalled"] and all("invalid" not in m for m in status["members"])
            log = full_log(client, space, "causal")
            assert len(log) == total
            check_causal(log)
        # A's last message was written not knowing B's second hundred: they are concurrent
        last_of_a = next(
            e for e in full_log(clients[0], space, "causal") if e["member"] == 0 and e["seq"] == 199
        )
        assert last_of_a["timeframe"][1] < PER_PHASE
        states = {client.state(space) for client in clients}
        assert len(states) == 1
        state = states.pop()
        assert state.startswith(b'{"k0":') and cli_state(nodes[2].api, space) == state + b"\n"

        for client, key in zip(clients, keys, strict=True):  # let the total order pass everyone
            client.write(space, key, Kind.HEARTBEAT)
        wait_all(clients, space, lambda c: c.summary(space)["ordered"] >= total)
        orders = set()
        for client in clients:
            entries = full_log(client, space, "total")
            late = [(e["position"], e["member"], e["seq"]) for e in entries if e.get("late")]
            assert not late, (late[:10], len(late), client.status(space))
            check_causal(entries)
            orders.add(tuple((e["member"], e["seq"]) for e in entries[:total]))
        assert len(orders) == 1
    finally:
        stop(nodes)
