"""Space formats: timeframe vectors and their compact encoding, messages, member list entries."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swarm.spaces.messages import (
    MAX_MESSAGE_BYTES,
    InvalidSpaceMessage,
    Kind,
    MemberEntry,
    SpaceMessage,
    compose,
    decode_member_entry,
    decode_message,
    encode_member_entry,
    encode_message,
    message_topic,
)
from swarm.spaces.timeframe import (
    MAX_MEMBERS,
    MAX_TIMEFRAME_BYTES,
    InvalidTimeframe,
    apply_delta,
    decode_delta,
    delta_between,
    encode_delta,
    full_vector_size,
    lamport,
    merge,
    read_varint,
    varint,
)

timeframes = st.lists(st.integers(-1, 2**40), max_size=40).map(tuple)


@st.composite
def growth(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(previous, current, own): a writer's timeframe that grew from its previous message's."""
    previous = draw(timeframes)
    size = draw(st.integers(len(previous), len(previous) + 8))
    own = draw(st.integers(0, max(size, 1) - 1)) if size else 0
    current = [
        (previous[i] if i < len(previous) else -1) + draw(st.sampled_from([0, 0, 1, 2, 1000, 2**33]))
        for i in range(max(size, own + 1))
    ]
    return previous, tuple(current), own


@given(growth())
def test_a_delta_encodes_and_applies_back_to_the_timeframe(case: tuple) -> None:
    previous, current, own = case
    seq = max(current[own], -1) + 1
    current = (*current[:own], seq - 1, *current[own + 1 :])
    delta = delta_between(previous, current, own)
    data = encode_delta(delta)
    decoded, end = decode_delta(data + b"tail")
    assert decoded == delta and end == len(data)
    rebuilt = apply_delta(previous, decoded, own, seq)
    width = max(len(rebuilt), len(current))
    assert rebuilt + (-1,) * (width - len(rebuilt)) == current + (-1,) * (width - len(current))
    assert len(data) <= MAX_TIMEFRAME_BYTES


def test_the_encoder_takes_the_shorter_form() -> None:
    few = ((3, 1),)
    assert encode_delta(few) == bytes([2, 3, 0])  # sparse: n=1, index 3, increase 1
    many = tuple((i, 1) for i in range(16))
    dense = encode_delta(many)
    assert dense[0] & 1 and len(dense) == 1 + 2 + 16  # bitmap: header, 2 bytes, one byte each
    assert encode_delta(()) == b"\x00"  # an unchanged timeframe costs one byte


def test_lamport_counts_covered_messages_plus_one() -> None:
    # the seed's worked example: A:100 with [A:99, B:100], B:100 with [A:99, B:99]
    assert lamport((99, 100)) == 202
    assert lamport((99, 99)) == 201
    assert lamport(()) == 1
    assert merge((1, 5), (3,), (0, 0, 7)) == (3, 5, 7)


def test_full_vector_costs_every_entry_the_delta_only_the_changed() -> None:
    timeframe = tuple(range(1000, 1032))
    dxos = full_vector_size(timeframe, own=0, key_size=32)
    by_index = full_vector_size(timeframe, own=0, key_size=0)
    delta = encode_delta(delta_between(timeframe, (*timeframe[:5], 2000, *timeframe[6:]), own=0))
    assert dxos == 31 * (2 + 34 + 1 + 2)
    assert by_index < dxos and len(delta) == 4


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"\x80", "truncated varint"),
        (b"\x81\x00", "trailing zero"),
        (b"\xff" * 9 + b"\x7f", "over 64 bits"),
        (varint(MAX_MEMBERS << 1), "at most"),
        (b"\x02\x80\x02\x00", "past the limit"),  # sparse, one entry at index 256
        (b"\x03\x00", "ending in a zero byte"),
        (b"\x05\x01", "truncated bitmap"),
        (varint(33 << 1 | 1) + b"\x01" * 33, "1..32 expected"),
    ],
)
def test_bad_timeframe_bytes_are_refused_with_a_reason(data: bytes, problem: str) -> None:
    with pytest.raises(InvalidTimeframe, match=problem):
        decode_delta(data)


