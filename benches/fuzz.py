"""A longer fuzz campaign against the pure protocol cores: frames per second, outcomes by type.

For ``--seconds`` each (default 20) it runs three drivers of `swarm.testing.fuzz` with random input from
one seeded `random.Random`:

- ``decoder``: valid frames of every message type, joined and damaged (bits flipped, bytes cut,
  repeated or inserted), fed to a `FrameDecoder` in random pieces;
- ``session``: sequences of upstream messages with fields from small ranges (so they get deep
  into the rules) fed to a `DownstreamSession` that subscribes and answers as a client would;
- ``greeting``: decoded damaged frames fed to a `HandshakeMachine`;
- ``greeting_slots`` and ``normalise``: the network's pure guards (`benches.fuzz_net`).

With ``--attacks`` it then attacks a real node process (`benches.fuzz_net`): a session flood,
silent sockets, bad gossip and one-off identities, each with its figures.

Issue 30 adds (each an attack or an accident of its own, `hostile_sync_drivers`):

- ``proof_docs``: `swarm verify-proof` documents with a field replaced by junk (bin IDs below 1
  or past 2^64, wrong JSON types, missing fields, nested arrays): a verdict or
  `InvalidProofDocument`, never another exception;
- ``heartbeats``: members heartbeating around a few messages into a space log: at most one
  heartbeat per member kept, the slots bounded;
- ``lost_chunks``: a chunk lost at a power cut, its address known or not: the intervals reset
  always include the peer's bin it was synced in;
- ``cursor_claims``: cursors near 2^64 and offers into a downstream session: a violation or an
  event, never a crash.

Prints one JSON line: inputs and frames per second per driver, and the count of each outcome
("clean", "done", or the exception type). Any exception type outside `swarm.testing.fuzz.EXPECTED` stops
the campaign with its traceback: that is a bug found.

``--api`` runs instead the hostile HTTP cases of issue 30 against a real node process
(`api_cases`): the tree bomb (peak RSS growth while a client streams it for ``--seconds``, at
most 10, and RSS and CPU once it hung up); a page of another origin publishing and uploading,
and a DNS-rebound `Host` (the statuses, and how many state changes got through); a peer flooding
a node with valid topic messages beside an honest one (issue 30 item 6: what was throttled,
whether the flooder was dropped, what the honest one got through).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

import trio

from benches import fuzz_net
from streamer.codec import encode
from streamer.identity import NodeIdentity
from streamer.messages import (
    ChunkDeliveries,
    ChunkDelivery,
    CursorsReply,
    CursorsRequest,
    DeliveredChunk,
    Goodbye,
    Handshake,
    Hello,
    Message,
    OfferedHashes,
    Peers,
    Ping,
    Pong,
    RetrieveDelivery,
    RetrieveFailure,
    RetrieveRequest,
    Subscribe,
    Unsubscribe,
    Unsubscribed,
    WantedHashes,
)
from swarm.testing.fuzz import feed_decoder, feed_greeting, feed_session, mutate

POOL = [bytes([i]) * 32 for i in range(8)] + [bytes(range(32))]
DATA = b"\x01" + bytes(7) + b"x"


def random_message(rng: random.Random) -> Message:
    """One valid message of any type, fields from small ranges."""
    b, live, start = rng.choice([0, 1, 2, 31]), rng.random() < 0.5, rng.randrange(1, 12)
    end = start + rng.randrange(3)
    hashes = tuple(rng.choice(POOL) for _ in range(rng.randrange(end - start + 2)))
    makers: list[Callable[[], Message]] = [
        lambda: Hello(rng.randbytes(32)),
        lambda: Handshake(3, 1, rng.randbytes(32), 1, "h", 1, rng.randbytes(32), rng.randbytes(64)),
        lambda: Goodbye(rng.randrange(12), "bye"),
        lambda: Ping(rng.randrange(2**64)),
        lambda: Pong(rng.randrange(2**64)),
        lambda: CursorsRequest(),
        lambda: CursorsReply(rng.choice([7, 8]), tuple(rng.randrange(12) for _ in range(rng.randrange(33)))),
        lambda: Subscribe(b, live, start, 0 if live else end),
        lambda: Unsubscribe(b, live),
        lambda: Unsubscribed(b, live),
        lambda: OfferedHashes(b, live, start, end, hashes),
        lambda: WantedHashes.from_indices(b, live, start, end, range(len(hashes))),
        lambda: ChunkDelivery(b, live, start, rng.randrange(4), DATA),
        lambda: ChunkDeliveries(
            b, live, start, tuple(DeliveredChunk(rng.randrange(4), DATA) for _ in range(rng.randrange(1, 4)))
        ),
        lambda: RetrieveRequest(rng.randrange(9), rng.choice(POOL), rng.randrange(3)),
        lambda: RetrieveDelivery(rng.randrange(9), DATA),
        lambda: RetrieveFailure(rng.randrange(9), "no"),
        lambda: Peers(()),
    ]
    return rng.choice(makers)()


def campaign(seconds: float, drive: Callable[[], int]) -> dict[str, float]:
    """Call `drive` (returns the frames it fed) until `seconds` passed; inputs and frames per s."""
    inputs = frames = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        frames += drive()
        inputs += 1
    return {
        "inputs": inputs,
        "inputs_per_s": round(inputs / elapsed),
        "frames_per_s": round(frames / elapsed),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    identity = NodeIdentity.generate()
    outcomes: dict[str, Counter[str]] = {
        name: Counter[str]() for name in ("decoder", "session", "greeting", "greeting_slots", "normalise")
    }

    def decoder() -> int:
        msgs = [random_message(rng) for _ in range(rng.randrange(1, 6))]
        blob = mutate(rng, [encode(m) for m in msgs])
        feed_decoder(blob, [rng.randrange(len(blob) + 1) for _ in range(3)], outcomes["decoder"])
        return len(msgs)

    def session() -> int:
        msgs = [random_message(rng) for _ in range(rng.randrange(1, 15))]
        feed_session(msgs, outcomes["session"])
        return len(msgs)

    def greeting() -> int:
        msgs = [random_message(rng) for _ in range(rng.randrange(1, 4))]
        msgs = feed_decoder(mutate(rng, [encode(m) for m in msgs], rounds=1), [], Counter())
        feed_greeting(msgs, outcomes["greeting"], identity)
        return len(msgs)

    drivers: tuple[Driver, ...] = (
        ("decoder", decoder),
        ("session", session),
        ("greeting", greeting),
        ("greeting_slots", lambda: fuzz_net.greeting_slots(rng, outcomes["greeting_slots"])),
        ("normalise", lambda: fuzz_net.normalise(rng, outcomes["normalise"])),
    )
    drivers += hostile_sync_drivers(rng, outcomes)
    rates = {name: campaign(args.seconds, drive) for name, drive in drivers}
    return {
        "bench": "fuzz",
        "seconds_each": args.seconds,
        "seed": args.seed,
        **{name: {**rates[name], "outcomes": dict(outcomes[name].most_common())} for name in rates},
        **({"attacks": fuzz_net.attacks(args)} if args.attacks else {}),
    }


# -- hostile API cases (issue 30 items 1, 3): a real node process, attacked over HTTP ---------


def tree_bomb_case(seconds: float) -> dict[str, Any]:
    """A tree bomb (5 chunks claiming 1 TiB) uploaded to a node process, `GET /bytes/ROOT` read for
    `seconds` by a client that then hangs up: peak RSS growth (VmHWM), RSS and CPU after it left."""
    import tempfile
    from pathlib import Path

    import httpx

    from benches.sync import cpu_seconds, proc_status_kb
    from swarm.testing import NodeProcess
    from swarm.testing.hostile import get_and_hang_up, tree_bomb

    root, chunks = tree_bomb(4)
    with tempfile.TemporaryDirectory(prefix="bench-fuzz-bomb-") as tmp, NodeProcess(Path(tmp)) as node:
        for chunk in chunks:
            headers = {"swarm-deferred-upload": "true"}
            httpx.post(node.api + "/chunks", content=chunk.data, headers=headers, timeout=10)
        assert node.proc is not None
        pid = node.proc.pid
        before = proc_status_kb(pid, "VmRSS")
        _, streamed = get_and_hang_up(int(node.info["api_port"]), f"/bytes/{root.address.hex()}", seconds)  # type: ignore[call-overload]
        cpu_left = cpu_seconds(pid)
        time.sleep(2.0)
        return {
            "claimed_bytes": root.span,
            "streamed_mb": round(streamed / 2**20, 1),
            "rss_before_mb": round(before / 1024, 1),
            "peak_rss_growth_mb": round((proc_status_kb(pid, "VmHWM") - before) / 1024, 1),
            "rss_growth_2s_after_client_left_mb": round((proc_status_kb(pid, "VmRSS") - before) / 1024, 1),
            "cpu_s_in_2s_after_client_left": round(cpu_seconds(pid) - cpu_left, 2),
        }


def cross_origin_case() -> dict[str, Any]:
    """What a page of another site and a DNS-rebound name get from a node process: the statuses of
    a cross-origin text/plain topic publish and upload, a `Host: evil.example` read, and whether the
    topic's sequence shows a message published by them."""
    import tempfile
    from pathlib import Path

    import httpx

    from swarm.testing import NodeProcess

    evil = {"origin": "http://evil.example", "content-type": "text/plain"}
    with tempfile.TemporaryDirectory(prefix="bench-fuzz-origin-") as tmp, NodeProcess(Path(tmp)) as node:
        publish = httpx.post(node.api + "/live/topics/chat", content=b"x", headers=evil, timeout=10)
        upload = httpx.post(node.api + "/bytes", content=b"x", headers=evil, timeout=10)
        rebound = httpx.get(node.api + "/health", headers={"host": "evil.example"}, timeout=10)
        honest = httpx.post(node.api + "/live/topics/chat", content=b"x", timeout=10)
        return {
            "cross_origin_publish": publish.status_code,
            "cross_origin_upload": upload.status_code,
            "rebound_host": rebound.status_code,
            "honest_publish": honest.status_code,
            "cross_origin_messages_published": (int(honest.json()["seq"], 16) & 0xFFFFFFFF) - 1,
        }


