"""The network cases of the fuzz campaign (issue 30, items 2, 5, 7, 8, 11): `benches/fuzz.py`
runs the pure ones as drivers and, with ``--attacks``, these attacks on a real `swarm node`
process (`swarm.testing.intruder` is the attacker), each returning its figures:

- ``session_flood``: ``--sessions`` handshaken sessions from fresh identities (TLS, each claiming
  a listen address), held, then closed: RSS before, while held and after, sessions the node
  refused, and an honest handshake's time (a peer the table wants) under the flood;
- ``silent``: 130 silent sockets from 9 addresses, then 18 honest handshakes from a tenth (how
  many succeed, the slowest) and how long a lone silent socket stays open;
- ``bad_gossip``: peers sending records with bad signatures for ``--gossip-seconds``: records
  rejected, and the lines the node wrote about them per second;
- ``one_offs``: 3,000 one-off identities (plain channel): the known peers left, RSS growth;
- pure: ``greeting_slots`` (random admits and releases, invariants checked) and ``normalise``
  (random IPv4 addresses in IPv6 forms, judged as the IPv4 address by every dial policy).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import random
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import trio

from kademlia.addresses import DialPolicy, normalise_host
from pot import proximity
from streamer.codec import encode
from streamer.identity import NodeIdentity, make_peer_record
from streamer.messages import Peers
from swarm.net.greeting_slots import GreetingSlots
from swarm.testing import NodeProcess
from swarm.testing.intruder import Intruder, IntruderRefused, silent

POLICIES = (DialPolicy.for_host("0.0.0.0"), DialPolicy.for_host("127.0.0.1"), DialPolicy(["10.0.0.0/8"]))


def greeting_slots(rng: random.Random, outcomes: Counter[str]) -> int:
    """One random run of admits and releases; the caps and fairness must hold. Steps run."""
    per_host = rng.randrange(1, 9)
    slots = GreetingSlots(total=per_host + rng.randrange(40), per_host=per_host)
    hosts = [f"10.0.0.{i}" for i in range(rng.randrange(1, 12))]
    steps, issued = rng.randrange(1, 200), [-1]
    for _ in range(steps):
        if rng.random() < 0.7:
            host = rng.choice(hosts)
            fresh = slots.held(host) == 0 and any(slots.held(h) > 1 for h in hosts)
            grant = slots.admit(host)
            granted = grant.token is not None
            outcomes["evicted" if grant.evicted is not None else "admitted" if granted else "refused"] += 1
            assert granted or not fresh, "a fresh address was locked out"
            issued.append(grant.token if grant.token is not None else -1)
        else:
            slots.release(rng.choice(issued))
        assert len(slots) <= slots.total and all(slots.held(h) <= per_host for h in hosts)
    return steps


def normalise(rng: random.Random, outcomes: Counter[str]) -> int:
    """An IPv4 address in one of its IPv6 forms must be judged as the address itself."""
    ip = ipaddress.IPv4Address(rng.choice([rng.getrandbits(32), 0x7F000001, 0x0A000001, 0xA9FE0101]))
    v6 = ipaddress.IPv6Address(rng.choice([0xFFFF << 32, 0xFFFF0000 << 32]) | int(ip))
    form = rng.choice([v6.compressed, v6.exploded, v6.exploded.upper(), f"::ffff:{ip}"])
    assert normalise_host(form) == str(ip), form
    for policy in POLICIES:
        assert policy.allows(form) == policy.allows(str(ip)), form
    outcomes["allowed" if POLICIES[0].allows(form) else "refused"] += 1
    return 1


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no VmRSS")


def wanted_identity(target: bytes) -> NodeIdentity:
    """An identity in bin 8 or deeper of the target: one its table wants."""
    while proximity((identity := NodeIdentity.generate()).overlay(1), target) < 8:
        pass
    return identity


def session_flood(sessions: int) -> dict[str, Any]:
    async def attack(node: NodeProcess, pid: int) -> dict[str, Any]:
        intruder = Intruder("127.0.0.1", node.p2p[1], tls=True, advertise=True)
        held, failed = [], 0
        for _ in range(sessions):
            try:
                held.append(await intruder.session(source="127.0.0.2"))
            except (IntruderRefused, OSError):
                failed += 1
        during = rss_mb(pid)
        started = time.monotonic()
        honest = await intruder.session(wanted_identity(bytes.fromhex(node.overlay)), source="127.0.0.3")
        honest_s = time.monotonic() - started
        await honest.aclose()
        for session in held:
            await session.aclose()
        await trio.sleep(5)
        return {"rss_during_mb": during, "honest_handshake_s": round(honest_s, 3), "failed": failed}

    with tempfile.TemporaryDirectory() as tmp, NodeProcess(Path(tmp) / "target") as node:
        assert node.proc is not None
        before = rss_mb(node.proc.pid)
        figures = trio.run(attack, node, node.proc.pid)
        totals = node.get("/sync").json()["totals"]
        after = rss_mb(node.proc.pid)
    return {
        "sessions": sessions,
        "rss_before_mb": before,
        **figures,
        "rss_after_mb": after,
        "sessions_refused": totals["sessions_refused"],
    }


def silent_sockets() -> dict[str, Any]:
    async def attack(port: int) -> dict[str, Any]:
        flood = []
        for i in range(130):
            flood.append(await silent("127.0.0.1", port, source=f"127.0.0.{2 + i % 9}"))
        times, ok = [], 0
        intruder = Intruder("127.0.0.1", port, tls=True)
        for _ in range(18):
            started = time.monotonic()
            try:
                with trio.fail_after(20):
                    await (await intruder.session(source="127.0.0.11")).aclose()
                ok += 1
            except (IntruderRefused, OSError, trio.TooSlowError):
                pass
            times.append(time.monotonic() - started)
        lone = await silent("127.0.0.1", port, source="127.0.0.12")
        started = time.monotonic()
        with trio.move_on_after(30):
            while await lone.receive_some(4096):
                pass
        open_s = time.monotonic() - started
        for stream in flood:
            await stream.aclose()
        return {
            "honest_ok": f"{ok}/18",
            "honest_slowest_s": round(max(times), 3),
            "silent_open_s": round(open_s, 1),
        }

    with tempfile.TemporaryDirectory() as tmp, NodeProcess(Path(tmp) / "target") as node:
        return trio.run(attack, node.p2p[1])


def bad_gossip(seconds: float) -> dict[str, Any]:
    record = make_peer_record(NodeIdentity.generate(), network_id=1, host="127.0.0.1", port=1)
    bad = Peers(tuple(dataclasses.replace(record, port=2 + i) for i in range(128)))

    async def attack(port: int) -> None:
        intruder = Intruder("127.0.0.1", port, tls=False)
        deadline = trio.current_time() + seconds
        while trio.current_time() < deadline:
            session = await intruder.session()
            for _ in range(15):  # under the per-peer flood limit (4 x 2,048 records per 10 s)
                await session.stream.send_all(encode(bad))
            await session.ping()
            await session.aclose()

    with (
        tempfile.TemporaryDirectory() as tmp,
        NodeProcess(Path(tmp) / "target", extra=["--channel", "plain"]) as node,
    ):
        trio.run(attack, node.p2p[1])
        rejected = node.get("/sync").json()["totals"]["peer_records_rejected"]
        log = (Path(tmp) / "target" / "node.log").read_text()
    lines = sum("peer record" in line for line in log.splitlines())
    return {
        "seconds": seconds,
        "records_rejected": rejected,
        "lines": lines,
        "lines_per_s": round(lines / seconds, 2),
        "rejected_per_s": round(rejected / seconds),
    }


def one_offs(count: int = 3000) -> dict[str, Any]:
    async def attack(port: int) -> None:
        intruder = Intruder("127.0.0.1", port, tls=False)
        for _ in range(count):
            session = await intruder.session()
            await session.ping()
            await session.aclose()

    with (
        tempfile.TemporaryDirectory() as tmp,
        NodeProcess(Path(tmp) / "target", extra=["--channel", "plain"]) as node,
    ):
        assert node.proc is not None
        before = rss_mb(node.proc.pid)
        trio.run(attack, node.p2p[1])
        time.sleep(2)
        known = node.get("/topology").json()["population"]
        after = rss_mb(node.proc.pid)
    return {"identities": count, "known_peers": known, "rss_before_mb": before, "rss_after_mb": after}


def attacks(args: Any) -> dict[str, Any]:
    """Every attack on a node process, with its figures."""
    return {
        "session_flood": session_flood(args.sessions),
        "silent": silent_sockets(),
        "bad_gossip": bad_gossip(args.gossip_seconds),
        "one_offs": one_offs(),
    }
