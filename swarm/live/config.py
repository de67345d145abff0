"""The settings of a node's live propagation (`swarm.node.NodeConfig.live`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from swarm.live.detector import DEFAULT_MAX_GAPS
from swarm.live.follower import FollowerConfig
from swarm.live.links import DEFAULT_LINK_CAPACITY
from swarm.live.pruning import DEFAULT_EAGER
from swarm.live.ratelimit import CONTROL_LIMITS, RateLimits
from swarm.live.relay import DEFAULT_SKEW
from swarm.live.window import MIB, GenerationWindow

__all__ = ["LiveConfig"]


@dataclass(frozen=True)
class LiveConfig:
    follower: FollowerConfig = field(default_factory=FollowerConfig)
    window_bytes: int = 8 * MIB  # raims' window size (the newest generation's)
    window_count: int = 40_000  # raims' sub_window_count
    window_min: float = 10.0  # raims' minimum window time
    window_max: float = 60.0
    max_gaps: int = DEFAULT_MAX_GAPS
    skew: float = DEFAULT_SKEW
    link_capacity: int = DEFAULT_LINK_CAPACITY
    eager: int = DEFAULT_EAGER  # unpaused carriers kept per chain (swarm.live.pruning); 0: no pruning
    subscriber_backlog: int = 256
    advisory_interval: float = 1.0
    tick: float = 0.25
    push_limits: RateLimits = field(default_factory=RateLimits)  # per peer (swarm.live.ratelimit)
    control_limits: RateLimits = CONTROL_LIMITS  # interest, pause and have entries per peer
    interest_interval: float = 0.25  # a peer is told of interest changes at most this often

    def window(self, entry_bytes: Callable[[Any], int], now: float) -> GenerationWindow[Any, Any]:
        return GenerationWindow(
            generations=3,
            max_bytes=self.window_bytes,
            max_count=self.window_count,
            min_interval=self.window_min,
            max_interval=self.window_max,
            entry_bytes=entry_bytes,
            now=now,
        )
