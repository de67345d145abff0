"""raims' time-framed sequence numbers: the worked example, the classification table, and a
publisher run with losses, repeats and restarts judged against the truth."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from swarm.live.seqno import (
    PublisherSequence,
    SeqState,
    Status,
    Verdict,
    classify,
    previous_of,
    seqno_counter,
    seqno_frame,
    seqno_init,
    seqno_time,
    time_frame,
)

FRAME_NS = 1 << 33
T0 = 1659131646 * 10**9  # raims doc/loss.adoc


def test_raims_worked_example() -> None:
    assert T0 == 0x17066B710B706C00
    assert seqno_init(T0) == 0x5C19ADC000000000
    assert seqno_init(T0) + 1 == 0x5C19ADC000000001
    seq, chain = PublisherSequence().next(b"t" * 32, T0)
    assert (seq, chain) == (0x5C19ADC000000001, 0)
    assert seqno_frame(seq) == time_frame(T0) and seqno_counter(seq) == 1
    assert seqno_time(seq) == (T0 >> 33) << 33


def test_previous_of_gives_the_detector_its_edge() -> None:
    base = seqno_init(T0)
    assert previous_of(base + 5, 0) == base + 4
    assert previous_of(base + 1, 0) is None  # a stream's first message
    assert previous_of(base + 1, base - 7) == base - 7  # a frame change carries the chain


def test_classification_table() -> None:
    f = seqno_init(T0)
    g = seqno_init(T0 + 3 * FRAME_NS)
    state = SeqState(f + 5, T0)
    later = T0 + 3 * FRAME_NS
    assert classify(None, f + 5, 0, T0)[0] == Verdict(Status.FIRST)
    assert classify(state, f + 6, 0, T0 + 1)[0] == Verdict(Status.NEXT)
    assert classify(state, f + 9, 0, T0 + 1)[0] == Verdict(Status.SKIP, 3, (f + 6, f + 8))
    assert classify(state, f + 5, 0, T0)[0] == Verdict(Status.REPEAT)
    assert classify(state, f + 2, 0, T0)[0] == Verdict(Status.REPEAT)
    assert classify(state, g + 1, f + 5, later)[0] == Verdict(Status.NEXT)  # chained frame change
    assert classify(state, g + 1, f + 8, later)[0] == Verdict(Status.SKIP, 3, (f + 6, f + 8))  # chained
    assert classify(state, g + 1, 0, later)[0] == Verdict(Status.CYCLE)  # restarted
    assert classify(state, g + 4, 0, later)[0] == Verdict(Status.LOSS_UNKNOWN)  # missed the chain
    assert classify(state, g + 1, seqno_init(T0 + FRAME_NS) + 9, later)[0] == Verdict(Status.LOSS_UNKNOWN)
    assert classify(SeqState(g + 4, later), f + 9, 0, T0)[0] == Verdict(Status.REPEAT)  # late, older frame
    assert classify(state, f + 1, 0, T0 + 10)[0] == Verdict(Status.CYCLE)  # restart in the same frame


def test_a_repeat_keeps_the_state() -> None:
    state = SeqState(seqno_init(T0) + 5, T0)
    assert classify(state, seqno_init(T0) + 3, 0, T0)[1] is state


def test_publisher_chains_frames_and_restarts_above_its_last_frame() -> None:
    topic = b"t" * 32
    pub = PublisherSequence(stale_after=2)
    first, _ = pub.next(topic, T0)
    second, chain = pub.next(topic, T0 + FRAME_NS)  # one frame on: not yet stale
    assert (second, chain) == (first + 1, 0)
    third, chain = pub.next(topic, T0 + 2 * FRAME_NS)
    assert chain == second and seqno_counter(third) == 1 and seqno_frame(third) == seqno_frame(first) + 2
    restarted = PublisherSequence(min_frame=pub.highest_frame + 1)
    again, chain = restarted.next(topic, T0 + 2 * FRAME_NS)  # same clock: still a later frame
    assert chain == 0 and seqno_frame(again) > seqno_frame(third) and again > third


# -- a publisher run delivered with losses, repeats and restarts -------------------------------


@dataclass(frozen=True)
class Sent:
    seq: int
    chain: int
    time: int
    run: int  # which run of the publisher (a restart starts the next)
    position: int  # index in the run


@st.composite
def runs(draw: st.DrawFn) -> list[Sent]:
    """Messages of a publisher that may restart, with clock steps of up to 3 frames."""
    sent: list[Sent] = []
    now = T0
    pub = PublisherSequence(stale_after=2)
    run = position = 0
    for _ in range(draw(st.integers(1, 40))):
        now += draw(st.sampled_from([1, 10**6, FRAME_NS // 2, FRAME_NS, 3 * FRAME_NS]))
        if sent and draw(st.integers(0, 9)) == 0:
            pub = PublisherSequence(min_frame=pub.highest_frame + 1)
            run, position = run + 1, 0
        seq, chain = pub.next(b"t" * 32, now)
        sent.append(Sent(seq, chain, now, run, position))
        position += 1
    return sent


def truth(previous: Sent, message: Sent) -> Verdict:
    """What the subscriber must conclude about `message`, the last one it saw being `previous`."""
    if message.run != previous.run:  # a restart shows only by the new run's first message
        return Verdict(Status.CYCLE) if message.position == 0 else Verdict(Status.LOSS_UNKNOWN)
    dropped = message.position - previous.position - 1
    if seqno_frame(message.seq) == seqno_frame(previous.seq):
        if dropped == 0:
            return Verdict(Status.NEXT)
        return Verdict(Status.SKIP, dropped, (previous.seq + 1, message.seq - 1))
    if message.chain == previous.seq:
        return Verdict(Status.NEXT)
    if message.chain and seqno_frame(message.chain) == seqno_frame(previous.seq):
        return Verdict(Status.SKIP, dropped, (previous.seq + 1, message.chain))
    return Verdict(Status.LOSS_UNKNOWN)


@settings(max_examples=300)
@given(runs(), st.data())
def test_subscriber_tells_next_skip_repeat_cycle_and_unknown_loss_apart(
    messages: list[Sent], data: st.DataObject
) -> None:
    state: SeqState | None = None
    last: Sent | None = None
    delivered: list[Sent] = []
    for message in messages:
        if delivered and data.draw(st.integers(0, 4)) == 0:  # a duplicate of something seen
            again = data.draw(st.sampled_from(delivered))
            verdict, new_state = classify(state, again.seq, again.chain, again.time)
            assert verdict == Verdict(Status.REPEAT), (again, last)
            assert new_state is state
        if data.draw(st.integers(0, 3)) == 0:  # lost on the way
            continue
        verdict, state = classify(state, message.seq, message.chain, message.time)
        expected = Verdict(Status.FIRST) if last is None else truth(last, message)
        assert verdict == expected, (last, message)
        last = message
        delivered.append(message)
