"""Human-readable tables for the command line (pure: JSON documents in, text out), rendered by
`swarm.render.table`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from swarm.render import cell, table

LOSS = ("repeat", "unsolicited", "invalid", "missing", "resets")


def ranges_text(ranges: Sequence[Sequence[int]], limit: int = 3) -> str:
    """[[1, 5], [8, 9]] -> '1-5,8-9'; long lists are cut with a count of the rest."""
    parts = [f"{s}-{e}" if s != e else str(s) for s, e in ranges[:limit]]
    if len(ranges) > limit:
        parts.append(f"+{len(ranges) - limit} more")
    return ",".join(parts) or "-"


def clock(ts: float | None) -> str:
    """A wall-clock time as HH:MM:SS (local), '' for never."""
    if not ts:
        return ""
    return time.strftime("%H:%M:%S", time.localtime(ts))


def seconds_text(seconds: float | None) -> str:
    """A duration as an operator reads it: '0 s', '4.2 s', '3 m 07 s', '2 h 05 m'; '' for unknown."""
    if seconds is None:
        return ""
    if seconds < 10:
        return "0 s" if seconds == 0 else f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} m {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} m"


BIN_HEADERS = [
    "peer", "po", "bin", "cursor", "synced", "lag", "behind", "last batch", "synced?",
    "verified state (size root sig)",
]  # fmt: skip


def sync_status_text(doc: dict[str, Any]) -> str:
    """The `/sync` document as two tables: bins per peer, then the loss counters per peer."""
    head = (
        f"node {doc['overlay'][:16]}  depth {doc['depth']}  chunks {doc['chunks']}  "
        f"peers {len(doc['peers'])}  fully synced {cell(doc['fully_synced'])}"
    )
    if "reserve" in doc:  # issue 17: capacity, radius, evictions, receipts
        head += "\n" + reserve_text(doc["reserve"])
    parts = [head]
    bin_rows = [row for peer in doc["peers"] for row in _bin_rows(peer)]
    if bin_rows:
        parts.append(table(BIN_HEADERS, bin_rows))
    loss_rows = [_loss_row(peer) for peer in doc["peers"]]
    if loss_rows:
        loss_headers = ["peer", "po", "offered", "wanted", "delivered"]
        for name in LOSS:
            loss_headers += [name, "time"]
        parts.append(table([*loss_headers, "fully synced"], loss_rows))
    else:
        parts.append("no peers connected")
    gone = doc.get("disconnected") or []
    if gone:
        parts.append("recent disconnections (newest first)\n" + disconnections_text(gone))
    notable = node_events_text(doc.get("totals", {}))
    if notable:
        parts.append(notable)
    evidence = (doc.get("proofs") or {}).get("evidence") or []
    if evidence:
        rows = [
            [e["upstream"][:12], e["bin"], e["size"], e["roots"][0][:12], e["roots"][1][:12]]
            for e in evidence
        ]
        parts.append(
            "states signed twice with different roots (portable proofs of misbehaviour)\n"
            + table(["upstream", "bin", "size", "root", "other root"], rows)
        )
    return "\n\n".join(parts)


def _bin_rows(peer: dict[str, Any]) -> list[list[object]]:
    """One row per bin of the peer that says something (an empty bin does not)."""
    rows: list[list[object]] = []
    for b in peer["bins"]:
        if b["cursor"] == 0 and not b["synced"]:
            continue
        state = b.get("state")
        proven = f"{state['size']} {state['root'][:12]} {state['signature']}" if state else "-"
        synced = ranges_text(b["synced"])
        name, lag = peer["overlay"][:12], b["lag"]
        behind, last = seconds_text(b.get("behind_seconds")), clock(b.get("last_batch"))
        rows.append(
            [name, peer["po"], b["bin"], b["cursor"], synced, lag, behind, last or "-", lag == 0, proven]
        )
    return rows


def _loss_row(peer: dict[str, Any]) -> list[object]:
    """The peer's traffic and loss counters, each with when it last changed."""
    stats = peer["stats"]
    changed = peer.get("last_change", {})
    row: list[object] = [peer["overlay"][:12], peer["po"]]
    row += [stats["offered"], stats["wanted"], stats["delivered"]]
    for name in LOSS:
        row += [stats[name], clock(changed.get(name))]
    row.append(cell(peer["fully_synced"]))
    return row


def reserve_text(r: dict[str, Any]) -> str:
    """One line on the reserve: fill, radius, evictions, pins and uploads' receipts."""
    return (
        f"reserve {r['size']}/{r['capacity']} chunks ({r['size_within_radius']} within radius "
        f"{r['radius']})  evicted {r['evicted']}  pinned {r['pinned']}  waiting for receipts "
        f"{r['pending_push']}  receipts {r['receipts']} (+{r['own_receipts']} own)"
    )


NODE_EVENTS = {
    "equivocations": "single-owner chunks signed twice with different content (GET /equivocations)",
    "state_equivocations": "states of a peer's bin log signed twice with different roots (evidence below)",
    "damaged_repaired": "damaged chunks fetched again from peers",
    "damaged_lost": "damaged chunks no peer had",
    "violations": "peers dropped for breaking the protocol",
    "handshakes_refused": "handshakes refused",
    "turned_away": "connections turned away (too many greetings at once)",
    "peer_records_rejected": "gossiped peer records with a bad signature",
    "peer_records_rate_limited": "gossiped peer records over a peer's budget",
}


def node_events_text(totals: dict[str, Any]) -> str:
    """The node-wide counters worth an operator's eye, those that are not zero."""
    lines = [f"{totals[name]:>8}  {what}" for name, what in NODE_EVENTS.items() if totals.get(name)]
    return "node events\n" + "\n".join(lines) if lines else ""


def disconnections_text(records: Sequence[dict[str, Any]], reason_width: int = 48) -> str:
    """Ended peer sessions: when, by whom, why, and the peer's loss counters."""
    rows = []
    for d in records:
        reason = d["reason"] or "-"
        if len(reason) > reason_width:
            reason = reason[: reason_width - 3] + "..."
        stats = d["stats"]
        rows.append(
            [d["overlay"][:12], d["po"], clock(d["at"]), d["by"], d["code"], reason, d["violation"]]
            + [stats[name] for name in LOSS]
            + [d["connected_again"]]
        )
    headers = ["peer", "po", "time", "by", "code", "reason", "violation", *LOSS, "back"]
    return table(headers, rows)
