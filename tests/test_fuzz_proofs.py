"""A verifying downstream session fed honest and damaged provable streams (docs/protocol.md 8.6).

The upstream has one honest log of bin 3 (tests/memory_log.py). Sequences of its proven offers,
live and historical, each possibly damaged (an entry swapped, replaced, dropped and refilled, a
proof hash changed, a wrong anchor, a state of another size), and state replies, some for sizes
nobody asked, go into a `DownstreamSession` with `ProvenLogs`. Two things must hold: the session
raises nothing but `RemoteProtocolError` at them, and whatever offer it accepts is exactly the
honest log's entries of its range, with the log's root at its end (soundness).
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamer.errors import RemoteProtocolError
from streamer.messages import CursorsReply, CursorsRequest, ProvenOffer, StateReply, Subscribe, WantedHashes
from syncer.provable import ProvenLogs
from syncer.proving import proven_offer, state_reply
from syncer.session import DownstreamSession
from syncer.session_events import OfferReceived
from tests.test_session_proofs import BIN, EPOCH, OVERLAY, SIGNER, UP, addr, make_log, signed

LOG = make_log(60)
CURSOR = 40  # what the upstream tells at first; the log grows to 60 for live offers

actions = st.lists(
    st.one_of(
        st.tuples(st.just("history"), st.integers(1, CURSOR), st.integers(0, 12), st.integers(0, 6)),
        st.tuples(st.just("live"), st.integers(1, 8), st.integers(0, 6)),
        st.tuples(st.just("reply"), st.integers(1, 60), st.integers(0, 60), st.integers(0, 6)),
    ),
    max_size=12,
)


def damage(o: ProvenOffer, how: int, data: st.DataObject) -> ProvenOffer:
    """0..2: honest; 3: two entries swapped; 4: an entry replaced; 5: a proof hash changed;
    6: an entry left out and the next one moved up."""
    hashes = list(o.hashes)
    if how == 3 and len(hashes) > 1:
        i = data.draw(st.integers(0, len(hashes) - 2))
        hashes[i], hashes[i + 1] = hashes[i + 1], hashes[i]
    elif how == 4:
        hashes[data.draw(st.integers(0, len(hashes) - 1))] = addr(9_999)
    elif how == 5 and (o.left or o.right):
        field = "left" if o.left else "right"
        items = list(getattr(o, field))
        items[0] = bytes(32)
        return dataclasses.replace(o, **{field: tuple(items)})  # type: ignore[arg-type]
    elif how == 6 and len(hashes) > 1:
        i = data.draw(st.integers(0, len(hashes) - 2))
        log = LOG.bins[BIN]
        refill = log[o.end] if o.end < len(log) else addr(9_998)  # the entry after the range
        hashes = [*hashes[:i], *hashes[i + 1 :], refill]
    return dataclasses.replace(o, hashes=tuple(hashes))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions, st.data())
def test_whatever_a_verifying_session_accepts_is_the_log(
    steps: list[tuple[int | str, ...]], data: st.DataObject
) -> None:
    s = DownstreamSession(OVERLAY, EPOCH, logs=ProvenLogs(OVERLAY, UP.public_key, EPOCH))
    s.send(CursorsRequest())
    s.receive(CursorsReply(EPOCH, (0, 0, 0, CURSOR)))
    logs = s.logs
    assert logs is not None
    live_next = None  # the next bin ID of the live stream, once subscribed
    try:
        for step in steps:
            if step[0] == "reply":  # a state reply nobody may have asked for, or a wrong one
                _, size, known, how = step
                asked = logs.asking(BIN)
                if not asked and int(how) < 3 and int(size) <= CURSOR and not s.subscribed((BIN, True)):
                    request = s.request_state(BIN, int(size))
                    s.receive(state_reply(LOG, request, signed(LOG, request.size)))
                    continue
                state = signed(LOG, int(size)) if how != 4 else SIGNER.state(BIN, EPOCH, int(size), bytes(32))
                s.receive(StateReply(state, int(known), tuple(LOG.consistency(BIN, int(size), int(known)))))
            elif step[0] == "history" and not s.active((BIN, False)):
                _, start, length, how = step
                end = min(CURSOR, int(start) + int(length))
                if not logs.holds(BIN, end, frontier=False):
                    if logs.asking(BIN) or s.subscribed((BIN, True)):
                        continue
                    request = s.request_state(BIN, end)
                    s.receive(state_reply(LOG, request, signed(LOG, end)))
                s.send(Subscribe(BIN, False, int(start), end))
                o = proven_offer(
                    LOG, BIN, int(start), end, LOG.bins[BIN][int(start) - 1 : end], [], anchor=end, first=True
                )
                accept(s, damage(o, int(how), data))
            elif step[0] == "live":
                _, length, how = step
                if live_next is None:
                    if logs.asking(BIN):
                        continue
                    if not logs.holds(BIN, CURSOR, frontier=True):
                        if logs.latest_size(BIN) > CURSOR:
                            continue
                        request = s.request_state(BIN, CURSOR)
                        s.receive(state_reply(LOG, request, signed(LOG, CURSOR)))
                    s.send(Subscribe(BIN, True, CURSOR + 1, 0))
                    live_next = CURSOR + 1
                end = min(60, live_next + int(length) - 1)
                if end < live_next:
                    continue
                o = proven_offer(
                    LOG,
                    BIN,
                    live_next,
                    end,
                    LOG.bins[BIN][live_next - 1 : end],
                    [],
                    live_state=signed(LOG, end),
                )
                if int(how) == 5:  # a state signed over another size's root
                    o = dataclasses.replace(o, state=SIGNER.state(BIN, EPOCH, end, LOG.root(BIN, end - 1)))
                accept(s, damage(o, int(how), data))
                live_next = end + 1
    except RemoteProtocolError:
        pass


def accept(s: DownstreamSession, o: ProvenOffer) -> None:
    """Receive an offer; if accepted, it must be the honest log's, and it is answered."""
    event = s.receive(o)
    assert isinstance(event, OfferReceived)
    assert list(o.hashes) == LOG.bins[BIN][o.start - 1 : o.end], "a damaged offer was accepted"
    assert event.root == LOG.root(BIN, o.end)
    s.send(WantedHashes.from_indices(o.bin, o.live, o.start, o.end, []))
