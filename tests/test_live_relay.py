"""The relay's judgement: new, repeat, not subscribed, invalid, equivocation; each counted once."""

from __future__ import annotations

import functools

from chunks.ethkey import Secp256k1Key
from chunks.feeds import make_update_v2, update_address
from streamer.messages import FeedPush, InterestEntry, TopicPush
from swarm.live.detector import DuplicateDetector
from swarm.live.interest import InterestTable
from swarm.live.loss import LOCAL, LossTable
from swarm.live.messages import Stream, make_topic_push
from swarm.live.receiver import TopicReceiver
from swarm.live.relay import Outcome, Relay
from swarm.live.seqno import Status, seqno_init
from swarm.live.window import GenerationWindow

PEER, OTHER = b"\x01" * 32, b"\x02" * 32
TOPIC = b"\x33" * 32
NOW = 1_700_000_000.0
NS = int(NOW * 1e9)


@functools.cache
def key(n: int = 0) -> Secp256k1Key:
    return Secp256k1Key(bytes([n + 1]) * 32)


def feed_push(index: int, payload: bytes = b"", signer: int = 0, owner: int = 0) -> FeedPush:
    soc = make_update_v2(key(signer), TOPIC, index, payload or f"update {index}".encode())
    return FeedPush(key(owner).owner, TOPIC, index, soc.data)


def topic_push(
    counter: int, *, chain: int = 0, signer: int = 0, time: int = NS, payload: bytes = b"hi"
) -> TopicPush:
    return make_topic_push(key(signer), TOPIC, seqno_init(NS) + counter, chain, time, payload)


def relay_following(
    *streams: Stream,
    lookup: dict[bytes, bytes] | None = None,
    evidence: list[tuple[bytes, ...]] | None = None,
) -> Relay:
    interest = InterestTable()
    for peer in (PEER, OTHER):
        interest.add_peer(peer)
    for stream in streams:
        interest.follow(stream)
    held = lookup or {}
    kept = evidence if evidence is not None else []
    return Relay(interest, LossTable(), lookup=held.get, evidence=lambda *pair: kept.append(pair))


FEED = Stream.feed(key(0).owner, TOPIC)
TOPIC_STREAM = Stream.topic_of(TOPIC)


def outcome(relay: Relay, msg: FeedPush | TopicPush, peer: bytes | None = PEER) -> Outcome:
    return relay.judge(msg, peer, peer.hex() if peer else LOCAL, NOW).outcome


def test_new_then_repeat_via_a_second_path() -> None:
    relay = relay_following(FEED)
    assert outcome(relay, feed_push(0)) is Outcome.NEW
    assert outcome(relay, feed_push(0), OTHER) is Outcome.REPEAT
    assert outcome(relay, feed_push(1), OTHER) is Outcome.NEW
    assert relay.loss.count(OTHER.hex(), "repeat") == 1 and relay.loss.count(PEER.hex(), "repeat") == 0
    assert (relay.received, relay.accepted) == (3, 2)


def test_a_stream_nobody_wants_is_not_subscribed_but_a_local_publish_is_judged() -> None:
    relay = relay_following()
    assert outcome(relay, feed_push(0)) is Outcome.NOT_SUBSCRIBED
    assert relay.loss.count(PEER.hex(), "not_subscribed") == 1
    assert outcome(relay, feed_push(0), None) is Outcome.NEW  # published here
    relay.interest.announced(OTHER, [InterestEntry(FEED.kind, FEED.owner, FEED.topic, 0)])
    assert outcome(relay, feed_push(1)) is Outcome.NEW  # now relayed from PEER to OTHER
    assert outcome(relay, feed_push(2), OTHER) is Outcome.NOT_SUBSCRIBED  # not back to its only taker


