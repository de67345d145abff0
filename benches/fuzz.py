"""A longer fuzz campaign against the pure protocol cores: frames per second, outcomes by type.

For ``--seconds`` each (default 20) it runs three drivers of `swarm.testing.fuzz` with random input from
one seeded `random.Random`:

- ``decoder``: valid frames of every message type, joined and damaged (bits flipped, bytes cut,
  repeated or inserted), fed to a `FrameDecoder` in random pieces;
- ``session``: sequences of upstream messages with fields from small ranges (so they get deep
  into the rules) fed to a `DownstreamSession` that subscribes and answers as a client would;
- ``greeting``: decoded damaged frames fed to a `HandshakeMachine`.

Prints one JSON line: inputs and frames per second per driver, and the count of each outcome
("clean", "done", or the exception type). Any exception type outside `swarm.testing.fuzz.EXPECTED` stops
the campaign with its traceback: that is a bug found.

``--api`` runs instead the hostile HTTP cases of issue 30 against a real node process
(`api_cases`): the tree bomb (peak RSS growth while a client streams it for ``--seconds``, at
most 10, and RSS and CPU once it hung up); a page of another origin publishing and uploading,
and a DNS-rebound `Host` (the statuses, and how many state changes got through).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from streamer.codec import encode
from streamer.identity import NodeIdentity
from streamer.messages import (
    ChunkDelivery,
    CursorsReply,
    CursorsRequest,
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
    outcomes = {name: Counter[str]() for name in ("decoder", "session", "greeting")}

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

    drivers = (("decoder", decoder), ("session", session), ("greeting", greeting))
    rates = {name: campaign(args.seconds, drive) for name, drive in drivers}
    return {
        "bench": "fuzz",
        "seconds_each": args.seconds,
        "seed": args.seed,
        **{name: {**rates[name], "outcomes": dict(outcomes[name].most_common())} for name in rates},
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


def api_cases(seconds: float) -> dict[str, Any]:
    """Each hostile API case once; `seconds` (at most 10) is how long the attacking client reads."""
    return {"tree_bomb": tree_bomb_case(min(seconds, 10.0)), "cross_origin": cross_origin_case()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0, help="per driver (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--api", action="store_true", help="only the hostile API cases against a node process (issue 30)"
    )
    args = parser.parse_args()
    if args.api:
        print(json.dumps({"bench": "fuzz-api", **api_cases(args.seconds)}))
        return
    print(json.dumps(run(args)))


if __name__ == "__main__":
    main()
