"""DownstreamSession: every pull-sync rule of docs/protocol.md 8.2, without an event loop."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunks import Chunk
from pot import MAX_PO, proximity
from streamer.errors import LocalProtocolError, RemoteProtocolError
from streamer.messages import (
    ChunkDeliveries,
    ChunkDelivery,
    CursorsReply,
    CursorsRequest,
    DeliveredChunk,
    GoodbyeCode,
    OfferedHashes,
    Subscribe,
    Unsubscribe,
    Unsubscribed,
    WantedHashes,
)
from syncer.intervals import MAX_ID
from syncer.session import DownstreamSession
from syncer.session_events import (
    ChunkArrived,
    ChunksArrived,
    CursorsReceived,
    OfferCrossed,
    OfferReceived,
    UnsubscribeAcked,
)

EPOCH = 1_700_000_000
DATA = b"\x03" + bytes(7) + b"abc"
UPSTREAM = bytes(range(100, 132))


def h(i: int, bin: int = 3) -> bytes:
    """An address in `bin` of the upstream's pull index: its first `bin` bits, then the other."""
    flipped = int.from_bytes(UPSTREAM) ^ (1 << (255 - bin))
    prefix = flipped >> (255 - bin) << (255 - bin)
    return (prefix | i).to_bytes(32, "big")


def offer(bin: int, live: bool, start: int, end: int, n: int | None = None) -> OfferedHashes:
    count = end - start + 1 if n is None else n
    return OfferedHashes(bin, live, start, end, tuple(h(start + i, bin) for i in range(count)))


def want(o: OfferedHashes, indices: list[int]) -> WantedHashes:
    return WantedHashes.from_indices(o.bin, o.live, o.start, o.end, indices)


def arrived(s: DownstreamSession, msg: ChunkDelivery) -> bytes:
    """The address a legal delivery must hash to."""
    event = s.receive(msg)
    assert isinstance(event, ChunkArrived)
    return event.address


def frame(bin: int, live: bool, start: int, indices: list[int]) -> ChunkDeliveries:
    """Several deliveries of one offer in one frame, all with DATA."""
    return ChunkDeliveries(bin, live, start, tuple(DeliveredChunk(i, DATA) for i in indices))


def session_with_cursors(cursors: tuple[int, ...] = (0, 0, 0, 300)) -> DownstreamSession:
    s = DownstreamSession(UPSTREAM, EPOCH)
    s.send(CursorsRequest())
    s.receive(CursorsReply(EPOCH, cursors))
    return s


def historical(s: DownstreamSession, bin: int = 3, start: int = 1, end: int = 300) -> None:
    s.send(Subscribe(bin, False, start, end))


# -- the normal conversation ----------------------------------------------------------------


def test_history_of_a_bin_from_subscribe_to_last_want() -> None:
    s = session_with_cursors()
    historical(s)
    assert s.subscribed((3, False))
    o1, o2, o3 = offer(3, False, 1, 128), offer(3, False, 129, 256), offer(3, False, 257, 300)
    assert s.receive(o1) == OfferReceived(o1, last=False)
    assert s.receive(o2) == OfferReceived(o2, last=False)  # two unanswered: allowed
    s.send(want(o1, [0, 3]))
    assert s.receive(o3) == OfferReceived(o3, last=True)
    event = s.receive(ChunkDelivery(3, False, 1, 3, DATA))
    assert event == ChunkArrived(h(4), ChunkDelivery(3, False, 1, 3, DATA))
    assert s.undelivered() == 1
    s.send(want(o2, []))
    s.send(want(o3, [43]))
    assert not s.active((3, False)), "the last offer answered: the historical stream is over"
    # deliveries wanted before the end still arrive, and the stream may be subscribed again
    assert arrived(s, ChunkDelivery(3, False, 257, 43, DATA)) == h(300)
    s.receive(ChunkDelivery(3, False, 1, 0, DATA))
    assert s.undelivered() == 0
    historical(s, start=1, end=300)


def test_several_deliveries_in_one_frame_each_named_by_its_offered_hash() -> None:
    s = session_with_cursors()
    historical(s)
    o = offer(3, False, 1, 128)
    s.receive(o)
    s.send(want(o, [0, 3, 5, 9]))
    event = s.receive(frame(3, False, 1, [5, 0]))
    assert event == ChunksArrived([Chunk(h(6), DATA), Chunk(h(1), DATA)])
    assert s.undelivered() == 2
    assert arrived(s, ChunkDelivery(3, False, 1, 9, DATA)) == h(10)  # one alone, as before
    assert s.receive(frame(3, False, 1, [3])) == ChunksArrived([Chunk(h(4), DATA)])
    assert s.undelivered() == 0
    with pytest.raises(RemoteProtocolError, match="no such open offer"):  # every want is served
        s.receive(frame(3, False, 1, [3]))


