"""The fuzz campaign at the size CI affords: damaged frames into the decoder, arbitrary messages
into the downstream session and the greeting. Only the exceptions their shells handle may come
out (`swarm.testing.fuzz.EXPECTED`); `benches/fuzz.py` runs the same drivers for longer."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamer.codec import encode
from streamer.identity import NodeIdentity
from streamer.messages import (
    ChunkDeliveries,
    ChunkDelivery,
    CursorsReply,
    DeliveredChunk,
    OfferedHashes,
    Unsubscribed,
)
from swarm.testing.fuzz import feed_decoder, feed_greeting, feed_session, mutate
from tests.test_messages import messages

IDENTITY = NodeIdentity.generate()
POOL = [bytes([i]) * 32 for i in range(8)] + [bytes(range(32))]  # some in the upstream's bins

# Messages an upstream sends, with fields drawn from small ranges so that sequences get deep into
# the session's rules instead of failing at the first field.
bins = st.integers(0, 3) | st.just(31)
ids = st.integers(1, 12)
upstream_messages = st.one_of(
    st.builds(CursorsReply, st.just(7) | st.integers(0, 8), st.lists(st.integers(0, 12), max_size=32)),
    st.builds(
        lambda b, live, start, length, hashes: OfferedHashes(
            b, live, start, start + length, tuple(hashes[: length + 1])
        ),
        bins,
        st.booleans(),
        ids,
        st.integers(0, 3),
        st.lists(st.sampled_from(POOL), max_size=4),
    ),
    st.builds(ChunkDelivery, bins, st.booleans(), ids, st.integers(0, 4), st.just(b"\x01" + bytes(7) + b"x")),
    st.builds(
        ChunkDeliveries,
        bins,
        st.booleans(),
        ids,
        st.lists(
            st.builds(DeliveredChunk, st.integers(0, 4), st.just(b"\x01" + bytes(7) + b"x")),
            min_size=1,
            max_size=3,
        ).map(tuple),
    ),
    st.builds(Unsubscribed, bins, st.booleans()),
)

fuzz = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fuzz
@given(st.lists(messages, max_size=5), st.integers(), st.data())
def test_damaged_frames_give_messages_or_a_protocol_error(msgs: list, seed: int, data: st.DataObject) -> None:
    blob = mutate(random.Random(seed), [encode(m) for m in msgs])
    splits = data.draw(st.lists(st.integers(0, len(blob)), max_size=6))
    outcomes: Counter[str] = Counter()
    decoded = feed_decoder(blob, splits, outcomes)
    if blob == b"".join(encode(m) for m in msgs):
        assert decoded == msgs and outcomes == Counter(clean=1)


@fuzz
@given(st.lists(upstream_messages, max_size=14))
def test_the_downstream_session_fed_anything(msgs: list) -> None:
    outcomes: Counter[str] = Counter()
    feed_session(msgs, outcomes)
    assert sum(outcomes.values()) == 1


@fuzz
@given(st.lists(messages, max_size=4))
def test_the_greeting_fed_anything(msgs: list) -> None:
    outcomes: Counter[str] = Counter()
    feed_greeting(msgs, outcomes, IDENTITY)
    assert sum(outcomes.values()) == 1
