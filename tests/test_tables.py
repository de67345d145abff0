"""The command line's text tables (pure): `/sync` documents in, text out."""

from __future__ import annotations

import time
from typing import Any

from swarm.cli.tables import disconnections_text, sync_status_text, table


def _record(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "overlay": "ab" * 32,
        "po": 3,
        "at": time.mktime((2026, 11, 22, 14, 5, 9, 0, 0, -1)),
        "by": "local",
        "code": "PROTOCOL_ERROR",
        "reason": "chunk deab12 does not match its address",
        "violation": True,
        "connected_again": False,
        "stats": {"repeat": 0, "unsolicited": 0, "invalid": 1, "missing": 2, "resets": 0},
    }
    record.update(changes)
    return record


def _doc(disconnected: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "overlay": "cd" * 32,
        "epoch": 1,
        "depth": 0,
        "chunks": 0,
        "fully_synced": True,
        "peers": [],
        "disconnected": disconnected,
    }


def test_table_aligns_numbers_right_and_text_left() -> None:
    text = table(["name", "n"], [["a", 1], ["bbb", 100]])
    assert text.splitlines() == ["name |   n", "-----+----", "a    |   1", "bbb  | 100"]


def test_a_disconnection_row_says_when_who_why_and_the_loss_counters() -> None:
    lines = disconnections_text([_record()]).splitlines()
    assert [c.strip() for c in lines[0].split("|")] == [
        "peer", "po", "time", "by", "code", "reason", "violation",
        "repeat", "unsolicited", "invalid", "missing", "resets", "back",
    ]  # fmt: skip
    cells = [c.strip() for c in lines[2].split("|")]
    assert cells == [
        "abababababab", "3", "14:05:09", "local", "PROTOCOL_ERROR", "chunk deab12 does not match its address",
        "yes", "0", "0", "1", "2", "0", "no",
    ]  # fmt: skip


def test_long_reasons_are_cut_and_missing_ones_shown_as_a_dash() -> None:
    text = disconnections_text([_record(reason="x" * 100), _record(reason="", violation=False)], 20)
    rows = [[c.strip() for c in line.split("|")] for line in text.splitlines()[2:]]
    assert rows[0][5] == "x" * 17 + "..."
    assert rows[1][5] == "-" and rows[1][6] == "no"


def test_sync_status_lists_disconnections_only_when_there_are_some() -> None:
    assert "recent disconnections" not in sync_status_text(_doc([]))
    older_node = {k: v for k, v in _doc([]).items() if k != "disconnected"}
    assert "recent disconnections" not in sync_status_text(older_node)
    text = sync_status_text(_doc([_record(), _record(overlay="01" * 32, connected_again=True)]))
    section = text.split("recent disconnections (newest first)\n", 1)[1].splitlines()
    assert [row.split(" | ")[0] for row in section[2:]] == ["abababababab", "010101010101"]
    assert section[3].rstrip().endswith("yes")
    assert "no peers connected" in text


def test_node_events_show_only_what_happened() -> None:
    from swarm.cli.tables import node_events_text

    assert node_events_text({"equivocations": 0, "violations": 0}) == ""
    text = node_events_text({"equivocations": 2, "violations": 0, "damaged_lost": 1})
    assert "signed twice" in text and "no peer had" in text and "breaking the protocol" not in text


def test_sync_status_shows_the_reserve() -> None:
    doc = _doc([])
    doc["reserve"] = {
        "size": 1200,
        "capacity": 1200,
        "size_within_radius": 925,
        "radius": 2,
        "evicted": 2430,
        "pinned": 7,
        "pending_push": 3,
        "receipts": 2705,
        "own_receipts": 925,
    }
    text = sync_status_text(doc)
    assert "reserve 1200/1200 chunks (925 within radius 2)  evicted 2430  pinned 7" in text
    assert "waiting for receipts 3  receipts 2705 (+925 own)" in text


def test_sync_status_shows_lag_as_time() -> None:
    from swarm.cli.tables import seconds_text

    assert [seconds_text(s) for s in (None, 0, 4.25, 42.9, 187, 7500)] == [
        "", "0 s", "4.2 s", "42 s", "3 m 07 s", "2 h 05 m",
    ]  # fmt: skip
    doc = _doc([])
    at = time.mktime((2026, 11, 22, 14, 5, 9, 0, 0, -1))
    bin3 = {
        "bin": 3,
        "cursor": 100,
        "synced": [[1, 60]],
        "lag": 40,
        "behind_seconds": 187.2,
        "last_batch": at,
    }
    doc["peers"] = [
        {"overlay": "ab" * 32, "po": 2, "fully_synced": False, "bins": [bin3], "stats": {}, "last_change": {}}
    ]
    doc["peers"][0]["stats"] = dict.fromkeys(["offered", "wanted", "delivered", "repeat", "unsolicited",
                                              "invalid", "missing", "resets"], 0)  # fmt: skip
    lines = sync_status_text(doc).split("\n\n")[1].splitlines()
    header = [c.strip() for c in lines[0].split("|")]
    cells = dict(zip(header, [c.strip() for c in lines[2].split("|")], strict=True))
    assert cells["lag"] == "40" and cells["behind"] == "3 m 07 s" and cells["last batch"] == "14:05:09"
