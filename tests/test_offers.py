"""StreamOffers: the upstream's per-stream offer window."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamer.messages import MAX_BATCH_SIZE as MAX_BATCH
from syncer.offers import StreamOffers, UnexpectedWant


def hashes(start: int, end: int) -> list[bytes]:
    return [i.to_bytes(32, "big") for i in range(start, end + 1)]


def test_historical_stream_offers_consecutive_batches_within_window_then_finishes() -> None:
    s = StreamOffers(bin=2, live=False, start=1, end=300)
    assert s.next_range(cursor=1000) == (1, 128)
    s.offered(1, 128, hashes(1, 128))
    assert s.next_range(1000) == (129, 256)
    s.offered(129, 256, hashes(129, 256))
    assert s.next_range(1000) is None  # window of 2 is full
    assert s.answer(1, 128, [0, 127]) == [(0, hashes(1, 1)[0]), (127, hashes(128, 128)[0])]
    assert s.next_range(1000) == (257, 300)  # capped at the subscription's end
    s.offered(257, 300, hashes(257, 300))
    assert s.exhausted() and not s.finished()
    s.answer(129, 256, [])
    s.answer(257, 300, [])
    assert s.finished()


def test_live_stream_follows_the_cursor() -> None:
    s = StreamOffers(bin=0, live=True, start=11, end=0)
    assert s.next_range(cursor=10) is None  # nothing new yet
    assert s.next_range(cursor=12) == (11, 12)
    s.offered(11, 12, hashes(11, 12))
    assert s.next_range(cursor=500) == (13, 13 + MAX_BATCH - 1)
    assert not s.exhausted()


def test_wants_must_answer_an_open_offer_with_bits_inside_it() -> None:
    s = StreamOffers(bin=1, live=False, start=1, end=10)
    s.offered(1, 10, hashes(1, 10))
    with pytest.raises(UnexpectedWant, match="answers no open offer"):
        s.answer(2, 10, [])
    with pytest.raises(UnexpectedWant, match="answers no open offer"):
        s.answer(1, 9, [])
    with pytest.raises(UnexpectedWant, match="sets bit 10"):
        s.answer(1, 10, [10])
    s.answer(1, 10, [9])
    with pytest.raises(UnexpectedWant):
        s.answer(1, 10, [9])  # answered already


def test_invalid_subscriptions_and_offers_are_refused() -> None:
    with pytest.raises(ValueError):
        StreamOffers(0, live=False, start=5, end=4)
    with pytest.raises(ValueError):
        StreamOffers(0, live=True, start=5, end=9)
    with pytest.raises(ValueError):
        StreamOffers(0, live=False, start=0, end=4)
    s = StreamOffers(0, live=False, start=1, end=4)
    with pytest.raises(ValueError, match="does not continue"):
        s.offered(2, 4, hashes(2, 4))
    with pytest.raises(ValueError, match="does not continue"):
        s.offered(1, 5, hashes(1, 5))


@settings(max_examples=200, deadline=None)
@given(
    start=st.integers(1, 50),
    length=st.integers(1, 600),
    window=st.integers(1, 4),
    answer_order=st.randoms(use_true_random=False),
)
def test_offers_cover_the_subscription_exactly_once(
    start: int, length: int, window: int, answer_order
) -> None:
    end = start + length - 1
    s = StreamOffers(0, live=False, start=start, end=end, window=window)
    covered: list[int] = []
    open_offers: list[tuple[int, int]] = []
    while not s.finished():
        r = s.next_range(cursor=end + 100)
        if r is None:
            assert open_offers, "stalled with nothing to answer"
            a = open_offers.pop(answer_order.randrange(len(open_offers)))
            s.answer(a[0], a[1], [])
            continue
        assert r[1] - r[0] + 1 <= MAX_BATCH
        s.offered(r[0], r[1], hashes(*r))
        open_offers.append(r)
        assert s.unanswered <= window
        covered.extend(range(r[0], r[1] + 1))
    assert covered == list(range(start, end + 1))


def test_an_open_offer_names_the_chunks_it_offers_but_its_holes() -> None:
    offers = StreamOffers(bin=1, live=False, start=1, end=3)
    hashes = [bytes([n]) * 32 for n in range(3)]
    offers.offered(1, 3, hashes, holes=[1])
    assert offers.offered_chunks(1) == [hashes[0], hashes[2]]
    assert offers.offered_chunks(7) == [], "no offer opens at 7"
    offers.answer(1, 3, [0])
    assert offers.offered_chunks(1) == [], "answered: no longer open"
