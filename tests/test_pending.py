"""OpenRequests (streamer.pending) against a model: answers matched by request ID."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamer.errors import RemoteProtocolError
from streamer.messages import GoodbyeCode
from streamer.pending import OpenRequests

ops = st.lists(
    st.one_of(
        st.tuples(st.just("open"), st.just(0)),
        st.tuples(st.sampled_from(["answer", "fail", "close"]), st.integers(0, 12)),
        st.tuples(st.just("fail_all"), st.just(0)),
    ),
    max_size=60,
)


@given(ops)
def test_open_requests_against_a_model(steps: list[tuple[str, int]]) -> None:
    table = OpenRequests[str]("test request")
    issued = 0
    open_: dict[int, str | None] = {}  # id -> None (waiting), "answer:..." or "failure:..."
    late = 0
    for op, request_id in steps:
        if op == "open":
            got_id, _ = table.open()
            issued += 1
            assert got_id == issued
            open_[got_id] = None
        elif op == "close":
            if request_id in open_:
                table.close(request_id)
                del open_[request_id]
        elif op == "fail_all":
            table.fail_all("gone")
            for i, state in open_.items():
                open_[i] = state or "failure:gone"
        else:
            never_sent = request_id == 0 or request_id > issued
            twice = open_.get(request_id) is not None
            if never_sent or twice:
                with pytest.raises(RemoteProtocolError) as err:
                    getattr(table, op)(request_id, "x")
                assert err.value.code == GoodbyeCode.UNSOLICITED_DELIVERY
                assert ("never sent" if never_sent else "second answer") in str(err.value)
                continue
            getattr(table, op)(request_id, "x")
            if request_id not in open_:
                late += 1
            else:
                open_[request_id] = "answer:x" if op == "answer" else "failure:x"
        assert len(table) == len(open_) and table.late == late and table.sent == issued


async def test_an_answer_wakes_its_waiter() -> None:
    table = OpenRequests[bytes]("test request")
    request_id, pending = table.open()
    table.answer(request_id, b"data")
    await pending.done.wait()
    assert pending.answer == b"data" and pending.failure is None
    other_id, other = table.open()
    table.fail(other_id, "")
    await other.done.wait()
    assert other.failure == "no reason given"
