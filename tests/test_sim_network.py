"""swarm.sim networks and the per-key simulation: real tables, the turn rules, seeding, the rows."""

from __future__ import annotations

import dataclasses

import pytest

from kademlia import get_strategy, is_settled
from swarm.sim.grid import GridKey, SimParams, derived_seed, make_grid, overlay_of
from swarm.sim.metrics import gini, route
from swarm.sim.network import build_network
from swarm.sim.simulate import NODE_COLUMNS, RUN_COLUMNS, known_sets, lookups_of, network_of, simulate

PARAMS = SimParams(seed=5, known=0.25, saturation=2, lookups=300)


def a(bits: str) -> bytes:
    return bytes([int(bits, 2)])


# -- grid and seeds -------------------------------------------------------------------------------------


def test_grid_is_biggest_first_and_complete() -> None:
    keys = make_grid(["gap", "first"], [16, 64, 16], 2)
    assert keys == [
        GridKey("gap", 64, 0),
        GridKey("first", 64, 0),
        GridKey("gap", 64, 1),
        GridKey("first", 64, 1),
        GridKey("gap", 16, 0),
        GridKey("first", 16, 0),
        GridKey("gap", 16, 1),
        GridKey("first", 16, 1),
    ]
    with pytest.raises(ValueError):
        make_grid(["gap"], [1], 1)
    with pytest.raises(ValueError):
        make_grid(["gap", "gap"], [4], 1)
    with pytest.raises(ValueError):
        make_grid(["gap"], [4], 0)


def test_seeds_depend_on_seed_size_and_run_only() -> None:
    assert overlay_of(1, 64, 0, 3) == overlay_of(1, 64, 0, 3)
    assert len(overlay_of(1, 64, 0, 3)) == 32
    variants = {
        overlay_of(s, n, r, i)
        for s, n, r, i in [(1, 64, 0, 3), (2, 64, 0, 3), (1, 65, 0, 3), (1, 64, 1, 3), (1, 64, 0, 4)]
    }
    assert len(variants) == 5
    assert derived_seed("known", 1, 64, 0) != derived_seed("lookups", 1, 64, 0)
    assert derived_seed("known", 1, 64, 0) != derived_seed("known", 1, 64, 1)


def test_known_sets_exclude_self_have_the_fraction_and_are_reproducible() -> None:
    sets = known_sets(PARAMS, 41, 0)
    assert len(sets) == 41
    for i, known in enumerate(sets):
        assert len(known) == 10  # round(0.25 * 40)
        assert len(set(known)) == 10
        assert i not in known
        assert all(0 <= j < 41 for j in known)
    assert sets == known_sets(PARAMS, 41, 0)
    assert sets != known_sets(PARAMS, 41, 1)
    assert SimParams(known=0.001).known_count(10) == 1  # everyone knows somebody
    assert SimParams(known=1.0).known_count(10) == 9


def test_params_are_validated() -> None:
    for bad in ({"known": 0.0}, {"known": 1.5}, {"saturation": 0}, {"lookups": 0}):
        with pytest.raises(ValueError):
            SimParams(**bad)


# -- network building -----------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["first", "gap", "temperature"])
def test_network_is_settled_bidirectional_and_uses_the_tables(strategy: str) -> None:
    key = GridKey(strategy, 48, 0)
    net = network_of(key, PARAMS)
    known = known_sets(PARAMS, 48, 0)
    assert net.overlays == [overlay_of(PARAMS.seed, 48, 0, i) for i in range(48)]
    total_outbound = sum(net.outbound)
    edges = set()
    for i, table in enumerate(net.tables):
        assert table.saturation == PARAMS.saturation
        assert is_settled(table)  # suggest_peer has nothing left for anyone
        for peer in table.connected_peers():
            j = net.index[peer]
            assert net.tables[j].is_connected(net.overlays[i])  # both ends see every connection
            edges.add(frozenset((i, j)))
        # a node knows its known set plus whoever connected to it
        for j in known[i]:
            assert table.is_known(net.overlays[j])
    assert len(edges) == total_outbound  # each connection was made once, by one side


def test_first_strategy_connects_the_first_learned_of_a_bin() -> None:
    # one node that knows three peers of bin 0 in a given order, with saturation 1: it takes the first
    overlays = [a("00000000"), a("11111111"), a("10000000"), a("11000000")]
    known = [[1, 2, 3], [0], [0], [0]]
    net = build_network(overlays, known, get_strategy("first"), saturation=1, max_po=7)
    assert net.tables[0].connected(0)[0] == a("11111111")
    assert net.outbound[0] == 1


