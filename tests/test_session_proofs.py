"""The downstream's checks of provable streams (docs/protocol.md 8.6), without an event loop.

A `DownstreamSession` with `ProvenLogs` is fed what an upstream with an in-memory log sends
(tests/memory_log.py; offers and replies built by syncer.proving, as the real upstream builds
them): the honest conversations pass, and a table of lies (an entry left out, reordered or not
in the log, a stale state, a wrong signature, a wrong epoch, a state that does not extend the
accepted one, two states of one size) is each refused with its Goodbye code, accepting nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamer.errors import LocalProtocolError, RemoteProtocolError
from streamer.identity import NodeIdentity
from streamer.messages import (
    CursorsReply,
    CursorsRequest,
    GoodbyeCode,
    Message,
    OfferedHashes,
    ProvenOffer,
    SignedState,
    SkippedOffer,
    Subscribe,
    WantedHashes,
)
from streamer.states import StateSigner
from syncer.provable import ProvenLogs
from syncer.proving import proven_offer, skipped_offer, state_reply
from syncer.session import DownstreamSession
from syncer.session_events import OfferReceived, StateAccepted
from tests.memory_log import MemoryLog

EPOCH = 1_700_000_000
BIN = 3
UP = NodeIdentity.from_private_bytes(bytes(range(32)))
OVERLAY = UP.overlay(1)
SIGNER = StateSigner(UP, OVERLAY)
OTHER = StateSigner(NodeIdentity.from_private_bytes(bytes(range(1, 33))), OVERLAY)
BAD_PROOF = GoodbyeCode.BAD_PROOF
INCONSISTENT = GoodbyeCode.INCONSISTENT_STATE


def addr(i: int, bin: int = BIN) -> bytes:
    """Address number ``i`` in ``bin`` of the upstream's pull index."""
    flipped = int.from_bytes(OVERLAY) ^ (1 << (255 - bin))
    prefix = flipped >> (255 - bin) << (255 - bin)
    return (prefix | i << 8 | 0x5A).to_bytes(32, "big")


def make_log(count: int = 300, *, forged_at: int | None = None) -> MemoryLog:
    """The upstream's log of BIN: addresses 1..count; `forged_at` replaces that entry."""
    log = MemoryLog()
    log.append(BIN, *(addr(i) for i in range(1, count + 1)))
    if forged_at is not None:
        log.bins[BIN][forged_at - 1] = addr(10_000 + forged_at)
    return log


def signed(log: MemoryLog, size: int, *, epoch: int = EPOCH, signer: StateSigner = SIGNER) -> SignedState:
    return signer.state(BIN, epoch, size, log.root(BIN, size))


def entries(log: MemoryLog, start: int, end: int) -> list[bytes]:
    return log.bins[BIN][start - 1 : end]


def history(log: MemoryLog, start: int, end: int, anchor: int, *, first: bool) -> ProvenOffer:
    return proven_offer(log, BIN, start, end, entries(log, start, end), [], anchor=anchor, first=first)


def live(log: MemoryLog, start: int, end: int, state: SignedState | None = None) -> ProvenOffer:
    state = state or signed(log, end)
    return proven_offer(log, BIN, start, end, entries(log, start, end), [], live_state=state)


def session(cursor: int = 300, accepted: dict[int, SignedState] | None = None) -> DownstreamSession:
    s = DownstreamSession(OVERLAY, EPOCH, logs=ProvenLogs(OVERLAY, UP.public_key, EPOCH, accepted))
    s.send(CursorsRequest())
    s.receive(CursorsReply(EPOCH, (0, 0, 0, cursor)))
    return s


def anchor(s: DownstreamSession, log: MemoryLog, size: int) -> StateAccepted:
    request = s.request_state(BIN, size)
    event = s.receive(state_reply(log, request, signed(log, size)))
    assert isinstance(event, StateAccepted) and event.state.size == size
    return event


def want_none(s: DownstreamSession, o: ProvenOffer) -> None:
    s.send(WantedHashes.from_indices(o.bin, o.live, o.start, o.end, []))


# -- honest conversations ---------------------------------------------------------------------