def test_unsubscribe_ignores_crossing_offers_until_the_ack() -> None:
    s = session_with_cursors()
    s.send(Subscribe(7, True, 41, 0))
    o = offer(7, True, 41, 41)
    s.receive(o)
    s.send(Unsubscribe(7, True))
    assert s.unsubscribing((7, True)) and s.active((7, True))
    crossing = offer(7, True, 42, 42)
    assert s.receive(crossing) == OfferCrossed(crossing)
    with pytest.raises(LocalProtocolError):
        s.send(want(o, []))  # the upstream forgot its unanswered offers
    with pytest.raises(LocalProtocolError, match="still active"):
        s.send(Subscribe(7, True, 41, 0))
    assert s.receive(Unsubscribed(7, True)) == UnsubscribeAcked((7, True))
    assert not s.active((7, True))
    s.send(Subscribe(7, True, 41, 0))


def test_cursors_take_the_highest_of_replies_and_offers() -> None:
    s = session_with_cursors((0, 5))
    s.send(Subscribe(1, True, 6, 0))
    s.receive(offer(1, True, 6, 9))
    assert s.cursor(1) == 9
    s.send(CursorsRequest())
    # a reply may lag a live offer sent after the upstream took its snapshot
    assert s.receive(CursorsReply(EPOCH, (0, 7))) == CursorsReceived(EPOCH, (0, 9, *[0] * 30))


def test_a_delivery_wanted_before_unsubscribing_still_arrives() -> None:
    s = session_with_cursors()
    s.send(Subscribe(3, True, 301, 0))
    o = offer(3, True, 301, 302)
    s.receive(o)
    s.send(want(o, [1]))
    s.send(Unsubscribe(3, True))
    assert arrived(s, ChunkDelivery(3, True, 301, 1, DATA)) == h(302)


# -- the peer's violations ------------------------------------------------------------------

Setup = Callable[[DownstreamSession], None]


def _nothing(s: DownstreamSession) -> None:
    return None


def _subscribed(s: DownstreamSession) -> None:
    historical(s)


def _two_unanswered(s: DownstreamSession) -> None:
    historical(s)
    s.receive(offer(3, False, 1, 128))
    s.receive(offer(3, False, 129, 256))


def _finished(s: DownstreamSession) -> None:
    historical(s, start=299, end=300)
    o = offer(3, False, 299, 300)
    s.receive(o)
    s.send(want(o, [0]))


def _acked(s: DownstreamSession) -> None:
    historical(s)
    s.send(Unsubscribe(3, False))
    s.receive(Unsubscribed(3, False))


def _wanted_0(s: DownstreamSession) -> None:
    historical(s)
    o = offer(3, False, 1, 2)
    s.receive(o)
    s.send(want(o, [0]))


def _delivered_0(s: DownstreamSession) -> None:
    _wanted_0(s)
    s.receive(ChunkDelivery(3, False, 1, 0, DATA))


def _asked_cursors(s: DownstreamSession) -> None:
    s.send(CursorsRequest())


PROTOCOL = GoodbyeCode.PROTOCOL_ERROR
UNSOLICITED = GoodbyeCode.UNSOLICITED_DELIVERY

