"""How a node follows spaces: the settings of its replicas (`swarm.spaces.replica`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_CAPACITY", "DEFAULT_INACTIVE_AFTER", "SpaceConfig"]

# The defaults live here, not in the engines that use them (`swarm.spaces.ordering`,
# `swarm.spaces.total`): every node imports this module for its config before it dials its
# peers, and the engines are only needed once a space is followed (docs/performance.md, "Start-up").
DEFAULT_CAPACITY = 1024
"""Messages a causal orderer holds unprocessed, at most (swarm.spaces.ordering)."""
DEFAULT_INACTIVE_AFTER = 30.0
"""Seconds a member's next message may wait before the member counts as inactive (swarm.spaces.total)."""


@dataclass(frozen=True)
class SpaceConfig:
    capacity: int = DEFAULT_CAPACITY  # messages held unprocessed, at most (see ordering)
    inactive_after: float = DEFAULT_INACTIVE_AFTER  # seconds of silence before a member is inactive
    poll: float = 0.05  # seconds between looks at the local store for a feed's next message
    remote_every: float = 2.0  # seconds between asking the swarm for a feed's next message
    tick: float = 0.5  # seconds between pumps when nothing arrives (inactivity timeouts)
