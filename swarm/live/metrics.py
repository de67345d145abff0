"""The live-propagation families of `GET /metrics` (Prometheus), from one `LiveStatistics`.

The loss table becomes ``swarm_live_loss_total{peer, counter}`` with the time of each counter's
last change in ``swarm_live_loss_changed_seconds`` (raims' ``show loss`` columns as labels; the
``peer`` label is a peer's overlay in hex or ``local``), and the gauge of open gaps
``swarm_live_gaps_open``; then what passed through the relay and what its state holds.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from swarm.live.loss import COUNTERS, GAUGES
from swarm.live.pruning import PushPathStatistics
from swarm.live.results import LiveStatistics

__all__ = ["live_families"]


def live_families(live: LiveStatistics) -> Iterator[Metric]:
    yield from _loss_families(live)
    messages = CounterMetricFamily(
        "swarm_live_messages",
        "live messages: received (pushed to this node or published here, repeats included), accepted "
        "(new), forwarded (queued to peers), pruned (not pushed: the peer paused the chain), dropped "
        "(a peer's queue was full), published (here)",
        labels=["outcome"],
    )
    for outcome in ("received", "accepted", "forwarded", "pruned", "dropped", "published"):
        messages.add_metric([outcome], getattr(live, outcome))
    yield messages
    payload = CounterMetricFamily(
        "swarm_live_payload_bytes", "payload bytes of live messages received and accepted", labels=["outcome"]
    )
    payload.add_metric(["received"], live.bytes_received)
    payload.add_metric(["accepted"], live.bytes_accepted)
    yield payload
    entries = GaugeMetricFamily(
        "swarm_live_window_entries",
        "chains in the rotating windows: the relay's duplicate detectors and the subscribers' last numbers",
        labels=["table"],
    )
    size = GaugeMetricFamily("swarm_live_window_bytes", "estimated bytes of the windows", labels=["table"])
    rotations = CounterMetricFamily("swarm_live_window_rotations", "window rotations", labels=["table"])
    for table, stats in (("detectors", live.detectors), ("receivers", live.receivers)):
        entries.add_metric([table], stats.entries)
        size.add_metric([table], stats.bytes)
        rotations.add_metric([table], stats.rotations)
    yield from (entries, size, rotations)
    yield GaugeMetricFamily("swarm_live_followers", "local feed followers", value=live.followers)
    yield GaugeMetricFamily("swarm_live_subscribers", "local topic subscribers", value=live.subscribers)
    yield CounterMetricFamily("swarm_live_advisories", "loss advisories sent", value=live.advisories)
    interest = GaugeMetricFamily(
        "swarm_live_interest",
        "streams followed here, relayed for peers, peers exchanging interest",
        labels=["kind"],
    )
    for kind in ("followed", "relayed", "peers"):
        interest.add_metric([kind], getattr(live.interest, kind))
    yield interest
    yield from _pruning_families(live.pruning)


def _pruning_families(pruning: PushPathStatistics) -> Iterator[Metric]:
    paused = GaugeMetricFamily(
        "swarm_live_paused",
        "chains paused on a link: here (this node paused a peer's pushes), by_peers (peers paused ours)",
        labels=["side"],
    )
    paused.add_metric(["here"], pruning.paused_here)
    paused.add_metric(["by_peers"], pruning.paused_by_peers)
    words = CounterMetricFamily(
        "swarm_live_pause_messages", "LivePause messages sent: pauses and resumes", labels=["word"]
    )
    words.add_metric(["pause"], pruning.pauses_sent)
    words.add_metric(["resume"], pruning.resumes_sent)
    yield from (paused, words)


def _loss_families(live: LiveStatistics) -> Iterator[Metric]:
    counts = CounterMetricFamily(
        "swarm_live_loss",
        "the live loss table: per peer (or local), repeat, not_subscribed, msg_loss, inbox_loss, restarts, "
        "gaps_filled, invalid, equivocations (docs/live.md)",
        labels=["peer", "counter"],
    )
    changed = GaugeMetricFamily(
        "swarm_live_loss_changed_seconds",
        "unix time of each loss counter's last change",
        labels=["peer", "counter"],
    )
    gaps = GaugeMetricFamily(
        "swarm_live_gaps_open", "feed updates local followers wait for now", labels=["peer"]
    )
    for row in live.loss:
        for name in COUNTERS:
            when = row.changed[name]
            if name in GAUGES:
                gaps.add_metric([row.source], row.counts[name])
            else:
                counts.add_metric([row.source, name], row.counts[name])
            if when is not None:
                changed.add_metric([row.source, name], when)
    yield from (counts, changed, gaps)