def test_forged_and_malformed_messages_are_invalid_and_leave_no_trace() -> None:
    relay = relay_following(FEED, TOPIC_STREAM)
    forged = feed_push(0, signer=1, owner=0)  # claims key 0's feed, signed by key 1
    assert outcome(relay, forged) is Outcome.INVALID
    assert outcome(relay, FeedPush(FEED.owner, TOPIC, 0, b"\x00" * 50)) is Outcome.INVALID  # too short
    assert outcome(relay, feed_push(0)) is Outcome.NEW  # the real update 0 is not taken for a repeat
    good = topic_push(1)
    bad_signature = TopicPush(TOPIC, key(0).owner, good.seq, 0, good.time, key(1).sign(b"other"), b"hi")
    assert outcome(relay, bad_signature) is Outcome.INVALID
    assert outcome(relay, topic_push(0)) is Outcome.INVALID  # counter 0
    assert outcome(relay, topic_push(3, chain=5)) is Outcome.INVALID  # a chain inside a frame
    assert outcome(relay, good) is Outcome.NEW
    assert relay.loss.count(PEER.hex(), "invalid") == 5


def test_broken_numbering_is_counted_not_raised() -> None:
    relay = relay_following(TOPIC_STREAM)
    first_of_next_frame = seqno_init(NS + 3 * (1 << 33)) + 1
    assert outcome(relay, topic_push(5)) is Outcome.NEW
    # chained to a number above the latest seen and past it: straddles the open gap's start
    weird = make_topic_push(key(0), TOPIC, first_of_next_frame, seqno_init(NS) + 2, NS, b"x")
    assert outcome(relay, weird) is Outcome.INVALID
    assert relay.loss.count(PEER.hex(), "invalid") == 1


def test_a_second_different_update_at_one_index_is_an_equivocation() -> None:
    first = feed_push(4, b"the truth")
    address = update_address(FEED.owner, TOPIC, 4)
    held = {address: first.data}
    evidence: list[tuple[bytes, ...]] = []
    relay = relay_following(FEED, lookup=held, evidence=evidence)
    other = feed_push(4, b"a lie")
    assert outcome(relay, other) is Outcome.EQUIVOCATION  # the store holds the first one
    assert evidence == [(address, first.data, other.data)]  # the signed pair is kept
    assert outcome(relay, first) is Outcome.NEW
    assert outcome(relay, other, OTHER) is Outcome.EQUIVOCATION  # a repeat that differs
    assert outcome(relay, first, OTHER) is Outcome.REPEAT
    assert relay.loss.count(PEER.hex(), "equivocations") == 1
    assert relay.loss.count(OTHER.hex(), "equivocations") == 1


def test_messages_older_than_the_trailing_edge_are_repeats() -> None:
    relay = relay_following(TOPIC_STREAM)
    for t in (NOW, NOW + 70, NOW + 140, NOW + 210):
        relay.rotate(t)
    assert relay.detectors.trailing_time > NOW
    assert outcome(relay, topic_push(1)) is Outcome.REPEAT


def test_relay_memory_is_bounded_however_many_publishers_pass() -> None:
    window: GenerationWindow[Stream, DuplicateDetector] = GenerationWindow(
        generations=3, max_count=50, min_interval=10, max_interval=60, now=NOW
    )
    interest = InterestTable()
    interest.add_peer(PEER)
    interest.follow(TOPIC_STREAM)
    relay = Relay(interest, LossTable(), window=window)
    for i in range(400):
        publisher = Secp256k1Key((i + 7).to_bytes(32, "big"))
        now = NOW + i * 0.5  # a new publisher every half second
        msg = make_topic_push(publisher, TOPIC, seqno_init(int(now * 1e9)) + 1, 0, int(now * 1e9), b"x")
        assert relay.judge(msg, PEER, PEER.hex(), now).outcome is Outcome.NEW
        assert len(relay.detectors) <= 3 * (50 + 20) + 1


def test_receiver_classifies_per_publisher() -> None:
    receiver = TopicReceiver()
    assert receiver.classify(topic_push(1), NOW).status is Status.FIRST
    assert receiver.classify(topic_push(2), NOW).status is Status.NEXT
    assert receiver.classify(topic_push(5), NOW).lost == 2
    assert receiver.classify(topic_push(1, signer=1), NOW).status is Status.FIRST  # another publisher
    assert receiver.classify(topic_push(4), NOW).status is Status.REPEAT