def test_history_is_proven_against_the_state_at_its_end() -> None:
    log = make_log()
    s = session()
    anchor(s, log, 300)
    s.send(Subscribe(BIN, False, 1, 300))
    offers = [history(log, 1, 128, 300, first=True), history(log, 129, 256, 300, first=False)]
    for o in offers:
        event = s.receive(o)
        assert event == OfferReceived(o, last=False, root=log.root(BIN, o.end))
    assert not offers[1].left and len(offers[0].right) > 0
    want_none(s, offers[0])
    last = history(log, 257, 300, 300, first=False)
    assert s.receive(last) == OfferReceived(last, last=True, root=log.root(BIN, 300))
    assert not last.right, "the last offer ends at the state: nothing after it"


def test_live_offers_extend_the_latest_state_with_no_proof_hashes() -> None:
    log = make_log(300)
    s = session()
    anchor(s, log, 300)
    s.send(Subscribe(BIN, True, 301, 0))
    log.append(BIN, *(addr(i) for i in range(301, 321)))
    for start, end in ((301, 305), (306, 320)):
        o = live(log, start, end)
        assert (o.left, o.right) == ((), ())
        assert s.receive(o) == OfferReceived(o, last=False, root=log.root(BIN, end))
        want_none(s, o)
        assert s.logs is not None and s.logs.latest(BIN) == signed(log, end)


def skipped(log: MemoryLog, start: int, end: int, state: SignedState | None = None) -> SkippedOffer:
    return skipped_offer(log, BIN, start, end, state or signed(log, end))


def test_a_skipped_offer_extends_the_latest_state_by_the_compact_range_of_its_entries() -> None:
    """Entries the downstream gave the upstream are skipped: no hashes, the range's few subtree
    hashes instead, and the live offers after it still extend the state it brought."""
    log = make_log(300)
    s = session()
    anchor(s, log, 300)
    s.send(Subscribe(BIN, True, 301, 0))
    log.append(BIN, *(addr(i) for i in range(301, 621)))
    o = skipped(log, 301, 600)  # more than a batch: a skip is not bound to 128
    assert len(o.proof) <= 2 * 10 and o.hashes == ()
    assert s.receive(o) == OfferReceived(o, last=False, root=log.root(BIN, 600))
    with pytest.raises(LocalProtocolError, match="carried 0 hashes"):
        s.send(WantedHashes.from_indices(BIN, True, 301, 600, [0]))
    s.send(WantedHashes.from_indices(BIN, True, 301, 600, []))
    assert s.logs is not None and s.logs.latest(BIN) == signed(log, 600)
    after = live(log, 601, 620)
    assert s.receive(after) == OfferReceived(after, last=False, root=log.root(BIN, 620))


SKIP_LIES: dict[str, tuple[Callable[[MemoryLog], SkippedOffer], str]] = {
    "a proof of another range": (
        lambda log: dataclasses.replace(skipped(log, 301, 400), proof=tuple(log.range(BIN, 300, 399))),
        "malformed proof|do not extend",
    ),
    "an entry not in the signed log": (
        lambda log: skipped(make_log(400, forged_at=350), 301, 400, signed(log, 400)),
        "do not extend",
    ),
    "a state signed by someone else": (
        lambda log: skipped(log, 301, 400, signed(log, 400, signer=OTHER)),
        "bad signature",
    ),
    "a proof hash too many": (
        lambda log: dataclasses.replace(
            skipped(log, 301, 400), proof=(*skipped(log, 301, 400).proof, bytes(32))
        ),
        "malformed proof",
    ),
}


@pytest.mark.parametrize("lie", list(SKIP_LIES))
def test_a_skipped_offer_that_does_not_prove_its_range_is_refused(lie: str) -> None:
    log = make_log(300)
    s = session()
    anchor(s, log, 300)
    s.send(Subscribe(BIN, True, 301, 0))
    log.append(BIN, *(addr(i) for i in range(301, 401)))
    build, reason = SKIP_LIES[lie]
    with pytest.raises(RemoteProtocolError, match=reason) as caught:
        s.receive(build(log))
    assert caught.value.code == BAD_PROOF
    assert s.logs is not None and s.logs.latest(BIN) == signed(log, 300)  # nothing accepted


def test_a_skipped_offer_on_a_historical_stream_breaks_the_stream_rules() -> None:
    log = make_log(300)
    s = session()
    anchor(s, log, 300)
    s.send(Subscribe(BIN, False, 1, 300))
    with pytest.raises(RemoteProtocolError, match="not subscribed"):
        s.receive(skipped(log, 1, 128, signed(log, 128)))


