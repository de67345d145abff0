"""Hypothesis strategies and golden frames of the live-propagation messages (0x40..0x44), merged
into tests/test_messages.py's STRATEGIES and tests/test_codec.py's GOLDEN."""

from __future__ import annotations

from hypothesis import strategies as st

from streamer.messages import (
    MAX_CHUNK_DATA_SIZE,
    MAX_INTEREST_ENTRIES,
    MAX_TOPIC_PAYLOAD,
    FeedPush,
    InterestEntry,
    LiveHave,
    LiveInterest,
    LivePause,
    Message,
    StreamKind,
    TopicPush,
)

u8 = st.integers(0, 0xFF)
u64 = st.integers(0, 2**64 - 1)
owners = st.binary(min_size=20, max_size=20)
topics = st.binary(min_size=32, max_size=32)
entries = st.builds(InterestEntry, st.sampled_from(list(StreamKind)), owners, topics, u8)

LIVE_STRATEGIES: dict[type, st.SearchStrategy] = {
    LiveInterest: st.builds(LiveInterest, st.lists(entries, max_size=MAX_INTEREST_ENTRIES).map(tuple)),
    FeedPush: st.builds(FeedPush, owners, topics, u64, st.binary(max_size=MAX_CHUNK_DATA_SIZE)),
    TopicPush: st.builds(
        TopicPush,
        topics,
        owners,
        u64,
        u64,
        u64,
        st.binary(min_size=65, max_size=65),
        st.binary(max_size=MAX_TOPIC_PAYLOAD),
    ),
    LivePause: st.builds(
        LivePause, st.sampled_from(list(StreamKind)), owners, topics, st.sampled_from([0, 1])
    ),
    LiveHave: st.builds(LiveHave, st.sampled_from(list(StreamKind)), owners, topics, u64),
}

LIVE_TYPE_CODES = {
    "LiveInterest": 0x40,
    "FeedPush": 0x41,
    "TopicPush": 0x42,
    "LivePause": 0x43,
    "LiveHave": 0x44,
}

# (message, frame in hex): the layouts of docs/protocol.md section 5.11, byte for byte.
LIVE_GOLDEN: list[tuple[Message, str]] = [
    (
        LiveInterest((InterestEntry(1, b"\x11" * 20, b"\x22" * 32, 3),)),
        "00000039 40 0001 01" + " 11" * 20 + " 22" * 32 + " 03",
    ),
    (
        FeedPush(b"\x11" * 20, b"\x22" * 32, 5, b"abc"),
        "00000040 41" + " 11" * 20 + " 22" * 32 + " 0000000000000005 616263",
    ),
    (
        TopicPush(b"\x22" * 32, b"\x11" * 20, 0x5C19ADC000000001, 0, 9, b"\x33" * 65, b"hi"),
        "00000090 42"
        + " 22" * 32
        + " 11" * 20
        + " 5c19adc000000001 0000000000000000 0000000000000009"
        + " 33" * 65
        + " 6869",
    ),
    (
        LivePause(2, b"\x11" * 20, b"\x22" * 32, 1),
        "00000037 43 02" + " 11" * 20 + " 22" * 32 + " 01",
    ),
    (
        LiveHave(1, b"\x11" * 20, b"\x22" * 32, 7),
        "0000003e 44 01" + " 11" * 20 + " 22" * 32 + " 0000000000000007",
    ),
]
