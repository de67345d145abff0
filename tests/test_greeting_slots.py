"""GreetingSlots against a naive model: caps per address and in all, fair eviction when full."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swarm.net.greeting_slots import GreetingSlots, SlotGrant


def test_one_address_is_capped_and_a_fresh_address_gets_in_by_evicting_the_busiest() -> None:
    slots = GreetingSlots(total=4, per_host=3)
    assert [slots.admit("a").token for _ in range(4)] == [0, 1, 2, None]  # a: at its cap
    assert slots.admit("b") == SlotGrant(3)  # the house is full now: a 3, b 1
    assert slots.admit("c") == SlotGrant(4, evicted=0)  # a is busiest: its oldest gives way
    assert (slots.held("a"), slots.held("b"), slots.held("c")) == (2, 1, 1)
    assert slots.admit("b").token is None  # b holds 1, a 2: taking a's slot would not be fairer
    slots.release(1)
    slots.release(1)  # twice: ignored
    assert slots.admit("b") == SlotGrant(5)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="per_host"):
        GreetingSlots(total=2, per_host=3)
    with pytest.raises(ValueError, match="per_host"):
        GreetingSlots(total=2, per_host=0)


class Model:
    """The rule, written plainly: a list of (token, host), oldest first."""

    def __init__(self, total: int, per_host: int) -> None:
        self.total, self.per_host = total, per_host
        self.held: list[tuple[int, str]] = []
        self.next = 0

    def count(self, host: str) -> int:
        return sum(1 for _, h in self.held if h == host)

    def admit(self, host: str) -> SlotGrant:
        mine = self.count(host)
        if mine >= self.per_host:
            return SlotGrant(None)
        evicted = None
        if len(self.held) >= self.total:
            hosts = {h for _, h in self.held}
            most = max(self.count(h) for h in hosts)
            if most <= mine + 1:
                return SlotGrant(None)
            # of the busiest, the one whose oldest greeting is oldest: the first in the list
            evicted = next(t for t, h in self.held if self.count(h) == most)
            self.held = [(t, h) for t, h in self.held if t != evicted]
        self.held.append((self.next, host))
        self.next += 1
        return SlotGrant(self.next - 1, evicted)

    def release(self, token: int) -> None:
        self.held = [(t, h) for t, h in self.held if t != token]


HOSTS = st.sampled_from(["a", "b", "c", "d", "e"])
STEPS = st.lists(st.tuples(st.booleans(), HOSTS, st.integers(0, 40)), max_size=80)


@given(st.integers(1, 4), st.integers(0, 6), STEPS)
def test_slots_follow_the_model(per_host: int, extra: int, steps: list[tuple[bool, str, int]]) -> None:
    total = per_host + extra
    slots, model = GreetingSlots(total=total, per_host=per_host), Model(total, per_host)
    for admit, host, token in steps:
        if admit:
            # an address with nothing under way gets in unless every other holds one slot only
            sure = model.count(host) == 0 and any(model.count(h) > 1 for h in "abcde")
            sure |= len(model.held) < total and model.count(host) < per_host
            grant = slots.admit(host)
            assert grant == model.admit(host)
            assert grant.token is not None or not sure
        else:
            slots.release(token)
            model.release(token)
        assert len(slots) == len(model.held) <= total
        assert all(slots.held(h) == model.count(h) <= per_host for h in "abcde")
