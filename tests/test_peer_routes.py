"""`POST /pingpong/{address}` and `DELETE /peers/{address}` over a fake of the node's sessions, and
the Go duration format the round trip is written in (Go's own test table, and hypothesis against
a naive parser). The same routes over real peer sessions, driven by bee-js across two node
processes, are in tests/test_beejs_calls.py."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import httpx
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette

from streamer.connection import PingTimeout
from streamer.messages import GoodbyeCode
from swarm.api.peers import go_duration, peer_routes

# Go's src/time/time_test.go durationTests, and a few more of each unit
GO_DURATIONS = [
    ("0s", 0),
    ("1ns", 1),
    ("1.1µs", 1100),
    ("2.2ms", 2_200_000),
    ("3.3s", 3_300_000_000),
    ("4m5s", (4 * 60 + 5) * 10**9),
    ("4m5.001s", (4 * 60 + 5) * 10**9 + 1_000_000),
    ("5h6m7.001s", ((5 * 60 + 6) * 60 + 7) * 10**9 + 1_000_000),
    ("8m0.000000001s", 8 * 60 * 10**9 + 1),
    ("2562047h47m16.854775807s", 2**63 - 1),
    ("-2562047h47m16.854775808s", -(2**63)),
    ("999ns", 999),
    ("1µs", 1000),
    ("1.234567ms", 1_234_567),
    ("1h0m0s", 3600 * 10**9),
    ("-1.5s", -1_500_000_000),
]


@pytest.mark.parametrize(("text", "nanoseconds"), GO_DURATIONS)
def test_durations_are_written_as_go_writes_them(text: str, nanoseconds: int) -> None:
    assert go_duration(nanoseconds) == text


_UNIT_NS = {"h": 3600 * 10**9, "m": 60 * 10**9, "s": 10**9, "ms": 10**6, "µs": 10**3, "ns": 1}


def parse_go_duration(text: str) -> int:
    """Naive: sum each number times its unit (Go's time.ParseDuration, exact in integers)."""
    sign = -1 if text.startswith("-") else 1
    total = 0
    for whole, frac, unit in re.findall(r"(\d+)(?:\.(\d+))?(h|ms|µs|ns|m|s)", text.lstrip("-")):
        total += int(whole) * _UNIT_NS[unit] + int(frac or "0") * _UNIT_NS[unit] // 10 ** len(frac or "")
    return sign * total


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_a_written_duration_reads_back_to_its_value_with_no_trailing_zeros(nanoseconds: int) -> None:
    text = go_duration(nanoseconds)
    assert parse_go_duration(text) == nanoseconds
    assert not re.search(r"\.\d*0(h|ms|µs|ns|m|s)", text)  # fractions never end in 0
    assert re.fullmatch(r"-?((\d+h)?(\d+m)?\d+(\.\d+)?s|\d+(\.\d+)?(ms|µs)|\d+ns)", text)


class FakePeer:
    def __init__(self, rtt: float | None = 0.0015, *, closes: bool = False) -> None:
        self.rtt, self.closes = rtt, closes
        self.timeouts: list[float] = []

    async def ping(self, timeout: float) -> float:
        self.timeouts.append(timeout)
        if self.closes:
            raise trio.ClosedResourceError("gone")
        if self.rtt is None:
            raise PingTimeout(f"no Pong within {timeout:g} s")
        return self.rtt


class FakeSessions:
    def __init__(self) -> None:
        self.peers: dict[bytes, FakePeer] = {}
        self.closed: list[tuple[bytes, int, str]] = []

    def close(self, overlay: bytes, code: int, reason: str) -> None:
        self.closed.append((overlay, code, reason))
        self.peers.pop(overlay)


@pytest.fixture
def sessions() -> FakeSessions:
    return FakeSessions()


@pytest.fixture
async def client(sessions: FakeSessions) -> AsyncIterator[httpx.AsyncClient]:
    app = Starlette(routes=peer_routes(sessions, ping_timeout=3.0))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://node") as http:
        yield http


async def test_pingpong_answers_the_round_trip_as_bee_does(
    client: httpx.AsyncClient, sessions: FakeSessions
) -> None:
    sessions.peers[b"\x01" * 32] = peer = FakePeer(0.0015)
    answer = await client.post(f"/pingpong/{'01' * 32}")
    assert answer.status_code == 200 and answer.json() == {"rtt": "1.5ms"}
    assert peer.timeouts == [3.0]


async def test_pingpong_refusals_name_what_was_wrong(
    client: httpx.AsyncClient, sessions: FakeSessions
) -> None:
    sessions.peers[b"\x02" * 32] = FakePeer(None)
    sessions.peers[b"\x03" * 32] = FakePeer(closes=True)
    cases = {
        "02" * 32: (504, "did not answer the ping: no Pong within 3 s"),
        "03" * 32: (404, "peer not found"),
        "04" * 32: (404, "peer not found: " + "04" * 32 + " is not connected"),
        "xyz": (400, "peer address is not hexadecimal"),
        "05" * 31: (400, "peer address must be 32 bytes"),
    }
    for address, (status, words) in cases.items():
        answer = await client.post(f"/pingpong/{address}")
        assert answer.status_code == status and answer.json()["code"] == status
        assert words in answer.json()["message"], answer.json()
    assert (await client.get(f"/pingpong/{'02' * 32}")).status_code == 405  # Bee: POST only


async def test_delete_peer_closes_its_session_with_bee_s_reason(
    client: httpx.AsyncClient, sessions: FakeSessions
) -> None:
    sessions.peers[b"\x07" * 32] = FakePeer()
    answer = await client.delete(f"/peers/{'07' * 32}")
    assert answer.status_code == 200 and answer.json() == {"message": "OK", "code": 200}
    assert sessions.closed == [(b"\x07" * 32, GoodbyeCode.NORMAL, "user requested disconnect")]
    again = await client.delete(f"/peers/{'07' * 32}")
    assert again.status_code == 404 and "peer not found" in again.json()["message"]
    assert (await client.delete("/peers/nothex")).status_code == 400
