"""A longer fuzz campaign against the pure protocol cores: frames per second, outcomes by type.

For ``--seconds`` each (default 20) it runs three drivers of `swarm.testing.fuzz` with random input from
one seeded `random.Random`:

- ``decoder``: valid frames of every message type, joined and damaged (bits flipped, bytes cut,
  repeated or inserted), fed to a `FrameDecoder` in random pieces;
- ``session``: sequences of upstream messages with fields from small ranges (so they get deep
  into the rules) fed to a `DownstreamSession` that subscribes and answers as a client would;
- ``greeting``: decoded damaged frames fed to a `HandshakeMachine`.

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
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
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
    outcomes: dict[str, Counter[str]] = {name: Counter() for name in ("decoder", "session", "greeting")}

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

    drivers: tuple[Driver, ...] = (("decoder", decoder), ("session", session), ("greeting", greeting))
    drivers += hostile_sync_drivers(rng, outcomes)
    rates = {name: campaign(args.seconds, drive) for name, drive in drivers}
    return {
        "bench": "fuzz",
        "seconds_each": args.seconds,
        "seed": args.seed,
        **{name: {**rates[name], "outcomes": dict(outcomes[name].most_common())} for name in rates},
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
    print(json.dumps(run(parser.parse_args())))


if __name__ == "__main__":
    main()