def test_after_a_restart_a_gap_is_proven_against_a_state_below_the_latest() -> None:
    """Accepted before (persisted): the state at 300. Now the log has 400 entries, and the
    intervals have a gap [150, 200]: the state at 200 is asked with a proof from 400."""
    log = make_log(400)
    s = session(400, accepted={BIN: signed(log, 300)})
    assert anchor(s, log, 400).latest
    assert not anchor(s, log, 200).latest
    s.send(Subscribe(BIN, False, 150, 200))
    o = history(log, 150, 200, 200, first=True)
    assert len(o.left) == (149).bit_count() and not o.right
    assert s.receive(o) == OfferReceived(o, last=True, root=log.root(BIN, 200))


def test_holes_are_accounted_for_and_never_wanted() -> None:
    log = make_log()
    s = session()
    anchor(s, log, 300)
    anchor(s, log, 10)
    s.send(Subscribe(BIN, False, 1, 10))
    o = proven_offer(log, BIN, 1, 10, entries(log, 1, 10), [2, 7], anchor=10, first=True)
    event = s.receive(o)
    assert isinstance(event, OfferReceived) and event.holes == [2, 7]
    with pytest.raises(LocalProtocolError, match="hole"):
        s.send(WantedHashes.from_indices(BIN, False, 1, 10, [1, 2]))


# -- the table of lies --------------------------------------------------------------------------


def swapped(o: ProvenOffer, i: int) -> ProvenOffer:
    hashes = [*o.hashes]
    hashes[i], hashes[i + 1] = hashes[i + 1], hashes[i]
    return dataclasses.replace(o, hashes=tuple(hashes))


def replaced(o: ProvenOffer, i: int, address: bytes) -> ProvenOffer:
    return dataclasses.replace(o, hashes=(*o.hashes[:i], address, *o.hashes[i + 1 :]))


def skipping(log: MemoryLog, start: int, end: int, skipped: int) -> list[bytes]:
    """Entries ``start..end`` with ``skipped`` left out and the next entry closing the gap."""
    kept = [a for n, a in enumerate(log.bins[BIN], 1) if n != skipped and n >= start]
    return kept[: end - start + 1]


def historical_lie(
    make: Callable[[MemoryLog], ProvenOffer],
) -> Callable[[], tuple[DownstreamSession, Message]]:
    def setup() -> tuple[DownstreamSession, Message]:
        log = make_log()
        s = session()
        anchor(s, log, 300)
        s.send(Subscribe(BIN, False, 1, 300))
        return s, make(log)

    return setup


def live_lie(make: Callable[[MemoryLog], ProvenOffer]) -> Callable[[], tuple[DownstreamSession, Message]]:
    def setup() -> tuple[DownstreamSession, Message]:
        log = make_log()
        s = session()
        anchor(s, log, 300)
        s.send(Subscribe(BIN, True, 301, 0))
        log.append(BIN, *(addr(i) for i in range(301, 311)))
        return s, make(log)

    return setup


def reply_lie(
    size: int, lie: Callable[[MemoryLog, SignedState], tuple[MemoryLog, SignedState]], *, cursor: int = 300
) -> Callable[[], tuple[DownstreamSession, Message]]:
    """A session that accepted the state at 300 before asks for the state at `size`; the answer
    is built by `lie` from the honest log and state."""

    def setup() -> tuple[DownstreamSession, Message]:
        log = make_log(max(cursor, 300))
        s = session(cursor, accepted={BIN: signed(log, 300)})
        request = s.request_state(BIN, size)
        proof_log, state = lie(log, signed(log, size))
        return s, state_reply(proof_log, request, state)

    return setup


def live_history(log: MemoryLog) -> ProvenOffer:
    return history(log, 1, 128, 300, first=True)