VIOLATIONS: list[tuple[str, Setup, object, int, str]] = [
    ("offer never subscribed", _nothing, offer(3, False, 1, 1), PROTOCOL, "not subscribed"),
    ("offer of the other kind", _subscribed, offer(3, True, 1, 1), PROTOCOL, "not subscribed"),
    ("offer after the stream finished", _finished, offer(3, False, 301, 301), PROTOCOL, "not subscribed"),
    ("offer after the ack", _acked, offer(3, False, 1, 1), PROTOCOL, "not subscribed"),
    ("offer not at the start", _subscribed, offer(3, False, 2, 2), PROTOCOL, "does not continue"),
    ("offer beyond the end", _subscribed, offer(3, False, 250, 301), PROTOCOL, "does not continue"),
    ("offer skipping ahead", _two_unanswered, offer(3, False, 258, 258), PROTOCOL, "does not continue"),
    ("third unanswered offer", _two_unanswered, offer(3, False, 257, 300), PROTOCOL, "unanswered"),
    ("ack never asked", _subscribed, Unsubscribed(3, False), PROTOCOL, "did not ask"),
    ("second ack", _acked, Unsubscribed(3, False), PROTOCOL, "did not ask"),
    ("cursors never asked", _nothing, CursorsReply(EPOCH, (1,)), PROTOCOL, "without a request"),
    ("cursors of another epoch", _asked_cursors, CursorsReply(EPOCH + 1, (1,)), PROTOCOL, "epoch"),
    ("cursor went back", _asked_cursors, CursorsReply(EPOCH, (0, 0, 0, 299)), PROTOCOL, "went back"),
    ("cursor at the ID limit", _asked_cursors, CursorsReply(EPOCH, (MAX_ID,)), PROTOCOL, "largest bin ID"),
    ("delivery of no offer", _subscribed, ChunkDelivery(3, False, 1, 0, DATA), UNSOLICITED, "no such"),
    ("delivery not wanted", _wanted_0, ChunkDelivery(3, False, 1, 1, DATA), UNSOLICITED, "not wanted"),
    ("delivery twice", _delivered_0, ChunkDelivery(3, False, 1, 0, DATA), UNSOLICITED, "no such"),
    ("delivery to another stream", _wanted_0, ChunkDelivery(3, True, 1, 0, DATA), UNSOLICITED, "no such"),
    ("frame of no offer", _subscribed, frame(3, False, 1, [0, 1]), UNSOLICITED, "no such"),
    ("frame with one not wanted", _wanted_0, frame(3, False, 1, [0, 1]), UNSOLICITED, "index 1: not wanted"),
    ("frame with a chunk twice", _wanted_0, frame(3, False, 1, [0, 0]), UNSOLICITED, "index 0: not wanted"),
    ("frame after its chunk", _delivered_0, frame(3, False, 1, [0]), UNSOLICITED, "no such"),
    (
        "hash outside the bin",
        _subscribed,
        OfferedHashes(3, False, 1, 2, (h(1), h(2, bin=4))),
        PROTOCOL,
        "in bin 4 of the upstream",
    ),
    (
        "hash in the deepest bin",
        _subscribed,
        OfferedHashes(3, False, 1, 1, (UPSTREAM,)),
        PROTOCOL,
        "in bin 31 of the upstream",
    ),
]


@pytest.mark.parametrize(
    ("setup", "message", "code", "match"),
    [v[1:] for v in VIOLATIONS],
    ids=[v[0] for v in VIOLATIONS],
)
def test_violations_by_the_upstream(setup: Setup, message: object, code: int, match: str) -> None:
    s = session_with_cursors()
    setup(s)
    with pytest.raises(RemoteProtocolError, match=match) as info:
        s.receive(message)  # type: ignore[arg-type]
    assert info.value.code == code


@settings(max_examples=300, deadline=None)
@given(bin=st.integers(0, 31), prefix_bits=st.integers(0, 256), rest=st.binary(min_size=32, max_size=32))
def test_an_offered_hash_is_accepted_exactly_in_its_bin(bin: int, prefix_bits: int, rest: bytes) -> None:
    """The bin check agrees with `proximity` (capped at MAX_PO) for every bin and proximity."""
    # an address sharing exactly `prefix_bits` leading bits with the upstream (all 256: itself)
    mask = (1 << 256) - 1 >> prefix_bits
    value = int.from_bytes(UPSTREAM) & ~mask | int.from_bytes(rest) & mask
    if prefix_bits < 256:  # the first bit that differs
        bit = 1 << (255 - prefix_bits)
        value = value & ~bit | ~int.from_bytes(UPSTREAM) & bit
    address = value.to_bytes(32, "big")
    assert proximity(address, UPSTREAM) == prefix_bits
    s = session_with_cursors(tuple([5] * 32))
    s.send(Subscribe(bin, True, 1, 0))
    message = OfferedHashes(bin, True, 1, 2, (h(1, bin), address))
    if min(prefix_bits, MAX_PO) == bin:
        assert isinstance(s.receive(message), OfferReceived)
    else:
        with pytest.raises(RemoteProtocolError, match=f"in bin {min(prefix_bits, MAX_PO)} of the upstream"):
            s.receive(message)


def test_the_handshake_epoch_binds_every_reply() -> None:
    s = DownstreamSession(UPSTREAM, EPOCH)
    s.send(CursorsRequest())
    with pytest.raises(RemoteProtocolError, match=f"the handshake signed {EPOCH}"):
        s.receive(CursorsReply(EPOCH - 1, ()))


# -- our own mistakes -----------------------------------------------------------------------

MISTAKES: list[tuple[str, Setup, object, str]] = [
    ("second cursors request", _asked_cursors, CursorsRequest(), "already waiting"),
    ("subscribe twice", _subscribed, Subscribe(3, False, 1, 300), "still active"),
    ("subscribe beyond the cursor", _nothing, Subscribe(3, False, 1, 301), "beyond the known cursor"),
    ("unsubscribe what is not subscribed", _nothing, Unsubscribe(3, False), "not subscribed"),
    ("want with no offer", _subscribed, WantedHashes.from_indices(3, False, 1, 1, []), "no offer waits"),
    ("want out of order", _two_unanswered, want(offer(3, False, 129, 256), []), "oldest"),
    ("want beyond the hashes", _subscribed, None, "carried"),
]


