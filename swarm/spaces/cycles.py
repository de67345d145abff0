"""Which held messages can never be processed because they wait, through their timeframes, on a
cycle (pure; used by `swarm.spaces.ordering` when processing is stuck).

The graph: one node per held, decoded, unprocessed message; message ``k`` of a feed points to its
predecessor (when that is held and unprocessed too) and, for each entry its timeframe changed,
to the latest held message of that feed at or below the entry (waiting for a later one means
waiting for it as well; messages not held are no nodes, so a wait on them ends a path). A node
reaches a cycle iff it is left after repeatedly removing nodes without out-going edges (Kahn's
algorithm on out-degrees), O(nodes + edges).

That search runs only when `ring_of_waits` finds the feeds' next messages waiting for each
other in a ring, O(members): a cycle further back in the held messages surfaces there once the
messages before it are processed, so readers that hold the same messages find the same cycles.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["reaching_cycles", "ring_of_waits"]

Needs = tuple[tuple[int, int], ...]


def reaching_cycles(runs: Sequence[Sequence[Needs]], starts: Sequence[int]) -> dict[int, int]:
    """For every feed with a held message that reaches a cycle, the first such sequence number.

    ``runs[m]`` lists the needs (``(member, seq)`` pairs) of member ``m``'s held messages
    ``starts[m], starts[m] + 1, ...``; ``starts[m]`` is the member's first unprocessed sequence.
    """
    offsets = [0]
    for run in runs:
        offsets.append(offsets[-1] + len(run))
    size = offsets[-1]
    out_degree = [0] * size
    incoming: list[list[int]] = [[] for _ in range(size)]
    for member, run in enumerate(runs):
        for k, needs in enumerate(run):
            node = offsets[member] + k
            targets = {node - 1} if k else set()
            for dep, seq in needs:
                target = _latest_held(runs, starts, offsets, dep, seq)
                if target is not None:
                    targets.add(target)
            out_degree[node] = len(targets)
            for target in targets:
                incoming[target].append(node)
    sinks = [node for node in range(size) if out_degree[node] == 0]
    while sinks:
        node = sinks.pop()
        for source in incoming[node]:
            out_degree[source] -= 1
            if out_degree[source] == 0:
                sinks.append(source)
    first: dict[int, int] = {}
    for member, run in enumerate(runs):
        for k in range(len(run)):
            if out_degree[offsets[member] + k]:
                first[member] = starts[member] + k
                break
    return first


def _latest_held(
    runs: Sequence[Sequence[Needs]], starts: Sequence[int], offsets: list[int], dep: int, seq: int
) -> int | None:
    if dep >= len(runs) or seq < starts[dep] or not runs[dep]:
        return None
    return offsets[dep] + min(seq - starts[dep], len(runs[dep]) - 1)


def ring_of_waits(waits: Sequence[tuple[int, int] | None], held_end: Sequence[int]) -> bool:
    """Whether the blocked next messages wait for each other in a ring.

    ``waits[m]`` is what member ``m``'s blocked next message waits for, ``(member, seq)``, None
    if it is not blocked; ``held_end[m]`` is the first sequence number of ``m`` not held. A wait
    for a held message is a wait for that feed's next message as well (it comes before), so
    each blocked feed points to at most one other: a ring among them is a deadlock.
    """
    state = [0] * len(waits)  # 0 unseen, 1 on the current path, 2 done
    for start in range(len(waits)):
        path = []
        member = start
        while state[member] == 0:
            state[member] = 1
            path.append(member)
            wait = waits[member]
            if wait is None or wait[0] >= len(waits) or wait[1] >= held_end[wait[0]]:
                break
            member = wait[0]
        else:
            if state[member] == 1:
                return True
        for seen in path:
            state[seen] = 2
    return False
