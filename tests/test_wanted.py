"""WantedChunks against a plain model: a set of (offer, index) pairs with their addresses."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunks import Chunk
from streamer.errors import RemoteProtocolError
from streamer.messages import ChunkDeliveries, ChunkDelivery, DeliveredChunk, GoodbyeCode
from syncer.session_events import ChunkArrived, ChunksArrived
from syncer.wanted import WantedChunks

DATA = b"\x01" + bytes(7) + b"x"
OFFERS = [(3, False, 1), (3, False, 129), (3, True, 7)]


def address(offer: tuple[int, bool, int], index: int) -> bytes:
    return bytes([offer[0], offer[1], offer[2] % 256, index]) + bytes(28)


steps = st.lists(
    st.one_of(
        st.tuples(st.just("want"), st.sampled_from(OFFERS), st.sets(st.integers(0, 7), max_size=5)),
        st.tuples(st.just("take"), st.sampled_from(OFFERS), st.integers(0, 7)),
        st.tuples(
            st.just("frame"), st.sampled_from(OFFERS), st.lists(st.integers(0, 7), min_size=1, max_size=4)
        ),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(steps)
def test_wanted_chunks_against_a_model(script: list[tuple]) -> None:
    wanted = WantedChunks()
    model: dict[tuple[tuple[int, bool, int], int], bytes] = {}
    for kind, offer, arg in script:
        if kind == "want":
            if any(o == offer for o, _ in model):
                continue  # an offer is answered once: the session never wants from it twice
            wanted.want(offer, {i: address(offer, i) for i in arg})
            model.update({(offer, i): address(offer, i) for i in arg})
        elif kind == "take":
            msg = ChunkDelivery(offer[0], offer[1], offer[2], arg, DATA)
            if (offer, arg) in model:
                assert wanted.take(msg) == ChunkArrived(model.pop((offer, arg)), msg)
            else:
                with pytest.raises(RemoteProtocolError) as info:
                    wanted.take(msg)
                assert info.value.code == GoodbyeCode.UNSOLICITED_DELIVERY
                return  # the connection ends
        else:
            frame = ChunkDeliveries(offer[0], offer[1], offer[2], tuple(DeliveredChunk(i, DATA) for i in arg))
            if len(set(arg)) == len(arg) and all((offer, i) in model for i in arg):
                expected = [Chunk(model.pop((offer, i)), DATA) for i in arg]
                assert wanted.take_frame(frame) == ChunksArrived(expected)
            else:
                with pytest.raises(RemoteProtocolError) as info:
                    wanted.take_frame(frame)
                assert info.value.code == GoodbyeCode.UNSOLICITED_DELIVERY
                return
        assert len(wanted) == len(model)


def test_an_error_names_the_stream_the_offer_and_the_index() -> None:
    wanted = WantedChunks()
    wanted.want((3, False, 1), {2: address((3, False, 1), 2)})
    with pytest.raises(RemoteProtocolError, match="bin 3 historical offer 1 index 5: not wanted"):
        wanted.take_frame(ChunkDeliveries(3, False, 1, (DeliveredChunk(2, DATA), DeliveredChunk(5, DATA))))
    with pytest.raises(RemoteProtocolError, match="offer 9 index 0: no such open offer"):
        wanted.take(ChunkDelivery(3, False, 9, 0, DATA))
