"""What a space reader keeps in memory (`swarm.spaces.reader.SpaceReader`), 4 and 32 members.

Two figures per member count, over a history from `benches.space_workload`:

- ``processed_bytes_per_message``: memory (``tracemalloc``) a reader keeps per processed
  message once everything is processed (its log record: member, order key, full timeframe,
  kind; message bodies stay in the node's store);
- a **stalled** reader: member 0's first message is withheld, so (nearly) everything written
  after depends on it. Every other message is offered in write order, as a feed reader
  fetching as fast as it can would; what the reader's windows refuse stays in the store.
  ``stalled_offered`` messages were there to take, ``stalled_held`` were taken and are held
  unprocessed (at most ``max(capacity, 4 x members)``, capacity 1024), ``stalled_held_bytes``
  is the memory they take (decoded or raw).

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import tracemalloc
from collections import deque

from benches.space_workload import Written, history, owners
from swarm.spaces.reader import SpaceReader


def new_reader(members: int) -> SpaceReader:
    reader = SpaceReader(inactive_after=1e18)
    for owner in owners(members):
        reader.add_member(owner, 0.0)
    return reader


def offer_all(reader: SpaceReader, messages: list[Written]) -> int:
    """Offer each feed's messages in order until its window refuses one; how many were taken."""
    refused: set[int] = set()
    taken = 0
    for i, m in enumerate(messages):
        if m.member in refused:
            continue
        if reader.offer(m.member, m.seq, m.payload, 0.0):
            taken += 1
        else:
            refused.add(m.member)
        if i % 16 == 15:
            reader.pump(0.0)
    reader.pump(0.0)
    return taken


def processed_bytes(members: int, messages: list[Written]) -> float:
    """Bytes the reader keeps per message once it has processed them all."""
    queues: dict[int, deque[Written]] = {m: deque() for m in range(members)}
    for m in messages:
        queues[m.member].append(m)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    reader = new_reader(members)
    while any(queues.values()):  # each feed read in order as far as its window allows
        for member, queue in queues.items():
            while queue and reader.offer(member, queue[0].seq, queue[0].payload, 0.0):
                queue.popleft()
        reader.pump(0.0)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert reader.orderer.processed == len(messages) and reader.orderer.held_total() == 0
    return (after - before) / len(messages)


def stalled(members: int, messages: list[Written]) -> dict[str, int]:
    withheld = [m for m in messages if not (m.member == 0 and m.seq == 0)]
    reader = new_reader(members)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    offer_all(reader, withheld)
    processed_at_stall = reader.orderer.processed
    held = reader.orderer.held_total()
    held_bytes = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert reader.status(0.0).stalled
    return {
        "stalled_offered": len(withheld) - processed_at_stall,
        "stalled_held": held,
        "stalled_held_bytes": held_bytes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=20_000)
    args = parser.parse_args()
    result: dict[str, object] = {"messages": args.messages}
    for members in (4, 32):
        messages = history(members, args.messages)
        result[f"members_{members}"] = {
            "processed_bytes_per_message": round(processed_bytes(members, messages)),
            **stalled(members, messages),
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
