"""How a node follows spaces: the settings of its replicas (`swarm.spaces.replica`)."""

from __future__ import annotations

from dataclasses import dataclass

from swarm.spaces.ordering import DEFAULT_CAPACITY
from swarm.spaces.total import DEFAULT_INACTIVE_AFTER

__all__ = ["SpaceConfig"]


@dataclass(frozen=True)
class SpaceConfig:
    capacity: int = DEFAULT_CAPACITY  # messages held unprocessed, at most (see ordering)
    inactive_after: float = DEFAULT_INACTIVE_AFTER  # seconds of silence before a member is inactive
    poll: float = 0.05  # seconds between looks at the local store for a feed's next message
    remote_every: float = 2.0  # seconds between asking the swarm for a feed's next message
    tick: float = 0.5  # seconds between pumps when nothing arrives (inactivity timeouts)
