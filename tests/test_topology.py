"""Topology keeps the address book and the peer table in agreement; SettledDepth against a model."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kademlia import PeerTable
from kademlia.addresses import AddressBook, DialPolicy, PeerAddress
from swarm.net.topology import Topology
from swarm.reserve.settled_depth import SettledDepth

BASE = bytes(32)
FAR = [bytes([0x80 | i]) + bytes(31) for i in range(4)]  # all in bin 0 of BASE


def make_topology(per_bin: int = 2) -> tuple[Topology, list[bytes], list[str]]:
    forgotten: list[bytes] = []
    changes: list[str] = []
    topology = Topology(
        BASE,
        PeerTable(BASE),
        AddressBook(BASE, per_bin=per_bin),
        DialPolicy(["127.0.0.0/8"]),
        forget_record=forgotten.append,
        changed=lambda: changes.append("changed"),
    )
    return topology, forgotten, changes


def test_an_address_the_book_lets_go_leaves_the_table_and_gossip() -> None:
    topology, forgotten, changes = make_topology()
    assert topology.learn(PeerAddress(FAR[0], "127.0.0.1", 1))
    assert topology.learn(PeerAddress(FAR[1], "127.0.0.1", 2))
    assert len(changes) == 2
    topology.connected(FAR[0], None, None)  # seen working: kept
    assert topology.learn(PeerAddress(FAR[2], "127.0.0.1", 3))
    assert forgotten == [FAR[1]]
    assert set(topology.table.known_peers()) == {FAR[0], FAR[2]}


def test_refused_addresses_are_counted_and_change_nothing() -> None:
    topology, _, changes = make_topology(per_bin=1)
    assert not topology.learn(PeerAddress(BASE, "127.0.0.1", 1))  # ourselves: not counted
    assert not topology.learn(PeerAddress(FAR[0], "10.0.0.1", 1))  # outside the dial policy
    assert topology.learn(PeerAddress(FAR[1], "127.0.0.1", 2))
    topology.connected(FAR[1], "127.0.0.1", 2)
    assert not topology.learn(PeerAddress(FAR[2], "127.0.0.1", 3))  # bin full of working peers
    assert topology.refused == 2
    assert set(topology.table.known_peers()) == {FAR[1]}
    assert len(changes) == 1
    topology.disconnected(FAR[1])
    assert len(changes) == 2 and not topology.table.connected_peers()


@given(
    st.integers(1, 4),
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3), st.floats(0, 50)), max_size=40),
)
def test_settled_depth_against_a_model(size: int, steps: list[tuple[int, int, float]]) -> None:
    settled = SettledDepth(size, settle=60.0)
    now, since = 0.0, None  # the model: when the current depth was first seen with enough peers
    last_depth = None
    for connected, depth, dt in steps:
        now += dt
        got = settled.observe(connected, depth, now)
        if connected < size:
            since, last_depth = None, None
            assert got is None
            continue
        if since is None or last_depth != depth:
            since, last_depth = now, depth
        assert got == (depth if now - since >= 60.0 else None)