def live_flood_case(seconds: float) -> dict[str, Any]:
    """A peer sending valid, signed topic messages (signed beforehand) into a node as fast as its
    connection takes them for `seconds` (three in-process nodes over loopback TCP: attacker - node -
    honest, default limits), while the honest peer publishes 10 a second and a subscriber at the
    node reads: what the node throttled, whether it dropped the attacker, what the honest one got
    through."""
    import tempfile
    from pathlib import Path

    from chunks.ethkey import Secp256k1Key
    from streamer.outbox import Priority
    from swarm.live.events import TopicMessage
    from swarm.live.messages import make_topic_push
    from swarm.live.seqno import PublisherSequence
    from swarm.node import Node
    from swarm.testing import node_config, start_node, wait_for

    logging.getLogger("swarm").setLevel(logging.ERROR)  # the throttling and loss lines: counted below
    topic, key, numbers = b"\x66" * 32, Secp256k1Key.generate(), PublisherSequence()
    pushes = []
    for _ in range(int(4000 * seconds)):
        seq, chain = numbers.next(topic, time.time_ns())
        pushes.append(make_topic_push(key, topic, seq, chain, time.time_ns(), b"flood"))

    async def attack(tmp: Path) -> dict[str, Any]:
        async with trio.open_nursery() as nursery:
            nodes: list[Node] = []
            for i in range(3):
                peers = [("127.0.0.1", nodes[-1].p2p_port)] if nodes else []
                config = node_config(tmp / f"n{i}", peers=peers, gossip=False, api_port=None)
                nodes.append(await start_node(nursery, config))
            attacker, node, honest = nodes
            await wait_for(lambda: len(node.peers) == 2, timeout=20)
            got = [0]
            async with node.live.subscribe(topic) as subscription:

                async def read() -> None:
                    async for event in subscription.events():
                        if isinstance(event, TopicMessage) and event.message.owner == honest.live.key.owner:
                            got[0] += 1

                nursery.start_soon(read)
                await wait_for(lambda: honest.live.interest.distance(subscription.stream) is not None)
                link = attacker.peers[node.overlay].conn
                first = node.peers[attacker.overlay]
                sent = honest_sent = 0
                started = time.perf_counter()
                while (elapsed := time.perf_counter() - started) < seconds and sent < len(pushes):
                    if link.closed:
                        break
                    await link.send(pushes[sent], Priority.LIVE)
                    sent += 1
                    if elapsed * 10 > honest_sent:
                        honest.live.publish_topic(topic, b"honest")
                        honest_sent += 1
                elapsed = time.perf_counter() - started
                await trio.sleep(1.0)
                stats = node.live.statistics()
                result = {
                    "attack_s": round(elapsed, 2),
                    "attacker_sent": sent,
                    "attacker_per_s": round(sent / elapsed),
                    "throttled": stats.throttled,
                    "attacker_dropped": first.conn.closed,
                    "honest_sent": honest_sent,
                    "honest_received": got[0],
                }
            nursery.cancel_scope.cancel()
        return result

    with tempfile.TemporaryDirectory(prefix="bench-fuzz-live-") as tmp:
        return trio.run(attack, Path(tmp))


