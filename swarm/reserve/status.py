"""What the node reports about its reserve and its uploads' receipts.

One frozen value taken with the node's statistics snapshot (swarm/statistics.py); the ``/sync``
document's ``"reserve"`` section, the ``swarm_reserve_*``/``swarm_push_*`` metrics, the Bee
``/status`` fields and ``swarm sync-status`` are read from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from localstore.reserve import Reserve
from swarm.net.pushsync import PushSync
from swarm.reserve.pusher import Pusher
from syncer.upload_first import UploadFirst

if TYPE_CHECKING:
    from prometheus_client.core import Metric

__all__ = ["ReserveStatus", "reserve_document", "reserve_families", "reserve_status"]


@dataclass(frozen=True)
class ReserveStatus:
    capacity: int = 0
    size: int = 0  # chunks in the reserve (stored, neither pinned nor waiting for a receipt)
    size_within_radius: int = 0
    radius: int = 0
    protected: int = 0  # stored chunks outside the accounting: pinned or held for a receipt
    pinned: int = 0  # distinct pinned chunks
    pins: int = 0  # pinned files
    evicted: int = 0  # chunks evicted since start
    pending_push: int = 0  # uploaded chunks waiting for a receipt
    receipts: int = 0  # receipts received for this node's uploads
    own_receipts: int = 0  # uploaded chunks of this node's own neighbourhood (it signs itself)
    push_attempts: int = 0
    push_failures: int = 0  # pushes that failed and are tried again
    pushes_received: int = 0  # peers' push deliveries
    pushes_stored: int = 0  # of those, stored here (this node signed the receipt)
    pushes_forwarded: int = 0  # of those, forwarded and the receipt relayed
    receipts_rejected: int = 0  # receipts refused: bad signature, another chunk, shallow
    push_batches: int = 0  # batches this node pushed (each up to 15 chunks, one receipt)
    push_batched: int = 0  # chunks those batches got receipted
    pushes_held: int = 0  # chunks peers pushed in batches that this node held already (not hashed again)
    replication_held: int = 0  # live offers that waited while this node served uploads
    replication_held_s: float = 0.0  # how long they waited, summed
    replication_wait: float = 0.0  # the most one waits (0: never)


def reserve_status(
    reserve: Reserve, pusher: Pusher, pushsync: PushSync, upload_first: UploadFirst, pins: int, pinned: int
) -> ReserveStatus:
    r = reserve.statistics()
    u = upload_first.statistics()
    p = pusher.statistics()
    s = pushsync.statistics()
    return ReserveStatus(
        capacity=r.capacity,
        size=r.size,
        size_within_radius=r.size_within_radius,
        radius=r.radius,
        protected=r.protected,
        pinned=pinned,
        pins=pins,
        evicted=r.evicted,
        pending_push=p.pending,
        receipts=p.receipts,
        own_receipts=p.own_receipts,
        push_attempts=p.attempts,
        push_failures=p.failures,
        pushes_received=s.received,
        pushes_stored=s.stored,
        pushes_forwarded=s.forwarded,
        receipts_rejected=s.rejected,
        push_batches=pushsync.batches.sent,
        push_batched=pushsync.batches.attested,
        pushes_held=pushsync.batches.held,
        replication_held=u.held_offers,
        replication_held_s=u.held_seconds,
        replication_wait=u.max_wait,
    )


def reserve_document(status: ReserveStatus) -> dict[str, Any]:
    """The ``"reserve"`` section of ``GET /sync``."""
    return asdict(status)


def reserve_families(status: ReserveStatus) -> Iterator[Metric]:
    """The reserve's and push syncing's metric families (swarm/api/metrics.py)."""
    # imported here: the node imports this module for `reserve_status` before it dials its peers,
    # and prometheus_client (with the http and email modules it brings) is only needed for /metrics
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    gauges = {
        "swarm_reserve_capacity": ("chunks the reserve keeps at most", status.capacity),
        "swarm_reserve_size": ("chunks in the reserve", status.size),
        "swarm_reserve_size_within_radius": (
            "reserve chunks within the storage radius",
            status.size_within_radius,
        ),
        "swarm_storage_radius": ("storage radius (proximity order)", status.radius),
        "swarm_chunks_pinned": ("distinct pinned chunks", status.pinned),
        "swarm_push_pending": ("uploaded chunks waiting for a receipt", status.pending_push),
    }
    for name, (help_text, value) in gauges.items():
        yield GaugeMetricFamily(name, help_text, value=value)
    yield CounterMetricFamily(
        "swarm_reserve_evicted", "chunks evicted from the reserve", value=status.evicted
    )
    receipts = CounterMetricFamily(
        "swarm_push_receipts", "receipts for this node's uploads", labels=["signer"]
    )
    receipts.add_metric(["peer"], status.receipts)
    receipts.add_metric(["self"], status.own_receipts)
    yield receipts
    pushes = CounterMetricFamily("swarm_pushes", "push syncing outcomes", labels=["outcome"])
    for outcome, value in (
        ("attempted", status.push_attempts),
        ("failed", status.push_failures),
        ("received", status.pushes_received),
        ("stored", status.pushes_stored),
        ("forwarded", status.pushes_forwarded),
        ("receipt_rejected", status.receipts_rejected),
        ("batches", status.push_batches),
    ):
        pushes.add_metric([outcome], value)
    yield pushes