LIES: list[tuple[str, Callable[[], tuple[DownstreamSession, Message]], int, str]] = [
    (
        "omission: an entry left out of a historical offer",
        historical_lie(
            lambda log: proven_offer(log, BIN, 1, 128, skipping(log, 1, 128, 5), [], anchor=300, first=True)
        ),
        BAD_PROOF,
        "left out",
    ),
    (
        "omission: an entry left out of a live offer signed over the full log",
        live_lie(
            lambda log: proven_offer(
                log, BIN, 301, 309, skipping(log, 301, 309, 305), [], live_state=signed(log, 309)
            )
        ),
        BAD_PROOF,
        "left out",
    ),
    (
        "reordering in a historical offer",
        historical_lie(lambda log: swapped(live_history(log), 9)),
        BAD_PROOF,
        "reordered",
    ),
    (
        "reordering in a live offer",
        live_lie(lambda log: swapped(live(log, 301, 310), 3)),
        BAD_PROOF,
        "reordered",
    ),
    (
        "foreign hash in a historical offer",
        historical_lie(lambda log: replaced(live_history(log), 6, addr(99_999))),
        BAD_PROOF,
        "not in the log",
    ),
    (
        "foreign hash in a live offer",
        live_lie(lambda log: replaced(live(log, 301, 310), 0, addr(99_999))),
        BAD_PROOF,
        "not in the log",
    ),
    (
        "a historical offer without the frontier before it",
        historical_lie(lambda log: dataclasses.replace(live_history(log), left=(), right=())),
        BAD_PROOF,
        "malformed proof",
    ),
    (
        "stale state: an older state than asked",
        reply_lie(300, lambda log, state: (log, signed(log, 250)), cursor=300),
        INCONSISTENT,
        "stale",
    ),
    (
        "wrong signature on a state",
        reply_lie(300, lambda log, st: (log, dataclasses.replace(st, signature=bytes(64)))),
        BAD_PROOF,
        "bad signature",
    ),
    (
        "a live state signed by another key",
        live_lie(lambda log: live(log, 301, 310, state=signed(log, 310, signer=OTHER))),
        BAD_PROOF,
        "bad signature",
    ),
    (
        "wrong epoch on a state",
        reply_lie(300, lambda log, st: (log, signed(log, 300, epoch=EPOCH + 1))),
        INCONSISTENT,
        "epoch",
    ),
    (
        "wrong epoch on a live state",
        live_lie(lambda log: live(log, 301, 310, state=signed(log, 310, epoch=EPOCH - 1))),
        INCONSISTENT,
        "epoch",
    ),
    (
        "a state that does not extend the accepted one",
        reply_lie(
            400,
            lambda log, st: (make_log(400, forged_at=42), signed(make_log(400, forged_at=42), 400)),
            cursor=400,
        ),
        INCONSISTENT,
        "not consistent",
    ),
    (
        "a live state over a log that does not extend the accepted one",
        live_lie(lambda log: live(log, 301, 310, state=signed(forked(log), 310))),
        BAD_PROOF,
        "does not extend",
    ),
    (
        "two states of one size (equivocation)",
        reply_lie(300, lambda log, st: (make_log(forged_at=7), signed(make_log(forged_at=7), 300))),
        INCONSISTENT,
        "not consistent",
    ),
    (
        "a plain offer on a provable stream",
        historical_lie(lambda log: OfferedHashes(BIN, False, 1, 2, (addr(1), addr(2)))),  # type: ignore[arg-type, return-value]
        BAD_PROOF,
        "without a proof",
    ),
]


def forked(log: MemoryLog) -> MemoryLog:
    fork = MemoryLog()
    fork.append(BIN, *log.bins[BIN])
    fork.bins[BIN][41] = addr(77_777)
    return fork


@pytest.mark.parametrize(("setup", "code", "match"), [lie[1:] for lie in LIES], ids=[lie[0] for lie in LIES])
def test_lies_are_refused_and_nothing_is_accepted(
    setup: Callable[[], tuple[DownstreamSession, Message]], code: int, match: str
) -> None:
    s, message = setup()
    logs = s.logs
    assert logs is not None
    latest, cursor = logs.latest(BIN), s.cursor(BIN)
    with pytest.raises(RemoteProtocolError, match=match) as info:
        s.receive(message)  # type: ignore[arg-type]
    assert info.value.code == code
    assert logs.latest(BIN) == latest and s.cursor(BIN) == cursor, "nothing of the range was accepted"
    assert s.undelivered() == 0


