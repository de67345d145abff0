"""Kademlia peer table, depth, saturation and peer suggestion strategies.

The pure core (this package's public API) imports only the stdlib and ``pot``.
"""

from .depth import neighbourhood_depth, sync_bins
from .suggest import (
    STRATEGIES,
    FirstStrategy,
    GapStrategy,
    SuggestionStrategy,
    TemperatureStrategy,
    get_strategy,
    is_settled,
    suggest_peer,
)
from .table import BinSummary, PeerTable, TableSnapshot

__all__ = [
    "STRATEGIES",
    "BinSummary",
    "FirstStrategy",
    "GapStrategy",
    "PeerTable",
    "SuggestionStrategy",
    "TableSnapshot",
    "TemperatureStrategy",
    "get_strategy",
    "is_settled",
    "neighbourhood_depth",
    "suggest_peer",
    "sync_bins",
]
