"""Messages per second one space reader orders (`swarm.spaces.reader.SpaceReader`), 4 and 32 members.

The history (`benches.space_workload`): every member writes, each with what it had seen up to 8
messages earlier, so messages are often concurrent. The reader gets them in the order they were
written, with the stragglers of a partition: a quarter of the members' messages arrive only at
the end (``--late``), so the reader stalls on them, holds what its window allows and catches
up. Timed: decoding, the causal engine, the total order and the shared map, all of `pump`;
one core, best of ``--repeats``, by the wall clock (``_per_s``) and by the process's CPU time
(``_per_cpu_s``, steadier on a shared machine). Prints one JSON line. Run ``python -m
benches.bmt`` beside it.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import deque

from benches.space_workload import Written, history, owners
from swarm.spaces.reader import SpaceReader


def arrival(messages: list[Written], members: int, late: bool) -> list[Written]:
    if not late:
        return messages
    stragglers = set(range(0, members, 4))
    return [m for m in messages if m.member not in stragglers] + [
        m for m in messages if m.member in stragglers
    ]


def order_once(messages: list[Written], members: int) -> tuple[float, float]:
    """Seconds to order ``messages`` arriving in this order. What a feed's window has no room
    for waits in a per-feed queue (the node's feed reader would not fetch it yet) and is offered
    when processing makes room, as the node's replica does."""
    reader = SpaceReader(inactive_after=1e18)
    for owner in owners(members):
        reader.add_member(owner, 0.0)
    deferred: dict[int, deque[Written]] = {m: deque() for m in range(members)}
    started, cpu = time.perf_counter(), time.process_time()
    for i, m in enumerate(messages):
        queue = deferred[m.member]
        if queue or not reader.offer(m.member, m.seq, m.payload, 0.0):
            queue.append(m)
        if i % 16 == 15:
            reader.pump(0.0)
            catch_up(reader, deferred)
    while any(deferred.values()):
        reader.pump(0.0)
        catch_up(reader, deferred)
    reader.pump(0.0)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert reader.orderer.processed == len(messages)
    return elapsed, cpu


def catch_up(reader: SpaceReader, deferred: dict[int, deque[Written]]) -> None:
    for member, queue in deferred.items():
        while queue and reader.offer(member, queue[0].seq, queue[0].payload, 0.0):
            queue.popleft()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--late", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    result: dict[str, object] = {"messages": args.messages, "late_quarter": args.late}
    for members in (4, 32):
        messages = arrival(history(members, args.messages), members, args.late)
        runs = [order_once(messages, members) for _ in range(args.repeats)]
        result[f"members_{members}_per_s"] = round(args.messages / min(wall for wall, _ in runs))
        result[f"members_{members}_per_cpu_s"] = round(args.messages / min(cpu for _, cpu in runs))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
