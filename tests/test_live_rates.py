"""Issue 30 item 6: live traffic has a rate. A peer's pushes and control words pass token buckets
(`swarm.live.ratelimit`, properties below against a naive model); over its rate a message is
dropped by itself, and a peer that keeps at it is dropped as OVERLOADED while an honest peer is
still served (in-process nodes over loopback TCP); interest churn reaches a neighbour coalesced."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from streamer.errors import RemoteProtocolError
from streamer.messages import INTEREST_WITHDRAWN, GoodbyeCode, InterestEntry, LiveInterest, StreamKind
from swarm.live.config import LiveConfig
from swarm.live.messages import Stream
from swarm.live.ratelimit import PeerRates, RateLimits, TokenBucket
from swarm.live.report import loss_document
from swarm.live.seqno import Status
from swarm.testing import wait_for
from tests.test_live_service import FAST, TOPIC, interest_reached, line, next_message

PEER = b"\x01" * 32

times = st.lists(st.floats(0, 100, allow_nan=False), min_size=1, max_size=200).map(sorted)


@given(times, st.floats(0.5, 50), st.integers(1, 20))
def test_a_bucket_never_allows_more_than_burst_plus_rate_times_time(
    stamps: list[float], rate: float, burst: int
) -> None:
    bucket = TokenBucket(rate, burst, stamps[0])
    allowed = [t for t in stamps if bucket.take(t)]
    # the naive bound: every window [a, b] of the allowed holds at most burst + rate * (b - a)
    for i, start in enumerate(allowed):
        for j in range(i, len(allowed)):
            assert j - i + 1 <= burst + rate * (allowed[j] - start) + 1e-6


@given(st.floats(0.5, 50), st.integers(1, 20), st.integers(1, 100))
def test_a_peer_within_its_rate_is_never_throttled(rate: float, burst: int, count: int) -> None:
    rates = PeerRates(RateLimits(rate=rate, burst=burst, abuse=0))
    assert all(rates.allow(PEER, i / rate) for i in range(count))
    assert rates.throttled == 0


def test_over_the_rate_is_throttled_then_abuse_is_overloaded() -> None:
    rates = PeerRates(RateLimits(rate=10, burst=20, window=10, abuse=30))
    allowed = [rates.allow(PEER, 0.0) for _ in range(50)]
    assert allowed.count(True) == 20 and rates.throttled == 30  # the burst, then nothing
    assert rates.allow(b"\x02" * 32, 0.0)  # another peer has its own bucket
    assert rates.allow(PEER, 0.1)  # a tenth of a second refills one
    with pytest.raises(RemoteProtocolError, match="throttled") as raised:
        rates.allow(PEER, 0.1)
    assert raised.value.code == GoodbyeCode.OVERLOADED
    rates.forget(PEER)
    assert len(rates) == 1 and rates.allow(PEER, 0.1)
    big = PeerRates(RateLimits(rate=10, burst=20))
    assert big.allow(PEER, 0.0, cost=21) and not big.allow(PEER, 0.0)  # costs at most the burst


TIGHT = LiveConfig(follower=FAST.follower, push_limits=RateLimits(rate=100, burst=200, window=10, abuse=400))


async def test_a_flooding_peer_is_dropped_while_an_honest_one_is_served(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with (
            line(tmp_path, 3, live=TIGHT) as (attacker, node, honest),
            node.live.subscribe(TOPIC) as subscription,
            trio.open_nursery() as nursery,
        ):
            honest_messages: list[tuple[bytes, Status]] = []

            async def read() -> None:  # a subscriber that keeps up
                events = subscription.events()
                while True:
                    message = await next_message(events)
                    if message.message.owner == honest.live.key.owner:
                        honest_messages.append((message.message.payload, message.verdict.status))

            nursery.start_soon(read)
            await interest_reached(attacker, subscription.stream)
            await interest_reached(honest, subscription.stream)
            flooding = node.peers[attacker.overlay]
            for i in range(1200):  # valid, signed messages, as fast as the link sends them
                attacker.live.publish_topic(TOPIC, b"flood %d" % i)
                if i % 200 == 0:
                    honest.live.publish_topic(TOPIC, b"honest %d" % (i // 200))
                if i % 20 == 0:
                    await trio.sleep(0)
            await wait_for(lambda: flooding.conn.closed, timeout=20)  # dropped: OVERLOADED
            assert node.live.statistics().throttled >= 400
            assert loss_document(node.overlay, node.live.statistics())["traffic"]["throttled"] >= 400
            assert honest.overlay in node.peers
            for i in range(6, 9):
                honest.live.publish_topic(TOPIC, b"honest %d" % i)
            await wait_for(lambda: len(honest_messages) == 9, timeout=20)
            assert [payload for payload, _ in honest_messages] == [b"honest %d" % i for i in range(9)]
            assert [status for _, status in honest_messages][1:] == [Status.NEXT] * 8
            nursery.cancel_scope.cancel()


async def test_interest_churn_reaches_a_neighbour_coalesced(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with line(tmp_path, 3) as (churner, node, neighbour):
            stream = Stream(StreamKind.TOPIC, b"\x00" * 20, b"\x77" * 32)
            link = node.live._links[neighbour.overlay]
            peer = node.peers[churner.overlay]
            await trio.sleep(0.5)
            before = link.announcements
            for i in range(400):  # subscribe, withdraw, subscribe ... as they arrive from the wire
                hops = INTEREST_WITHDRAWN if i % 2 else 0
                await trio.sleep(0.001)  # the node's link task may run in between
                await peer.dispatch(
                    LiveInterest((InterestEntry(stream.kind, stream.owner, stream.topic, hops),))
                )
            await peer.dispatch(LiveInterest((InterestEntry(stream.kind, stream.owner, stream.topic, 0),)))
            await wait_for(lambda: neighbour.live.interest.distance(stream) == 2, timeout=10)
            assert link.announcements - before <= 5  # not 401
            assert not peer.conn.closed
