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

    # Batches per stream waiting for their chunks: what a crash makes the node fetch twice is at
    # most max_incomplete * 128 chunks per stream, over a peer's streams (one per non-empty bin).
    max_incomplete: int = 2
    # A stream may hold up to this many while all of the peer's streams together hold fewer than
    # max_incomplete per non-empty bin: what finished streams no longer use is lent to the ones
    # still running, so the last stream (bin 0, half the chunks) keeps more batches in flight
    # while the peer's bound stays (docs/performance.md, "Batched deliveries").
    max_incomplete_lent: int = 4
    batch_timeout: float = 60.0  # a stream whose batches do not complete by then: drop the peer
    cursor_timeout: float = 30.0
    cursor_refresh: float = 5.0  # re-ask the cursors this often, to report the live lag
    # caught up with a peer's offers: re-ask its cursors this soon (fully_synced needs a reply
    # after the last offer); also the least time between two such requests
    cursor_confirm: float = 0.2
    # verifying: receipts of a bin at most this often; the latest of a taken-over run covers
    # what the ones it replaces did (fewer signatures here and checks at the upstream)
    receipt_interval: float = 1.0
