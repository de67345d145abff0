"""The live commands' pure parts (the event-stream reader, the loss table text) and their errors."""

from __future__ import annotations

import subprocess
import sys

from swarm.cli.live import sse_events
from swarm.live.interest import InterestStatistics
from swarm.live.loss import COUNTERS, LossTable
from swarm.live.pruning import PushPathStatistics
from swarm.live.report import loss_document, loss_summary_row, loss_text
from swarm.live.results import LiveStatistics
from swarm.live.window import WindowStatistics


def test_the_event_stream_reader() -> None:
    lines = [
        ": keep-alive",
        "",
        "id: 4",
        "event: update",
        'data: {"index": 4,',
        'data:  "text": "x"}',
        "",
        "event: loss",
        'data: {"lost": 2}',
        "",
        "",
    ]
    assert list(sse_events(iter(lines))) == [
        ("update", "4", {"index": 4, "text": "x"}),
        ("loss", "4", {"lost": 2}),
    ]


def statistics(table: LossTable) -> LiveStatistics:
    window = WindowStatistics(0, 0, 3, 0, 0.0)
    return LiveStatistics(
        loss=table.rows(),
        received=10,
        accepted=4,
        bytes_received=1000,
        bytes_accepted=400,
        forwarded=8,
        pruned=5,
        dropped=1,
        published=2,
        followers=1,
        subscribers=0,
        advisories=3,
        detectors=window,
        receivers=window,
        interest=InterestStatistics(followed=1, relayed=0, peers=2, ignored=0),
        pruning=PushPathStatistics(
            chains=1,
            paused_here=1,
            paused_by_peers=0,
            pauses_sent=2,
            resumes_sent=1,
            grafts=0,
            ignored=0,
            haves_received=0,
        ),
    )


def test_the_loss_table_lists_local_first_with_each_counters_last_change() -> None:
    table = LossTable()
    peer = "ab" * 32
    table.add(peer, "repeat", now=1_700_000_000.25, amount=6)
    table.add("local", "gaps_filled", now=1_700_000_001.5)
    table.set("local", "gaps_open", 2, now=1_700_000_002.0)
    doc = loss_document(b"\x01" * 32, statistics(table))
    assert [row["peer"] for row in doc["rows"]] == ["local", peer]
    assert doc["totals"]["repeat"] == 6 and doc["traffic"]["duplicates"] == 6
    text = loss_text(doc)
    header, _, local, other = text.splitlines()[1:5]
    assert header.split(" | ")[0].strip() == "peer" and "ibx loss" in header
    assert local.startswith("local") and ".500" in local  # gaps_filled's time, to the millisecond
    assert other.startswith(peer[:12]) and " 6 " in other and ".250" in other
    assert "4 new of 10 received (2.50 per new)" in text.splitlines()[0]
    assert loss_summary_row(3, doc) == [3, "01" * 8, *(doc["totals"][n] for n in COUNTERS), 2.5]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "swarm", *args], capture_output=True, text=True, timeout=60)


def test_commands_fail_with_one_clear_line() -> None:
    unreachable = run("loss", "--api", "http://127.0.0.1:9")
    assert unreachable.returncode == 2
    assert unreachable.stderr.count("\n") == 1 and "cannot reach the node API" in unreachable.stderr
    bad_owner = run("feed", "follow", "nothex", "news", "--api", "http://127.0.0.1:9", "--once")
    assert bad_owner.returncode == 2 and "OWNER must be 40 hex characters" in bad_owner.stderr
    missing_key = run(
        "feed", "publish", "news", "hi", "--key", "/nonexistent/key", "--api", "http://127.0.0.1:9"
    )
    assert missing_key.returncode == 2 and missing_key.stderr.count("\n") == 1
    assert "Traceback" not in unreachable.stderr + bad_owner.stderr + missing_key.stderr
