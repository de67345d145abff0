"""The loss table as a document (`GET /loss`) and as text (`swarm loss`), pure functions.

The document is the `LiveStatistics` snapshot in JSON: one row per peer (and ``local``) with each
counter and the unix time of its last change, the totals, and the relay's traffic and state. The
text is raims' ``show loss`` table: a row per peer, each counter beside the time it last changed.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from swarm.live.loss import COUNTERS
from swarm.live.results import LiveStatistics
from swarm.render import table

__all__ = ["SHORT_NAMES", "loss_document", "loss_summary_row", "loss_text"]

SHORT_NAMES = {
    "repeat": "repeat",
    "not_subscribed": "not sub",
    "msg_loss": "msg loss",
    "inbox_loss": "ibx loss",
    "restarts": "restarts",
    "gaps_open": "gaps open",
    "gaps_filled": "filled",
    "invalid": "invalid",
    "equivocations": "equivoc",
}


def loss_document(overlay: bytes, live: LiveStatistics) -> dict[str, Any]:
    rows = [
        {
            "peer": row.source,
            **{name: row.counts[name] for name in COUNTERS},
            "changed": {name: row.changed[name] for name in COUNTERS},
        }
        for row in live.loss
    ]
    totals = {name: sum(row.counts[name] for row in live.loss) for name in COUNTERS}
    return {
        "overlay": overlay.hex(),
        "rows": rows,
        "totals": totals,
        "traffic": {
            "received": live.received,
            "accepted": live.accepted,
            "duplicates": live.received - live.accepted,
            "bytes_received": live.bytes_received,
            "bytes_accepted": live.bytes_accepted,
            "forwarded": live.forwarded,
            "pruned": live.pruned,
            "dropped": live.dropped,
            "throttled": live.throttled,
            "published": live.published,
        },
        "followers": live.followers,
        "subscribers": live.subscribers,
        "advisories": live.advisories,
        "windows": {"detectors": asdict(live.detectors), "receivers": asdict(live.receivers)},
        "interest": asdict(live.interest),
        "pruning": asdict(live.pruning),
        "streams": list(live.streams),
    }


def _clock(ts: float | None) -> str:
    """raims' time column: HH:MM:SS.mmm (local), empty for never."""
    if not ts:
        return ""
    return time.strftime("%H:%M:%S", time.localtime(ts)) + f".{int(ts * 1000) % 1000:03d}"


def _cell(count: int, changed: float | None) -> str:
    return f"{count} {_clock(changed)}" if changed else str(count)


def loss_text(doc: dict[str, Any]) -> str:
    """A row per peer (``local`` first): each counter with the time of its last change."""
    headers = ["peer", *(SHORT_NAMES[name] for name in COUNTERS)]
    rows = [
        [row["peer"] if row["peer"] == "local" else row["peer"][:12]]
        + [_cell(row[name], row["changed"][name]) for name in COUNTERS]
        for row in doc["rows"]
    ]
    traffic = doc["traffic"]
    ratio = traffic["received"] / traffic["accepted"] if traffic["accepted"] else 0.0
    head = (
        f"node {doc['overlay'][:16]}  live: {traffic['accepted']} new of {traffic['received']} received "
        f"({ratio:.2f} per new), {traffic['forwarded']} forwarded, {traffic['pruned']} pruned, "
        f"{traffic['dropped']} dropped, "
        f"{doc['followers']} followers, {doc['subscribers']} subscribers, {doc['advisories']} advisories"
    )
    return head + "\n" + (table(headers, rows) if rows else "no live messages seen yet")


def loss_summary_row(index: int, doc: dict[str, Any]) -> list[object]:
    """One line of ``swarm loss --all``: a node's totals."""
    totals, traffic = doc["totals"], doc["traffic"]
    ratio = round(traffic["received"] / traffic["accepted"], 2) if traffic["accepted"] else None
    return [index, doc["overlay"][:16], *(totals[name] for name in COUNTERS), ratio]
