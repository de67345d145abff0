"""How `swarm space` shows a space to a person: one line per message of the log (or one JSON
object per line, ``--json``) and the status table with what processing waits for, since when.

Apart from the commands (`swarm.cli.space`) because this is the presentation of the node's
answers, whichever command fetched them.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["json_line", "log_line", "print_status", "short_owner"]


def short_owner(owner_hex: str) -> str:
    """An owner's address cut to its first 8 hex characters, as the tables show it."""
    return owner_hex[:8]


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) if ms else "-"


def json_line(entry: dict[str, Any]) -> str:
    """A log entry as one line of JSON (``--json``)."""
    import json

    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def log_line(entry: dict[str, Any]) -> str:
    """A log entry for a person: position, member:seq, timeframe, when written, owner, what."""
    timeframe = ",".join("-" if s < 0 else str(s) for s in entry["timeframe"])
    if entry["kind"] == "say":
        what = entry.get("text", "?")
    elif entry["kind"] == "set":
        what = (
            f"set {entry.get('key')} = {entry.get('value')}"
            if entry.get("value")
            else f"clear {entry.get('key')}"
        )
    else:
        what = "(heartbeat)"
    late = " (late)" if entry.get("late") else ""
    return (
        f"{entry['position']:>6}  {entry['member']}:{entry['seq']:<6} [{timeframe}]  "
        f"{_when(entry['written_at'])}  {short_owner(entry['owner'])}: {what}{late}"
    )


def print_status(doc: dict[str, Any]) -> None:
    """The ``swarm space status`` table: per member what is processed, and what stalls, since when."""
    from swarm.render import table

    def ago(since: float) -> str:
        return f"{time.strftime('%H:%M:%S', time.localtime(since))} ({doc['now'] - since:.0f} s ago)"

    rows = []
    for m in doc["members"]:
        state = m["state"]
        if "waiting_for" in m:
            w = m["waiting_for"]
            state = f"waits for {w['member']}:{w['seq']} since {ago(w['since'])}"
        if "invalid" in m:
            state = f"INVALID from {m['invalid']['from']}: {m['invalid']['reason']}"
        rows.append(
            [
                m["member"],
                short_owner(m["owner"]),
                "-" if m["last_processed"] is None else m["last_processed"],
                m["held"],
                "yes" if m["active"] else "NO",
                state,
            ]
        )
    print(
        f"space {doc['space']} {doc['name']!r}: {doc['processed']} processed, {doc['ordered']} in total order"
    )
    print(table(["member", "owner", "last processed", "held", "active", "state"], rows))
    for missing in doc["missing"]:
        owner = short_owner(missing["owner"] or "?")
        what = f"message {missing['seq']} of member {missing['member']} ({owner})"
        if missing["seq"] is None:
            what = f"member {missing['member']} (the member list update naming it)"
        by = ", ".join(f"{m}:{s}" for m, s in missing["needed_by"])
        print(f"STALLED: waiting for {what} since {ago(missing['since'])}, needed by {by}")
    if not doc["missing"]:
        print("not stalled")
    if doc["holding_back_order"]:
        names = ", ".join(str(m["member"]) for m in doc["holding_back_order"])
        pending = doc["pending_order"]
        print(f"total order waits for members {names} ({pending} processed messages not ordered yet)")