def test_a_delta_naming_the_writers_own_entry_or_going_back_is_refused() -> None:
    with pytest.raises(InvalidTimeframe, match="own entry is implicit"):
        apply_delta((), ((2, 1),), own=2, seq=0)
    with pytest.raises(ValueError, match="only grow"):
        delta_between((5, 5), (5, 4), own=0)


@given(st.integers(0, 2**64 - 1))
def test_varints_round_trip(value: int) -> None:
    assert read_varint(varint(value) + b"x", 0) == (value, len(varint(value)))


messages = st.one_of(
    st.builds(SpaceMessage, st.just(Kind.SAY), st.just(()), st.integers(0, 2**48), text=st.text(min_size=1)),
    st.builds(
        SpaceMessage,
        st.just(Kind.SET),
        st.just(((0, 3), (7, 1))),
        st.integers(0, 2**48),
        key=st.text(min_size=1, max_size=40),
        value=st.text(max_size=40),
    ),
    st.builds(SpaceMessage, st.just(Kind.HEARTBEAT), st.just(((1, 9),)), st.integers(0, 2**48)),
)


@given(messages)
def test_messages_round_trip(message: SpaceMessage) -> None:
    assert decode_message(encode_message(message)) == message


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (b"\x01\x01\x00", "too short"),
        (b"\x02\x01\x00\x00hi", "version 2"),
        (b"\x01\x09\x00\x00hi", "unknown message kind"),
        (b"\x01\x00\x00\x00x", "heartbeat has no body"),
        (b"\x01\x01\x00\x00\xff\xfe", "not UTF-8"),
        (b"\x01\x02\x00\x00\x05ab", "a key of 5 bytes"),
        (b"\x01\x01\x00\x80", "bad timeframe"),
        (b"\x01\x01" + b"\x00" * MAX_MESSAGE_BYTES, "at most"),
    ],
)
def test_bad_messages_are_refused_with_a_reason(payload: bytes, problem: str) -> None:
    with pytest.raises(InvalidSpaceMessage, match=problem):
        decode_message(payload)


def test_writing_refuses_what_does_not_fit_or_says_nothing() -> None:
    with pytest.raises(InvalidSpaceMessage, match="at most 4096"):
        encode_message(SpaceMessage(Kind.SAY, (), text="x" * 4096))
    with pytest.raises(InvalidSpaceMessage, match="empty"):
        encode_message(SpaceMessage(Kind.SAY, ()))
    with pytest.raises(InvalidSpaceMessage, match="only grow"):
        compose(0, (3, 3), (3, 2), Kind.HEARTBEAT)
    payload = compose(1, (4, 0), (6, 0, 2), Kind.SET, key="k", value="v", written_at=5)
    assert decode_message(payload) == SpaceMessage(Kind.SET, ((0, 2), (2, 3)), 5, key="k", value="v")


def test_member_entries_round_trip_and_only_the_genesis_names_the_space() -> None:
    owner = bytes(range(20))
    assert decode_member_entry(encode_member_entry(MemberEntry(owner, "chat")), 0) == MemberEntry(
        owner, "chat"
    )
    assert decode_member_entry(encode_member_entry(MemberEntry(owner)), 3) == MemberEntry(owner)
    with pytest.raises(InvalidSpaceMessage, match="genesis names"):
        decode_member_entry(encode_member_entry(MemberEntry(owner)), 0)
    with pytest.raises(InvalidSpaceMessage, match="only the genesis"):
        decode_member_entry(encode_member_entry(MemberEntry(owner, "x")), 1)
    with pytest.raises(InvalidSpaceMessage, match="not a member entry"):
        decode_member_entry(b"junk" * 10, 1)
    assert message_topic(owner) != message_topic(bytes(20))