@pytest.mark.parametrize(
    ("setup", "message", "match"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES]
)
def test_our_own_mistakes_are_local_errors(setup: Setup, message: object, match: str) -> None:
    s = session_with_cursors()
    setup(s)
    if message is None:  # an offer with 2 hashes over 5 IDs (holes), and a want of bit 3
        o = offer(3, False, 1, 5, n=2)
        s.receive(o)
        message = want(o, [3])
    with pytest.raises(LocalProtocolError, match=match):
        s.send(message)  # type: ignore[arg-type]


# -- against a model ------------------------------------------------------------------------

actions = st.lists(
    st.one_of(
        st.tuples(st.just("offer"), st.integers(1, 40), st.integers(0, 3)),  # length, skew of start
        st.tuples(st.just("want"), st.integers(0, 2**8 - 1)),
        st.tuples(st.just("deliver"), st.integers(0, 20), st.integers(0, 5)),
        st.tuples(st.just("frame"), st.integers(0, 20), st.lists(st.integers(0, 5), min_size=1, max_size=4)),
        st.just(("unsubscribe",)),
        st.just(("ack",)),
        st.just(("subscribe",)),
    ),
    max_size=50,
)


@settings(max_examples=300, deadline=None)
@given(actions)
def test_one_live_stream_against_a_model(steps: list[tuple]) -> None:
    """Random conversations on one live stream: the session accepts exactly what a plain model
    of the rules accepts, and hands out exactly the wanted addresses, once each."""
    s = session_with_cursors()
    key = (3, True)
    phase = "idle"  # idle | subscribed | unsubscribing
    next_start = 1
    unanswered: list[OfferedHashes] = []
    wanted: dict[tuple[int, int], bytes] = {}
    for step in steps:
        kind = step[0]
        if kind == "subscribe":
            if phase != "idle":
                with pytest.raises(LocalProtocolError):
                    s.send(Subscribe(3, True, next_start, 0))
                continue
            s.send(Subscribe(3, True, next_start, 0))
            phase = "subscribed"
        elif kind == "offer":
            _, length, skew = step
            o = offer(3, True, next_start + skew, next_start + skew + length - 1, n=min(length, 8))
            legal = phase == "subscribed" and skew == 0 and len(unanswered) < 2
            if phase == "unsubscribing":
                assert isinstance(s.receive(o), OfferCrossed)
            elif legal:
                assert s.receive(o) == OfferReceived(o, last=False)
                unanswered.append(o)
                next_start = o.end + 1
            else:
                with pytest.raises(RemoteProtocolError):
                    s.receive(o)
                return  # the peer is dropped
        elif kind == "want":
            if not unanswered:
                continue
            o = unanswered.pop(0)
            indices = [i for i in range(len(o.hashes)) if step[1] >> i & 1]
            s.send(want(o, indices))
            wanted.update({(o.start, i): o.hashes[i] for i in indices})
        elif kind == "deliver":
            _, pick, index = step
            starts = sorted({start for start, _ in wanted} | {1})
            start = starts[pick % len(starts)]
            msg = ChunkDelivery(3, True, start, index, DATA)
            if (start, index) in wanted:
                assert arrived(s, msg) == wanted.pop((start, index))
            else:
                with pytest.raises(RemoteProtocolError):
                    s.receive(msg)
                return
        elif kind == "frame":
            _, pick, indices = step
            starts = sorted({start for start, _ in wanted} | {1})
            start = starts[pick % len(starts)]
            several = frame(3, True, start, indices)
            if len(set(indices)) == len(indices) and all((start, i) in wanted for i in indices):
                expected = [Chunk(wanted.pop((start, i)), DATA) for i in indices]
                assert s.receive(several) == ChunksArrived(expected)
            else:
                with pytest.raises(RemoteProtocolError):
                    s.receive(several)
                return
        elif kind == "unsubscribe":
            if phase != "subscribed":
                continue
            s.send(Unsubscribe(3, True))
            phase, unanswered = "unsubscribing", []
        elif kind == "ack":
            if phase == "unsubscribing":
                assert s.receive(Unsubscribed(3, True)) == UnsubscribeAcked(key)
                phase = "idle"
            else:
                with pytest.raises(RemoteProtocolError):
                    s.receive(Unsubscribed(3, True))
                return
        assert s.active(key) == (phase != "idle")
        assert s.undelivered() == len(wanted)
