"""What the live view shows of a node, from its successive `/sync` documents (pure): per bin the
progress over all its peers, how far behind in seconds, and rates between two samples."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["BinProgress", "SyncRates", "behind", "bin_progress"]


@dataclass(frozen=True)
class BinProgress:
    """One bin a node syncs, over all its peers: bin IDs synced, the peers' cursors, the peers,
    the most seconds any peer's bin is behind and the latest batch synced (wall-clock)."""

    synced: int
    cursor: int
    peers: int
    behind: float = 0.0
    last_batch: float | None = None

    @property
    def fraction(self) -> float:
        return self.synced / self.cursor if self.cursor else 1.0


def bin_progress(doc: dict[str, Any]) -> dict[int, BinProgress]:
    """Per bin of a `/sync` document: what is synced (cursor - lag) of the peers' cursors."""
    sums: dict[int, BinProgress] = {}
    for peer in doc["peers"]:
        for b in peer["bins"]:
            old = sums.get(b["bin"], BinProgress(0, 0, 0))
            last = [t for t in (old.last_batch, b.get("last_batch")) if t is not None]
            sums[b["bin"]] = BinProgress(
                old.synced + b["cursor"] - b["lag"],
                old.cursor + b["cursor"],
                old.peers + 1,
                max(old.behind, b.get("behind_seconds", 0.0)),
                max(last) if last else None,
            )
    return dict(sorted(sums.items()))


def behind(doc: dict[str, Any]) -> float:
    """The most seconds any of the node's bins is behind any of its peers."""
    return max((b.get("behind_seconds", 0.0) for p in doc["peers"] for b in p["bins"]), default=0.0)


@dataclass
class SyncRates:
    """Rates from successive samples of one node: chunks stored and bin IDs synced per second."""

    at: float | None = None
    chunks: int = 0
    bins: dict[int, int] = field(default_factory=dict)

    def update(self, doc: dict[str, Any], now: float) -> tuple[float | None, dict[int, float | None]]:
        """(chunks per second, per bin IDs synced per second) since the last sample; None for
        what has no earlier sample."""
        progress = bin_progress(doc)
        seconds = now - self.at if self.at is not None else 0.0

        def per_second(value: int, old: int | None) -> float | None:
            return max(0, value - old) / seconds if seconds > 0 and old is not None else None

        chunk_rate = per_second(doc["chunks"], self.chunks if self.at is not None else None)
        bin_rates = {bin: per_second(p.synced, self.bins.get(bin)) for bin, p in progress.items()}
        self.at, self.chunks = now, doc["chunks"]
        self.bins = {bin: p.synced for bin, p in progress.items()}
        return chunk_rate, bin_rates
