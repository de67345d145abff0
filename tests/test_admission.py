"""Which inbound sessions a node takes (kademlia.admission), against a model and as a bound."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kademlia import PeerTable
from kademlia.admission import NEIGHBOURHOOD_FACTOR, inbound_refusal
from pot import proximity

BASE = bytes(32)


def peer(po: int, n: int) -> bytes:
    """A peer in bin `po` of BASE, distinct per `n` (the bits after the first differing one)."""
    value = (1 << (255 - po)) | (n % (1 << max(0, 240 - po)))
    return value.to_bytes(32)


def test_a_saturated_table_takes_only_what_it_lacks() -> None:
    table = PeerTable(BASE, neighbourhood_size=2, saturation=2, over_saturation=3)
    for po in range(4):
        for n in range(3):
            table.connect(peer(po, n))
    assert table.depth() == 3  # bins 0..2 lie below depth, bin 3 is the neighbourhood
    assert inbound_refusal(table, peer(0, 9), max_connections=100) == "bin 0 over-saturated (3 peers)"
    assert inbound_refusal(table, peer(0, 0), max_connections=100) is None  # connected: a reconnection
    assert inbound_refusal(table, peer(3, 9), max_connections=100) is None  # a neighbour
    assert inbound_refusal(table, peer(7, 1), max_connections=100) is None
    # at the total cap only a bin short of saturation takes more
    assert inbound_refusal(table, peer(3, 9), max_connections=12) == "12 connections and bin 3 saturated"
    assert inbound_refusal(table, peer(7, 1), max_connections=12) is None
    for n in range(3, NEIGHBOURHOOD_FACTOR * 3):
        table.connect(peer(3, n))
    assert inbound_refusal(table, peer(3, 99), max_connections=100) == "neighbourhood bin 3 full (12 peers)"


def model(table: PeerTable, overlay: bytes, max_connections: int) -> bool:
    """Welcome or not, by counting peers one by one."""
    connected = table.connected_peers()
    if overlay in connected:
        return True
    po = min(proximity(BASE, overlay), table.max_po)
    in_bin = sum(1 for p in connected if min(proximity(BASE, p), table.max_po) == po)
    cap = table.over_saturation if po < table.depth() else NEIGHBOURHOOD_FACTOR * table.over_saturation
    if in_bin >= cap:
        return False
    return len(connected) < max_connections or in_bin < table.saturation


ARRIVALS = st.lists(st.tuples(st.integers(0, 12), st.integers(0, 40), st.booleans()), max_size=150)


@given(st.integers(1, 3), st.integers(1, 4), st.integers(0, 4), st.integers(1, 30), ARRIVALS)
def test_admission_follows_the_model_and_bounds_the_sessions(
    size: int, saturation: int, extra: int, max_connections: int, arrivals: list[tuple[int, int, bool]]
) -> None:
    table = PeerTable(
        BASE, neighbourhood_size=size, saturation=saturation, over_saturation=saturation + extra
    )
    for po, n, leaves in arrivals:
        overlay = peer(po, n)
        welcome = inbound_refusal(table, overlay, max_connections=max_connections) is None
        assert welcome == model(table, overlay, max_connections)
        if welcome:
            table.connect(overlay)
        elif leaves and table.connected_peers():
            table.disconnect(table.connected_peers()[n % len(table.connected_peers())])
        assert table.connected_count() <= max_connections + saturation * 13
