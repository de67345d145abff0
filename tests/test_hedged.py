"""The hedged asking of peers (`swarm.net.hedged.first_success`) with peers that answer, fail or hang.

The peers are doubles (what they answer and when); the clock is trio's MockClock, so the times
asserted are exact and cost nothing. Every test runs twice: with attempts as one call, and in two
steps (``start``: the request sent, its answer awaited later), where the first attempt runs
without a nursery until the hedge delay passes; the outcomes and times must be the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import trio
import trio.testing

from kademlia.forwarding import FORWARDING
from swarm.net.hedged import AttemptFailed, HedgePolicy, NoPeerDelivered, first_success
from swarm.net.peer_choice import AttemptPlan, Avoidance, LoadBook

TARGET = b"\x00"
OWN = b"\xff"


@dataclass
class FakePeer:
    overlay: bytes
    behaviour: str  # "found", "missing" or "hang"
    delay: float = 0.01
    asked_at: list[float] = field(default_factory=list)
    cancelled: bool = False

    async def ask(self, deadline: float) -> str:
        self.asked_at.append(trio.current_time())
        try:
            if self.behaviour == "hang":
                await trio.sleep_until(deadline)
                raise AttemptFailed("no answer", timed_out=True)
            await trio.sleep(self.delay)
        except trio.Cancelled:
            self.cancelled = True
            raise
        if self.behaviour == "missing":
            raise AttemptFailed(f"{self.overlay.hex()} has not got it")
        return f"data from {self.overlay.hex()}"

    def start(self) -> FakeStarted:
        self.asked_at.append(trio.current_time())
        return FakeStarted(self, trio.current_time() + self.delay)


@dataclass
class FakeStarted:
    """A request out to ``peer``, answered at ``answer_at`` (whoever awaits it, however often)."""

    peer: FakePeer
    answer_at: float
    closed: bool = False

    async def outcome(self) -> str:
        try:
            if self.peer.behaviour == "hang":
                await trio.sleep_forever()
            await trio.sleep_until(self.answer_at)
        except trio.Cancelled:
            self.peer.cancelled = True
            raise
        if self.peer.behaviour == "missing":
            raise AttemptFailed(f"{self.peer.overlay.hex()} has not got it")
        return f"data from {self.peer.overlay.hex()}"

    def close(self) -> None:
        self.closed = True


DEFAULT = HedgePolicy(timeout=10, hedge_after=0.5)


TWO_STEPS = {"on": False}


@pytest.fixture(autouse=True, params=["one call", "two steps"])
def attempts_in(request):
    TWO_STEPS["on"] = request.param == "two steps"
    return request.param


async def run(peers, *, max_attempts=5, policy=DEFAULT, avoidance=None, start=None):
    plan = AttemptPlan(TARGET, OWN, max_attempts)
    by_overlay = {p.overlay: p for p in peers}
    if start is None and TWO_STEPS["on"]:
        start = FakePeer.start
    began = trio.current_time()
    try:
        peer, value = await first_success(
            plan, lambda: by_overlay, lambda p, d: p.ask(d), policy=policy, avoidance=avoidance, start=start
        )
    finally:
        elapsed = trio.current_time() - began
    return peer, value, elapsed, plan


@pytest.fixture
def autojump_clock():
    return trio.testing.MockClock(autojump_threshold=0)


async def test_a_slow_first_attempt_carried_into_the_race_can_still_win(autojump_clock):
    slow, slower = FakePeer(b"\x01", "found", delay=0.7), FakePeer(b"\x02", "found", delay=1.0)
    started: list[FakeStarted] = []

    def start(peer: FakePeer) -> FakeStarted:
        started.append(peer.start())
        return started[-1]

    peer, value, elapsed, plan = await run([slow, slower], start=start)
    # the first request stays out past the hedge delay; its answer at 0.7 s wins, not a resend
    assert peer is slow and value == "data from 01" and elapsed == pytest.approx(0.7)
    assert slow.asked_at == [0.0] and slower.asked_at == [pytest.approx(0.5)]
    assert slower.cancelled and started[0].closed and not plan.in_flight


async def test_a_first_attempt_that_cannot_start_at_once_runs_as_one_call(autojump_clock):
    near, far = FakePeer(b"\x01", "missing"), FakePeer(b"\x02", "found")
    peer, _, elapsed, plan = await run([near, far], start=lambda p: None)
    assert peer is far and plan.tried == [b"\x01", b"\x02"] and elapsed == pytest.approx(0.02)


async def test_a_first_attempt_that_fails_to_start_moves_on_at_once(autojump_clock):
    near, far = FakePeer(b"\x01", "found"), FakePeer(b"\x02", "found")

    def start(peer: FakePeer) -> FakeStarted:
        raise AttemptFailed(f"{peer.overlay.hex()} disconnected")

    peer, _, elapsed, plan = await run([near, far], start=start)
    assert peer is far and plan.tried == [b"\x01", b"\x02"] and elapsed == pytest.approx(0.01)
    assert not near.asked_at and not plan.in_flight


async def test_a_miss_moves_on_to_the_next_closest_at_once(autojump_clock):
    near, mid, far = FakePeer(b"\x01", "missing"), FakePeer(b"\x02", "missing"), FakePeer(b"\x04", "found")
    peer, value, elapsed, plan = await run([far, mid, near])
    assert peer is far and value == "data from 04"
    assert plan.tried == [b"\x01", b"\x02", b"\x04"]
    assert elapsed == pytest.approx(0.03)  # three answers in turn, no waiting in between


async def test_a_silent_peer_gets_a_parallel_attempt_after_the_hedge_delay(autojump_clock):
    hung, good = FakePeer(b"\x01", "hang"), FakePeer(b"\x02", "found")
    avoidance = Avoidance()
    peer, _, elapsed, _ = await run([hung, good], avoidance=avoidance)
    assert peer is good
    assert good.asked_at == [pytest.approx(0.5)]
    assert elapsed == pytest.approx(0.51)
    assert hung.cancelled  # the first good answer cancels the rest
    assert avoidance.avoided(trio.current_time()) == frozenset()  # silent for 0.51 s only: not slow yet


async def test_two_hung_peers_cost_two_hedge_delays_and_are_avoided_next_time(autojump_clock):
    peers = [FakePeer(b"\x01", "hang"), FakePeer(b"\x02", "hang"), FakePeer(b"\x04", "found", delay=2.0)]
    avoidance = Avoidance(period=30)
    peer, _, elapsed, _ = await run(peers, avoidance=avoidance)
    assert peer is peers[2] and elapsed == pytest.approx(3.0)
    # silent 3.0 and 2.5 s into a request that ended: both are avoided for a while ...
    assert avoidance.avoided(trio.current_time()) == {b"\x01", b"\x02"}
    peers[2].delay = 0.01
    peer, _, elapsed, plan = await run(peers, avoidance=avoidance)
    # ... so the next request asks the good peer first and is not delayed at all
    assert peer is peers[2] and plan.tried == [b"\x04"] and elapsed == pytest.approx(0.01)


async def test_nothing_waits_past_the_deadline(autojump_clock):
    peers = [FakePeer(bytes([i]), "hang") for i in (1, 2, 4)]
    with pytest.raises(NoPeerDelivered) as info:
        await run(peers, policy=HedgePolicy(timeout=3, hedge_after=0.5))
    assert info.value.timed_out and info.value.asked == 3
    assert trio.current_time() == pytest.approx(3.0)


async def test_every_miss_is_reported_without_a_timeout(autojump_clock):
    peers = [FakePeer(bytes([i]), "missing") for i in (1, 2)]
    with pytest.raises(NoPeerDelivered) as info:
        await run(peers)
    assert not info.value.timed_out and info.value.asked == 2
    assert "01 has not got it" in str(info.value) and "02 has not got it" in str(info.value)


async def test_attempts_are_bounded(autojump_clock):
    peers = [FakePeer(bytes([i]), "missing") for i in (1, 2, 4, 8)] + [FakePeer(b"\x10", "found")]
    with pytest.raises(NoPeerDelivered) as info:
        await run(peers, max_attempts=3)
    assert info.value.asked == 3 and not peers[3].asked_at and not peers[4].asked_at


async def test_no_candidate_is_reported_as_nobody_asked(autojump_clock):
    with pytest.raises(NoPeerDelivered) as info:
        await run([])
    assert info.value.asked == 0 and not info.value.timed_out


async def test_concurrent_requests_spread_over_equally_close_peers_and_leave_no_load(autojump_clock):
    """Two requests at once: the second goes to the equally close peer the first is not busy with;
    a hedged attempt cancelled by the winner is counted finished too."""
    closer, twin = FakePeer(b"\x02", "found", delay=1.0), FakePeer(b"\x03", "found", delay=1.0)
    by_overlay = {p.overlay: p for p in (closer, twin)}
    loads = LoadBook()
    plans = [AttemptPlan(TARGET, OWN, 5, rule=FORWARDING["spread"], loads=loads) for _ in range(2)]
    winners = []

    async def one(plan):
        peer, _ = await first_success(plan, lambda: by_overlay, lambda p, d: p.ask(d), policy=DEFAULT)
        winners.append(peer)

    async with trio.open_nursery() as nursery:
        for plan in plans:
            nursery.start_soon(one, plan)
    assert {plans[0].tried[0], plans[1].tried[0]} == {b"\x02", b"\x03"}  # one each, in either order
    assert [len(plan.tried) for plan in plans] == [2, 2]  # hedged after 0.5 s; the winner cancels the other
    assert loads.in_flight(b"\x02") == loads.in_flight(b"\x03") == 0
    assert sorted(p.overlay for p in winners) == [b"\x02", b"\x03"]
