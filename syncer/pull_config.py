"""How the pulling side paces itself and when it gives up on a peer: read by the puller (which
streams to run, how often to refresh cursors) and by each `PullSyncClient` (batches in flight,
timeouts, receipts). Apart from both so the policy does not import the client for its settings.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PullerConfig"]


@dataclass(frozen=True)
class PullerConfig:
    """How the pulling side paces itself and when it gives up on a peer."""

    # Batches per stream waiting for their chunks. 4 syncs faster (benches/sync, alternated runs:
    # ratio 0.83 vs 0.74 on average, mostly in the one-stream tail) but would double what a crash
    # makes the node fetch twice: up to max_incomplete * 128 chunks per stream.
    max_incomplete: int = 2
    batch_timeout: float = 60.0  # a stream whose batches do not complete by then: drop the peer
    cursor_timeout: float = 30.0
    cursor_refresh: float = 5.0  # re-ask the cursors this often, to report the live lag
    # caught up with a peer's offers: re-ask its cursors this soon (fully_synced needs a reply
    # after the last offer); also the least time between two such requests
    cursor_confirm: float = 0.2
    # verifying: receipts of a bin at most this often; the latest of a taken-over run covers
    # what the ones it replaces did (fewer signatures here and checks at the upstream)
    receipt_interval: float = 1.0