def test_two_states_of_one_size_are_kept_as_evidence() -> None:
    log, fork = make_log(), make_log(forged_at=7)
    s = session(accepted={BIN: signed(log, 300)})
    request = s.request_state(BIN, 300)
    with pytest.raises(RemoteProtocolError):
        s.receive(state_reply(fork, request, signed(fork, 300)))
    assert s.logs is not None
    [evidence] = s.logs.equivocations
    assert (evidence.first, evidence.second) == (signed(log, 300), signed(fork, 300))
    assert evidence.first.size == evidence.second.size and evidence.first.root != evidence.second.root


def test_a_cursor_below_the_accepted_state_is_stale() -> None:
    log = make_log()
    s = DownstreamSession(
        OVERLAY, EPOCH, logs=ProvenLogs(OVERLAY, UP.public_key, EPOCH, {BIN: signed(log, 300)})
    )
    s.send(CursorsRequest())
    with pytest.raises(RemoteProtocolError, match="stale") as info:
        s.receive(CursorsReply(EPOCH, (0, 0, 0, 299)))
    assert info.value.code == INCONSISTENT


def test_states_of_another_epoch_do_not_carry_over() -> None:
    """A persisted state of the upstream's old store (epoch changed: wiped) is not held against it."""
    old = make_log(forged_at=1)
    logs = ProvenLogs(OVERLAY, UP.public_key, EPOCH, {BIN: signed(old, 300, epoch=EPOCH - 5)})
    assert logs.latest(BIN) is None


def test_our_own_mistakes_are_local_errors() -> None:
    log = make_log()
    s = session()
    with pytest.raises(LocalProtocolError, match="no state at 300"):
        s.send(Subscribe(BIN, False, 1, 300))
    with pytest.raises(LocalProtocolError, match="extend the latest state"):
        s.send(Subscribe(BIN, True, 301, 0))
    s.request_state(BIN, 300)
    with pytest.raises(LocalProtocolError, match="already waiting"):
        s.request_state(BIN, 200)
    plain = DownstreamSession(OVERLAY, EPOCH)
    with pytest.raises(LocalProtocolError, match="does not verify"):
        plain.request_state(BIN, 1)
    assert log.size(BIN) == 300


# -- any changed byte is caught -----------------------------------------------------------------


@given(st.data())
@settings(max_examples=120, deadline=None)
def test_any_flipped_bit_of_a_proven_offer_is_refused(data: st.DataObject) -> None:
    log = make_log(300)
    s = session()
    anchor(s, log, 300)
    live_stream = data.draw(st.booleans())
    if live_stream:
        s.send(Subscribe(BIN, True, 301, 0))
        log.append(BIN, *(addr(i) for i in range(301, 341)))
        o = live(log, 301, 340)
        fields = ["hashes", "state"]
    else:
        start = data.draw(st.integers(1, 250))
        s.send(Subscribe(BIN, False, start, 300))
        o = history(log, start, min(300, start + 40), 300, first=True)
        fields = ["hashes", *(f for f in ("left", "right") if getattr(o, f))]
    name = data.draw(st.sampled_from(fields))
    if name == "state":
        assert o.state is not None
        part = data.draw(st.sampled_from(["root", "signature"]))
        value = getattr(o.state, part)
        bit = data.draw(st.integers(0, len(value) * 8 - 1))
        bad = dataclasses.replace(o, state=dataclasses.replace(o.state, **{part: flip(value, bit)}))  # type: ignore[arg-type]
    else:
        items = getattr(o, name)
        i = data.draw(st.integers(0, len(items) - 1))
        bit = data.draw(st.integers(0, 255))
        changed: tuple[bytes, ...] = (*items[:i], flip(items[i], bit), *items[i + 1 :])
        bad = dataclasses.replace(o, **{name: changed})  # type: ignore[arg-type]
    with pytest.raises(RemoteProtocolError) as info:
        s.receive(bad)
    assert info.value.code in (BAD_PROOF, GoodbyeCode.PROTOCOL_ERROR)  # PROTOCOL_ERROR: out of its bin
    last = not live_stream and o.end == 300
    assert s.receive(o) == OfferReceived(o, last=last, root=log.root(BIN, o.end)), (
        "the honest one still passes"
    )


def flip(data: bytes, bit: int) -> bytes:
    return data[: bit // 8] + bytes([data[bit // 8] ^ 1 << bit % 8]) + data[bit // 8 + 1 :]