def test_gap_strategy_fills_the_biggest_gap_seed_example() -> None:
    # seed 003: node 00000000 with 10000000 connected and 10000001, 11000000 known picks 11000000;
    # with saturation 2 the node makes two connections in bin 0: 10000000 first (learned first), then 11000000
    # (the others know nobody, so no inbound connection interferes)
    overlays = [a("00000000"), a("10000000"), a("10000001"), a("11000000")]
    known = [[1, 2, 3], [], [], []]
    gap = build_network(overlays, known, get_strategy("gap"), saturation=2, max_po=7)
    first = build_network(overlays, known, get_strategy("first"), saturation=2, max_po=7)
    assert gap.tables[0].connected(0)[:2] == [a("10000000"), a("11000000")]
    assert first.tables[0].connected(0)[:2] == [a("10000000"), a("10000001")]
    # (the neighbourhood rule then connects the third as well: with depth 0 every known peer is wanted)
    assert gap.tables[0].connected_count() == first.tables[0].connected_count() == 3


def test_turns_are_round_robin_one_suggestion_each() -> None:
    # nodes 0 and 1 both know 2 and 3 only; with round-robin turns node 0 takes one, then node 1 takes one,
    # so each ends with exactly the peers they know (no saturation limit hit) and nobody starves
    overlays = [a("00000000"), a("00000001"), a("10000000"), a("11000000")]
    known = [[2, 3], [2, 3], [], []]
    net = build_network(overlays, known, get_strategy("first"), saturation=4, max_po=7)
    assert net.outbound == [2, 2, 0, 0]
    assert net.tables[2].connected_count() == 2


def test_build_network_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="distinct"):
        build_network([a("00000000")] * 2, [[1], [0]], get_strategy("gap"), max_po=7)
    with pytest.raises(ValueError, match="itself"):
        build_network([a("00000000"), a("00000001")], [[0], [0]], get_strategy("gap"), max_po=7)
    with pytest.raises(ValueError, match="known lists"):
        build_network([a("00000000")], [], get_strategy("gap"), max_po=7)


# -- one key end to end -------------------------------------------------------------------------------


def test_simulate_rows_match_the_columns_and_each_other() -> None:
    key = GridKey("gap", 48, 1)
    result = simulate(key, PARAMS)
    run = dict(zip([c for c, _ in RUN_COLUMNS], result.run, strict=True))
    nodes = [dict(zip([c for c, _ in NODE_COLUMNS], row, strict=True)) for row in result.nodes]
    assert (run["strategy"], run["nodes"], run["run"], run["lookups"]) == ("gap", 48, 1, 300)
    assert [n["node"] for n in nodes] == list(range(48))
    assert run["gini"] == gini([n["relayed"] for n in nodes])
    assert sum(n["served"] for n in nodes) == 300
    assert run["connections_mean"] == sum(n["connections"] for n in nodes) / 48
    assert run["connections_max"] == max(n["connections"] for n in nodes)
    assert run["gap_po_worst"] == min(n["gap_po"] for n in nodes)
    assert run["gap_po_mean"] == sum(n["gap_po"] for n in nodes) / 48
    assert sum(n["outbound"] for n in nodes) * 2 == sum(n["connections"] for n in nodes)
    assert 0 <= run["failed"] <= 1 and run["hops_p95"] <= run["hops_max"]
    # the relays of all lookups: each lookup of h hops has h - 1 relays (if it moved at all)
    net = network_of(key, PARAMS)
    lookups = [route(net, o, t) for o, t in lookups_of(PARAMS, 48, 1)]
    assert sum(n["relayed"] for n in nodes) == sum(max(0, lk.hops - 1) for lk in lookups)
    assert run["hops_mean"] == sum(lk.hops for lk in lookups) / 300
    assert run["failed"] == sum(lk.failed for lk in lookups) / 300


def test_simulate_is_a_pure_function_of_key_and_params() -> None:
    key = GridKey("temperature", 40, 0)
    assert simulate(key, PARAMS) == simulate(key, PARAMS)
    assert simulate(key, PARAMS) != simulate(key, dataclasses.replace(PARAMS, seed=6))


def test_strategies_share_networks_and_lookups() -> None:
    rows = {s: simulate(GridKey(s, 40, 0), PARAMS).nodes for s in ("first", "gap", "temperature")}
    overlay = [c for c, _ in NODE_COLUMNS].index("overlay")
    served = [c for c, _ in NODE_COLUMNS].index("served")
    for s in ("gap", "temperature"):
        assert [r[overlay] for r in rows[s]] == [r[overlay] for r in rows["first"]]
    # successful lookups end at the same (globally closest) node whatever the strategy: same targets
    totals = {s: sum(r[served] for r in rows[s]) for s in rows}
    assert totals == {"first": 300, "gap": 300, "temperature": 300}
