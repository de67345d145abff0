"""A space's message history for the space benches (not a bench itself).

``messages`` steps; at each, a writer picked at random (uniformly, or with ``skewed`` member
``i`` writing in proportion to ``1 / (i + 1)``, as in a chat where a few talk most) writes a
message whose timeframe is what it had seen ``delay`` steps earlier (a random delay up to
``max_delay``: the latency of the network), so concurrent messages are common. A timeframe made
this way is honest: every message it covers was written before, with everything that message
covers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from swarm.spaces.messages import Kind, compose
from swarm.spaces.timeframe import Timeframe


@dataclass(frozen=True)
class Written:
    member: int
    seq: int
    timeframe: Timeframe  # own entry included
    previous: Timeframe  # the writer's previous message's
    payload: bytes


def owners(members: int) -> list[bytes]:
    return [random.Random(i).randbytes(20) for i in range(members)]


def history(
    members: int, messages: int, *, skewed: bool = False, max_delay: int = 8, seed: int = 0
) -> list[Written]:
    rng = random.Random(seed)
    writers = list(range(members))
    weights = [1 / (i + 1) if skewed else 1.0 for i in writers]
    seen: list[tuple[int, ...]] = []  # after step t: the last sequence number of each member
    last = [-1] * members
    previous: list[Timeframe] = [() for _ in range(members)]
    out = []
    for step in range(messages):
        [writer] = rng.choices(writers, weights)
        earlier = step - 1 - rng.randint(0, max_delay)
        seen_then = seen[earlier] if earlier >= 0 else (-1,) * members
        # what it saw then, and never less than it had seen for its previous message
        frame = [max(a, b) for a, b in zip(seen_then, previous[writer] or (-1,) * members, strict=True)]
        frame[writer] = last[writer]
        timeframe = tuple(frame)
        payload = compose(writer, previous[writer], timeframe, Kind.SAY, text=f"message {step}")
        out.append(Written(writer, last[writer] + 1, timeframe, previous[writer], payload))
        previous[writer] = timeframe
        last[writer] += 1
        seen.append(tuple(last))
    return out
