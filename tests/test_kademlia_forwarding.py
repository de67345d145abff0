"""kademlia.forwarding: the next-hop rule, against a naive model written from its definition."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kademlia.forwarding import FORWARDING, Forwarding, LoadBook, get_forwarding, pick_peer


def a(bits: str) -> bytes:
    return int(bits, 2).to_bytes(1, "big")


def po(x: int, y: int) -> int:
    """Leading bits two 8-bit addresses share, counted bit by bit (the definition)."""
    n = 0
    for bit in range(7, -1, -1):
        if (x >> bit) & 1 != (y >> bit) & 1:
            break
        n += 1
    return n


def naive(target, own, peers, slack, loads, skip, farther_ok, avoided):
    """Straight from the docstring: candidates, fresh before avoided, then the rule."""
    cands = [p for p in peers if p != own and p not in skip]
    if not farther_ok:
        cands = [p for p in cands if p ^ target < own ^ target]
    fresh = [p for p in cands if p not in avoided]
    group = fresh or cands
    if not group:
        return None
    closest = min(group, key=lambda p: p ^ target)
    if slack is None or loads is None:
        return closest
    best_po = max(po(p, target) for p in group)
    near = [p for p in group if po(p, target) >= best_po - slack]
    return min(near, key=lambda p: (loads.get(p, (0, 0)), p ^ target))


addresses = st.integers(0, 255)


@given(
    target=addresses,
    own=addresses,
    peers=st.lists(addresses, max_size=12, unique=True),
    slack=st.sampled_from([None, 0, 1, 2, 3]),
    use_loads=st.booleans(),
    load_values=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 5)), min_size=12, max_size=12),
    skip_mask=st.integers(0, 4095),
    avoid_mask=st.integers(0, 4095),
    farther_ok=st.booleans(),
)
def test_pick_peer_matches_the_naive_model(
    target, own, peers, slack, use_loads, load_values, skip_mask, avoid_mask, farther_ok
) -> None:
    skip = {p for i, p in enumerate(peers) if skip_mask >> i & 1}
    avoided = {p for i, p in enumerate(peers) if avoid_mask >> i & 1}
    loads = dict(zip(peers, load_values, strict=False)) if use_loads else None
    book = None
    if loads is not None:
        book = LoadBook()
        # build the book's state so that its key equals the model's (in flight, last asked)
        book._in_flight = {bytes([p]): f for p, (f, _) in loads.items() if f}
        book._last = {bytes([p]): t for p, (_, t) in loads.items() if t}
    rule = Forwarding("x", slack)
    got = pick_peer(
        bytes([target]),
        bytes([own]),
        [bytes([p]) for p in peers],
        rule=rule,
        loads=book,
        skip={bytes([p]) for p in skip},
        farther_ok=farther_ok,
        avoided={bytes([p]) for p in avoided},
    )
    expected = naive(target, own, peers, slack, loads, skip, farther_ok, avoided)
    assert got == (None if expected is None else bytes([expected]))


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 7)), max_size=60))
def test_load_book_against_counters(ops) -> None:
    """started/finished against a dict of counts and a list of the order peers were asked."""
    book = LoadBook()
    flights: dict[bytes, int] = {}
    order: list[bytes] = []
    for start, k in ops:
        peer = bytes([k])
        if start:
            book.started(peer)
            flights[peer] = flights.get(peer, 0) + 1
            order.append(peer)
        else:
            book.finished(peer)
            flights[peer] = max(0, flights.get(peer, 0) - 1)
    for k in range(8):
        peer = bytes([k])
        assert book.in_flight(peer) == flights.get(peer, 0)
    asked = [bytes([k]) for k in range(8) if bytes([k]) in order]
    by_book = sorted(asked, key=lambda p: book.key(p)[1])
    by_model = sorted(asked, key=lambda p: max(i for i, q in enumerate(order) if q == p))
    assert by_book == by_model


def test_load_book_forgets_the_least_recently_asked_beyond_its_limit() -> None:
    book = LoadBook(limit=2)
    for k in (1, 2, 3):
        book.started(bytes([k]))
    assert book.key(bytes([1])) == (0, 0)
    assert book.in_flight(bytes([3])) == 1


# seed 003 Fig. 1: node 00000000 with 10000000 and 10000001 in bin 0; a target in 11xxxxxx is
# equally close to both (PO 1), so the requests alternate instead of all going to the closer one
def test_spread_alternates_between_equally_close_peers() -> None:
    own, p, q = a("00000000"), a("10000000"), a("10000001")
    book = LoadBook()
    picks = []
    for target in ("11000000", "11111111", "11010101", "11100000"):
        peer = pick_peer(a(target), own, [p, q], rule=FORWARDING["spread"], loads=book)
        assert peer is not None
        book.started(peer)
        book.finished(peer)
        picks.append(peer)
    assert picks == [p, q, p, q]  # the closer one first, then whoever waited longest
    closest = [pick_peer(a(t), own, [p, q], rule=FORWARDING["closest"], loads=book) for t in ("11000000",)]
    assert closest == [p]


def test_spread_prefers_fewer_requests_in_flight_over_recency() -> None:
    own, p, q = a("00000000"), a("10000000"), a("10000001")
    book = LoadBook()
    book.started(q)
    book.started(p)
    book.finished(p)  # p was asked last, but q still has one in flight
    assert pick_peer(a("11000000"), own, [p, q], rule=FORWARDING["spread"], loads=book) == p


def test_spread_never_takes_a_peer_of_lower_proximity_without_slack() -> None:
    own, deep, shallow = a("00000000"), a("11100000"), a("10000000")
    book = LoadBook()
    book.started(deep)  # busy, yet the only one at PO 3 to the target
    assert pick_peer(a("11111111"), own, [deep, shallow], rule=FORWARDING["spread"], loads=book) == deep
    assert pick_peer(a("11111111"), own, [deep, shallow], rule=FORWARDING["spread2"], loads=book) == shallow


def test_forwarding_names_and_errors() -> None:
    assert get_forwarding("spread1").slack == 1
    assert get_forwarding("closest").slack is None
    with pytest.raises(ValueError, match="unknown forwarding rule 'nearest': choose one of closest"):
        get_forwarding("nearest")
    with pytest.raises(ValueError, match="slack must be at least 0"):
        Forwarding("bad", -1)
