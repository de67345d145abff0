"""Kademlia peer table, depth, saturation and peer suggestion strategies.

The pure core (this package's public API) imports only the stdlib and ``pot``. ``MAX_PO``, the deepest
bin, is ``pot.MAX_PO`` (defined at the bottom so that every layer binning addresses shares it).
"""

from pot import MAX_PO

from .depth import neighbourhood_depth, sync_bins
from .snapshot import BinSummary, TableSnapshot
from .suggest import (
    STRATEGIES,
    FirstStrategy,
    GapStrategy,
    HottestStrategy,
    LoadedStrategy,
    SuggestionStrategy,
    TemperatureStrategy,
    get_strategy,
    is_settled,
    suggest_peer,
)
from .table import PeerTable

__all__ = [
    "MAX_PO",
    "STRATEGIES",
    "BinSummary",
    "FirstStrategy",
    "GapStrategy",
    "HottestStrategy",
    "LoadedStrategy",
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