def api_cases(seconds: float) -> dict[str, Any]:
    """Each hostile API case once; `seconds` (at most 10) is how long the attacking client reads."""
    return {
        "tree_bomb": tree_bomb_case(min(seconds, 10.0)),
        "cross_origin": cross_origin_case(),
        "live_flood": live_flood_case(min(seconds, 10.0)),
    }


# -- issue 30: restored stores, torn tails, proofs, heartbeats, absurd cursors -------------------

Driver = tuple[str, Callable[[], int]]


def hostile_sync_drivers(rng: random.Random, outcomes: dict[str, Counter[str]]) -> tuple[Driver, ...]:
    """The drivers of issue 30's sync cases; each counts its outcomes in ``outcomes[name]``."""
    from swarm.testing.fuzz_sync import cursor_claims, heartbeats, lost_chunks, proof_docs

    cases = {"proof_docs": proof_docs, "heartbeats": heartbeats, "lost_chunks": lost_chunks}
    cases["cursor_claims"] = cursor_claims
    drivers = []
    for name, case in cases.items():
        counter = outcomes[name] = Counter()
        drivers.append((name, partial(case, rng, counter)))
    return tuple(drivers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0, help="per driver (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--api", action="store_true", help="only the hostile API cases against a node process (issue 30)"
    )
    parser.add_argument("--attacks", action="store_true", help="then attack a node process (fuzz_net)")
    parser.add_argument("--sessions", type=int, default=2500, help="of the session flood (default 2500)")
    parser.add_argument("--gossip-seconds", type=float, default=20.0, help="of the bad gossip (default 20)")
    args = parser.parse_args()
    if args.api:
        print(json.dumps({"bench": "fuzz-api", **api_cases(args.seconds)}))
        return
    print(json.dumps(run(args)))


if __name__ == "__main__":
    main()
