"""The next-peer rule of retrieval and push syncing, against a naive model (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swarm.net.peer_choice import AttemptPlan, Avoidance, choose_next, closer_known

addresses = st.binary(min_size=4, max_size=4)


def model_next(target, own, peers, skip, farther_ok, avoided):
    """Sort every candidate by (avoided, XOR distance) and take the first."""
    d = lambda x: int.from_bytes(x, "big") ^ int.from_bytes(target, "big")  # noqa: E731
    candidates = [p for p in set(peers) if p not in skip and p != own and (farther_ok or d(p) < d(own))]
    candidates.sort(key=lambda p: (p in avoided, d(p)))
    return candidates[0] if candidates else None


@given(
    target=addresses,
    own=addresses,
    peers=st.lists(addresses, max_size=12),
    data=st.data(),
    farther_ok=st.booleans(),
)
def test_choose_next_matches_the_model(target, own, peers, data, farther_ok):
    skip = set(data.draw(st.lists(st.sampled_from(peers), max_size=4))) if peers else set()
    avoided = set(data.draw(st.lists(st.sampled_from(peers), max_size=4))) if peers else set()
    got = choose_next(target, own, peers, skip=skip, farther_ok=farther_ok, avoided=avoided)
    assert got == model_next(target, own, peers, skip, farther_ok, avoided)


def test_the_origin_may_ask_farther_a_forwarder_may_not():
    target, own = b"\x00\x00", b"\x00\x01"
    farther = b"\x80\x00"
    assert choose_next(target, own, [farther]) is None
    assert choose_next(target, own, [farther], farther_ok=True) == farther


def test_an_avoided_peer_is_asked_only_when_nothing_else_is_left():
    target, own = b"\x00", b"\xff"
    near, far = b"\x01", b"\x70"
    assert choose_next(target, own, [near, far], avoided={near}) == far
    assert choose_next(target, own, [near], avoided={near}) == near


@given(
    target=addresses,
    own=addresses,
    peers=st.lists(addresses, max_size=10, unique=True),
    max_attempts=st.integers(1, 6),
    farther_ok=st.booleans(),
)
def test_a_plan_asks_each_peer_once_closest_first_within_its_attempts(
    target, own, peers, max_attempts, farther_ok
):
    plan = AttemptPlan(target, own, max_attempts, farther_ok=farther_ok)
    asked = []
    while (peer := plan.next_peer(peers)) is not None:
        asked.append(peer)
        plan.finished(peer)
    d = lambda x: int.from_bytes(x, "big") ^ int.from_bytes(target, "big")  # noqa: E731
    eligible = sorted((p for p in peers if p != own and (farther_ok or d(p) < d(own))), key=d)
    assert asked == eligible[:max_attempts]
    assert not plan.in_flight and plan.attempts_left == max_attempts - len(asked)


def test_a_plan_never_asks_an_excluded_peer_and_counts_what_is_in_flight():
    plan = AttemptPlan(b"\x00", b"\xff", 5, exclude=frozenset({b"\x01"}))
    first = plan.next_peer([b"\x01", b"\x02", b"\x03"])
    second = plan.next_peer([b"\x01", b"\x02", b"\x03"])
    assert (first, second) == (b"\x02", b"\x03")
    assert plan.in_flight == {b"\x02", b"\x03"}
    plan.finished(b"\x02")
    assert plan.in_flight == {b"\x03"} and plan.next_peer([b"\x01", b"\x02", b"\x03"]) is None


def test_a_plan_needs_an_attempt():
    with pytest.raises(ValueError, match="max_attempts"):
        AttemptPlan(b"\x00", b"\x01", 0)


@given(
    st.lists(
        st.tuples(st.sampled_from(["timeout", "answer", "look"]), st.integers(0, 3), st.integers(0, 5)),
        max_size=40,
    )
)
def test_avoidance_matches_a_model(events):
    avoidance = Avoidance(period=10.0, limit=3)
    model: dict[int, float] = {}  # peer -> until, in insertion order of the last timeout
    now = 0.0
    for kind, peer, step in events:
        now += step
        key = bytes([peer])
        if kind == "timeout":
            avoidance.timed_out(key, now)
            model.pop(peer, None)
            model[peer] = now + 10.0
            while len(model) > 3:
                del model[next(iter(model))]
        elif kind == "answer":
            avoidance.answered(key)
            model.pop(peer, None)
        else:
            for p in [p for p, until in model.items() if until <= now]:
                del model[p]
            assert avoidance.avoided(now) == frozenset(bytes([p]) for p in model)


@given(target=addresses, node=addresses, known=st.lists(addresses, max_size=12))
def test_closer_known_counts_what_a_naive_scan_counts(target, node, known):
    d = lambda x: int.from_bytes(x, "big") ^ int.from_bytes(target, "big")  # noqa: E731
    expected = len({k for k in known if k != node and d(k) < d(node)})
    assert closer_known(target, node, known) == expected
