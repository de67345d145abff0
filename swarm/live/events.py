"""What a local follower or subscriber is told, and how it reads as JSON (pure).

These are the events of the live streams served over HTTP (`swarm.api.live`, server-sent events)
and printed by `swarm feed follow` and `swarm topic subscribe`. Sequence numbers are 64-bit and
are written as ``0x``-prefixed hex strings in JSON (a JavaScript number holds 53 bits); feed
indices are plain integers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chunks.feeds import FeedUpdate
from streamer.messages import TopicPush
from swarm.live.advisory import Advisory
from swarm.live.seqno import Verdict

__all__ = [
    "FollowStarted",
    "LiveEvent",
    "LossNotice",
    "TopicMessage",
    "UpdateShown",
    "advisory_json",
    "event_json",
]


@dataclass(frozen=True)
class FollowStarted:
    """A follower starts at ``next_index``; ``latest`` is the latest update found (None: none)."""

    stream: str
    next_index: int
    latest: int | None
    mode: str


@dataclass(frozen=True)
class UpdateShown:
    """The next update of a followed feed, and how it came: pushed, filled (a gap retrieved),
    caught up (retrieved because it was published before the follower started), probed."""

    update: FeedUpdate
    via: str
    at: float  # wall-clock time it was shown


@dataclass(frozen=True)
class LossNotice:
    """Numbers that will not be shown: feed updates given up (``start..end``), topic messages
    skipped (their count, and range when known), or messages dropped for a slow consumer."""

    stream: str
    lost: int
    start: int | None
    end: int | None
    reason: str


@dataclass(frozen=True)
class TopicMessage:
    """A topic message delivered to a subscriber, with the verdict on its number."""

    message: TopicPush
    verdict: Verdict
    at: float


@dataclass(frozen=True)
class AdvisoryEvent:
    advisory: Advisory


LiveEvent = FollowStarted | UpdateShown | LossNotice | TopicMessage | AdvisoryEvent


def _seq(value: int | None) -> str | None:
    return None if value is None else f"{value:#018x}"


def _bound(value: int) -> int | str:
    """A range bound in JSON: an integer, or hex beyond what a JavaScript number holds exactly."""
    return value if value < 1 << 53 else f"{value:#018x}"


def _text(payload: bytes) -> str | None:
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if text.isprintable() or not text else None


def _update_json(event: UpdateShown) -> dict[str, Any]:
    update = event.update
    soc = update.soc
    doc: dict[str, Any] = {
        "index": update.index,
        "via": event.via,
        "at": event.at,
        "address": soc.address.hex(),
        "owner": update.owner.hex(),
        "topic": update.topic.hex(),
        "span": soc.span,
        "payload": soc.payload.hex(),
        "text": _text(soc.payload),
        "timestamp": None,
        "reference": None,
    }
    fields = update.v1_fields
    if fields is not None:
        doc["timestamp"], doc["reference"] = fields[0], fields[1].hex()
    return doc


def _topic_json(event: TopicMessage) -> dict[str, Any]:
    msg, verdict = event.message, event.verdict
    return {
        "topic": msg.topic.hex(),
        "publisher": msg.owner.hex(),
        "seq": _seq(msg.seq),
        "chain": _seq(msg.chain or None),
        "time": msg.time,
        "status": verdict.status.value,
        "lost": verdict.lost,
        "missing": None if verdict.missing is None else [_seq(verdict.missing[0]), _seq(verdict.missing[1])],
        "at": event.at,
        "payload": msg.payload.hex(),
        "text": _text(msg.payload),
    }


def advisory_json(advisory: Advisory) -> dict[str, Any]:
    """raims' DATALOSS advisory fields, with the missing ranges and restarts kept apart."""
    return {
        "class": "ERROR",
        "source": "SYSTEM",
        "name": "DATALOSS.INBOUND.LIVE",
        "description": advisory.description,
        "at": advisory.at,
        "lost": advisory.lost,
        "restarts": advisory.restarts,
        "stream_count": advisory.stream_count,
        "streams": [
            {
                "stream": s.stream,
                "lost": s.lost,
                "unknown": s.unknown,
                "restarts": s.restarts,
                "ranges": [[_bound(start), _bound(end)] for start, end in s.ranges],
                "ranges_dropped": s.ranges_dropped,
            }
            for s in advisory.streams
        ],
    }


def event_json(event: LiveEvent) -> tuple[str, dict[str, Any]]:
    """The server-sent event name and JSON document of ``event``."""
    if isinstance(event, UpdateShown):
        return "update", _update_json(event)
    if isinstance(event, TopicMessage):
        return "message", _topic_json(event)
    if isinstance(event, LossNotice):
        return "loss", {
            "stream": event.stream,
            "lost": event.lost,
            "start": None if event.start is None else _bound(event.start),
            "end": None if event.end is None else _bound(event.end),
            "reason": event.reason,
        }
    if isinstance(event, FollowStarted):
        return "start", {
            "stream": event.stream,
            "next_index": event.next_index,
            "latest": event.latest,
            "mode": event.mode,
        }
    return "advisory", advisory_json(event.advisory)
