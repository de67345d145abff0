"""What a peer can make a node log goes through the log budgets (issue 30, item 5): bad gossip
records once wrote 2,486 WARNING lines a second."""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from pathlib import Path

import pytest
import trio

from streamer.codec import encode
from streamer.identity import NodeIdentity, make_peer_record
from streamer.messages import Peers
from swarm.net.logbudget import LogBudgets
from swarm.testing import node_config, start_node, wait_for
from swarm.testing.intruder import Intruder


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_each_kind_of_line_has_its_budget_and_a_summary_says_what_was_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    budgets = LogBudgets(burst=2, window=10.0, clock=clock)
    budgets.attach(("tests.noisy",))
    noisy, quiet = logging.getLogger("tests.noisy"), logging.getLogger("tests.quiet")
    try:
        with caplog.at_level(logging.DEBUG):
            for i in range(5):
                noisy.warning("bad record %d", i)  # one kind, whatever the values
                noisy.error("violation by %s", i)  # another kind
                quiet.warning("not filtered %d", i)
                noisy.debug("debug lines are not budgeted %d", i)
            assert budgets.summaries() == [
                "3 more lines like tests.noisy: 'bad record %d' not logged",
                "3 more lines like tests.noisy: 'violation by %s' not logged",
            ]
            assert budgets.summaries() == []  # said once
            noisy.warning("bad record %d", 5)
            clock.now = 10.0
            noisy.warning("bad record %d", 6)
    finally:
        budgets.detach()
    lines = [r.getMessage() for r in caplog.records if r.name == "tests.noisy"]
    assert lines.count("bad record 0") == 1 and "bad record 2" not in lines
    assert sum("bad record" in line for line in lines) == 3
    assert "bad record 6 (1 more like this not logged)" in lines
    assert sum("debug lines" in line for line in lines) == 5
    assert sum("not filtered" in r.getMessage() for r in caplog.records) == 5
    noisy.warning("bad record %d", 7)  # detached: logged
    assert caplog.records[-1].getMessage() == "bad record 7"


def allowed_lines(budgets: LogBudgets, elapsed: float) -> int:
    """The lines a flood lasting `elapsed` seconds may write: per window, the budget's burst and
    the node's summary line (a loaded machine may stretch the flood over more than one window)."""
    return (budgets.burst + 1) * max(1, math.ceil(elapsed / budgets.window))


async def test_a_flood_of_bad_gossip_records_writes_at_most_the_budget(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """2,000 records with bad signatures from one peer: each is counted as rejected, at most the
    budget's burst of lines say so, and the peer stays (bad records are dropped, not punished)."""
    record = make_peer_record(NodeIdentity.generate(), network_id=1, host="127.0.0.1", port=1)
    bad = tuple(dataclasses.replace(record, port=2 + i) for i in range(100))  # signatures no longer match
    started = time.monotonic()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            node = await start_node(nursery, node_config(tmp_path / "target", api_port=None, channel="plain"))
            session = await Intruder("127.0.0.1", node.p2p_port, tls=False).session()
            for _ in range(20):
                await session.stream.send_all(encode(Peers(bad)))
            await session.ping()
            await wait_for(lambda: node.gossip.rejected == 2000)
            assert session.identity.overlay(1) in node.sessions.peers
            await session.aclose()
            nursery.cancel_scope.cancel()
    warned = [r for r in caplog.records if "dropped a peer record" in r.getMessage()]
    assert 1 <= len(warned) <= allowed_lines(node.log_budgets, time.monotonic() - started)


async def test_a_flood_of_protocol_violations_writes_at_most_the_budget(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Each of 40 peers breaks the protocol (an unknown message type) and is dropped: every
    violation is counted, at most the budget's burst of lines name one."""
    started = time.monotonic()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            node = await start_node(nursery, node_config(tmp_path / "target", api_port=None, channel="plain"))
            intruder = Intruder("127.0.0.1", node.p2p_port, tls=False)
            for _ in range(40):
                session = await intruder.session()
                await session.stream.send_all(b"\x00\x00\x00\x02\xee\xee")  # an unknown message type
                await session.drain()
                await session.aclose()
            await wait_for(lambda: node.sessions.violations == 40)
            nursery.cancel_scope.cancel()
    lines = [r for r in caplog.records if "broke the protocol" in r.getMessage()]
    assert 1 <= len(lines) <= allowed_lines(node.log_budgets, time.monotonic() - started)
