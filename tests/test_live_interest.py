"""Interest gossip converges to each node's true hop distance to the nearest follower, and
withdrawals die out, on random graphs of interest tables exchanging their announcements."""

from __future__ import annotations

from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from streamer.messages import INTEREST_WITHDRAWN, InterestEntry
from swarm.live.interest import InterestTable
from swarm.live.messages import Stream

STREAMS = [Stream.feed(b"\x01" * 20, b"\x02" * 32), Stream.topic_of(b"\x03" * 32)]


def name(i: int) -> bytes:
    return bytes([i]) * 32


def pump(tables: dict[int, InterestTable], edges: set[tuple[int, int]]) -> int:
    """Deliver announcements until nobody has anything to tell; returns how many were sent."""
    sent = 0
    for _ in range(10_000):
        moved = False
        for a, b in edges:
            for src, dst in ((a, b), (b, a)):
                entries = tables[src].announcements(name(dst))
                if entries:
                    tables[dst].announced(name(src), entries)
                    sent += len(entries)
                    moved = True
        if not moved:
            return sent
    raise AssertionError("interest did not settle")


def true_distance(
    n: int, stream: Stream, follows: dict[int, set[Stream]], adj: dict[int, set[int]]
) -> int | None:
    seen, queue = {n: 0}, deque([n])
    while queue:
        x = queue.popleft()
        if stream in follows[x]:
            return seen[x]
        for y in sorted(adj[x]):
            if y not in seen:
                seen[y] = seen[x] + 1
                queue.append(y)
    return None


events = st.lists(
    st.tuples(st.sampled_from(["follow", "unfollow", "cut"]), st.integers(0, 6), st.integers(0, 1)),
    max_size=12,
)


@settings(max_examples=120, deadline=None)
@given(
    st.integers(2, 7),
    st.sets(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=14),
    events,
    st.integers(2, 5),
)
def test_interest_converges_to_the_true_distances(
    count: int, raw_edges: set[tuple[int, int]], script: list[tuple[str, int, int]], max_hops: int
) -> None:
    edges = {(min(a, b), max(a, b)) for a, b in raw_edges if a != b and a < count and b < count}
    tables = {i: InterestTable(max_hops=max_hops) for i in range(count)}
    for a, b in edges:
        tables[a].add_peer(name(b))
        tables[b].add_peer(name(a))
    follows: dict[int, set[Stream]] = {i: set() for i in range(count)}
    for action, node, s in script:
        node %= count
        stream = STREAMS[s]
        if action == "follow" and stream not in follows[node]:
            follows[node].add(stream)
            tables[node].follow(stream)
        elif action == "unfollow" and stream in follows[node]:
            follows[node].discard(stream)
            tables[node].unfollow(stream)
        elif action == "cut" and edges:
            a, b = sorted(edges)[node % len(edges)]
            edges.discard((a, b))
            tables[a].remove_peer(name(b))
            tables[b].remove_peer(name(a))
        pump(tables, edges)
    adj: dict[int, set[int]] = {i: set() for i in range(count)}
    for a, b in edges:
        adj[a].add(b)
        adj[b].add(a)
    for n, table in tables.items():
        for stream in STREAMS:
            d = true_distance(n, stream, follows, adj)
            expected = d if d is not None and d <= max_hops else None
            assert table.distance(stream) == expected, (n, stream)
            assert table.follows(stream) == (stream in follows[n])
            # it pushes to every neighbour with a way to a follower that avoids this node, and
            # only to neighbours near enough to one
            targets = set(table.targets(stream, None))
            without_n = {x: ys - {n} for x, ys in adj.items() if x != n}
            for m in adj[n]:
                dm = true_distance(m, stream, follows, without_n)
                if dm is not None and dm < max_hops:
                    assert name(m) in targets, (n, m)
                if name(m) in targets:
                    near = true_distance(m, stream, follows, adj)
                    assert near is not None and near < max_hops
            assert targets <= {name(m) for m in adj[n]}


def test_announcements_are_coalesced_and_withdrawn() -> None:
    table = InterestTable()
    peer = name(9)
    table.add_peer(peer)
    stream = STREAMS[0]
    table.follow(stream)
    table.follow(stream)  # a second local follower changes nothing on the wire
    assert table.announcements(peer) == [InterestEntry(stream.kind, stream.owner, stream.topic, 0)]
    assert table.announcements(peer) == []
    table.unfollow(stream)
    assert table.announcements(peer) == []
    table.unfollow(stream)
    assert table.announcements(peer) == [
        InterestEntry(stream.kind, stream.owner, stream.topic, INTEREST_WITHDRAWN)
    ]
    assert not table.relays(stream, None)


def test_a_peer_may_announce_a_bounded_number_of_streams() -> None:
    table = InterestTable(max_streams=3)
    table.add_peer(name(1))
    entries = [InterestEntry(1, bytes([i]) * 20, b"\x00" * 32, 0) for i in range(5)]
    table.announced(name(1), entries)
    assert len(table.targets(Stream.feed(bytes([0]) * 20, b"\x00" * 32), None)) == 1
    assert table.ignored == 2
    assert table.statistics().relayed == 3
