"""What the live service hands back to its callers: the result of publishing at this node
(`Published`, or `Equivocation` when another update holds the index) and the node's live
counters (`LiveStatistics`, read by the status report, the metrics and `swarm loss`).

Kept apart from the service so that the readers of these plain values (`swarm.statistics`,
`swarm.live.report`, `swarm.live.metrics`) do not depend on the trio shell that makes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swarm.live.interest import InterestStatistics
from swarm.live.loss import LossRow
from swarm.live.pruning import PushPathStatistics
from swarm.live.window import WindowStatistics

__all__ = ["Equivocation", "LiveStatistics", "Published"]


class Equivocation(Exception):
    """A different update is already known at this index of the feed."""


@dataclass(frozen=True)
class Published:
    """What publishing at this node did: ``outcome`` "new" (pushed to ``pushed`` peers) or
    "repeat" (already published: nothing sent), and the topic message's numbers."""

    outcome: str
    pushed: int
    seq: int | None = None
    chain: int | None = None


@dataclass(frozen=True)
class LiveStatistics:
    loss: tuple[LossRow, ...]
    received: int  # messages pushed to this node (and published here), repeats included
    accepted: int  # of which new
    bytes_received: int
    bytes_accepted: int
    forwarded: int  # messages queued to peers
    pruned: int  # pushes not sent: the peer paused the chain (swarm.live.pruning)
    dropped: int  # messages not queued: the peer's queue was full
    published: int
    followers: int
    subscribers: int
    advisories: int
    detectors: WindowStatistics
    receivers: WindowStatistics
    interest: InterestStatistics  # streams followed and relayed, peers exchanging interest
    pruning: PushPathStatistics  # paused push paths, and the words about them
    throttled: int = 0  # live messages from peers dropped over their rate (swarm.live.ratelimit)
    streams: tuple[dict[str, Any], ...] = ()  # per feed or topic: received, new, repeat ... (stream_counts)
