"""swarm.sim networks: real tables, the turn rules, gossip, churn, seeding, and the per-key rows."""

from __future__ import annotations

import dataclasses
import random

import pytest

from kademlia import get_strategy, is_settled
from swarm.sim.gossip import Hive
from swarm.sim.grid import GridKey, SimParams, derived_seed, make_grid, overlay_of
from swarm.sim.metrics import gini
from swarm.sim.network import SimNetwork
from swarm.sim.scenario import known_sets, run_scenario
from swarm.sim.simulate import NODE_COLUMNS, RUN_COLUMNS, simulate

PARAMS = SimParams(seed=5, saturation=2, lookups=300, bootnodes=2)
KNOWN = dataclasses.replace(PARAMS, known=0.25)
CHURN = dataclasses.replace(PARAMS, churn=0.1, churn_rounds=3, turns=2)


def a(bits: str) -> bytes:
    return bytes([int(bits, 2)])


def network(strategy: str = "first", **kwargs: object) -> SimNetwork:
    options: dict[str, object] = {"saturation": 1, "neighbourhood_size": 3, "max_po": 7}
    options.update(kwargs)
    return SimNetwork(get_strategy(strategy), **options)  # type: ignore[arg-type]


def settle(net: SimNetwork) -> None:
    assert net.settle(1000)


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
    purposes = {derived_seed(p, 1, 64, 0) for p in ("known", "lookups", "churn", "gossip")}
    assert len(purposes) == 4
    assert derived_seed("known", 1, 64, 0) != derived_seed("known", 1, 64, 1)


def test_known_sets_exclude_self_have_the_fraction_and_are_reproducible() -> None:
    sets = known_sets(KNOWN, 41, 0)
    assert len(sets) == 41
    for i, known in enumerate(sets):
        assert len(known) == 10  # round(0.25 * 40)
        assert len(set(known)) == 10
        assert i not in known
        assert all(0 <= j < 41 for j in known)
    assert sets == known_sets(KNOWN, 41, 0)
    assert sets != known_sets(KNOWN, 41, 1)
    assert SimParams(known=0.001).known_count(10) == 1  # everyone knows somebody
    assert SimParams(known=1.0).known_count(10) == 9
    with pytest.raises(ValueError, match="gossip"):
        SimParams().known_count(10)


@pytest.mark.parametrize(
    "bad",
    [
        {"known": 0.0},
        {"known": 1.5},
        {"saturation": 0},
        {"lookups": 0},
        {"churn": 1.0},
        {"churn": -0.1},
        {"churn_rounds": 0},
        {"turns": 0},
        {"bootnodes": 0},
        {"gossip_bin_size": 0},
        {"known_per_bin": 0},
    ],
)
def test_params_are_validated(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        SimParams(**bad)  # type: ignore[arg-type]


# -- the network's rules, on hand-made 1-byte overlays -----------------------------------------------------


def test_first_strategy_connects_the_first_learned_of_a_bin() -> None:
    net = network()
    for x in ["00000000", "11111111", "10000000", "11000000"]:
        net.join(a(x))
    for x in ["11111111", "10000000", "11000000"]:
        net.learn(0, a(x))
    net.active -= {1, 2, 3}  # they know nobody
    net.run_round()
    assert net.tables[0].connected(0) == [a("11111111")]
    assert net.outbound == [1, 0, 0, 0]
    assert net.tables[1].connected(0) == [a("00000000")]  # connections are two-way
    settle(net)  # depth 0 (fewer than 3 peers): the neighbourhood rule then takes the others too
    assert net.tables[0].connected(0) == [a("11111111"), a("10000000"), a("11000000")]


def test_gap_strategy_fills_the_biggest_gap_seed_example() -> None:
    # seed 003: node 00000000 with 10000000 connected and 10000001, 11000000 known picks 11000000
    results = {}
    for name in ("first", "gap"):
        net = network(name, saturation=2)
        for x in ["00000000", "10000000", "10000001", "11000000"]:
            net.join(a(x), [])
        for x in ["10000000", "10000001", "11000000"]:
            net.learn(0, a(x))
        net.run_round()  # the first connection: the only candidate... of three, the same for both
        net.run_round()
        results[name] = net.tables[0].connected(0)[:2]
    assert results["first"] == [a("10000000"), a("10000001")]
    assert results["gap"] == [a("10000000"), a("11000000")]


def test_rounds_give_each_active_node_one_turn_in_index_order() -> None:
    net = network(saturation=4)
    for x in ["00000000", "00000001", "10000000", "11000000"]:
        net.join(a(x))
    for i in (0, 1):
        net.learn(i, a("10000000"))
        net.learn(i, a("11000000"))
    net.active -= {2, 3}
    net.run_round()
    assert net.outbound == [1, 1, 0, 0] and net.rounds == 1
    settle(net)
    assert net.outbound == [2, 2, 0, 0]
    assert net.tables[2].connected_count() == 2


def test_a_node_that_left_is_disconnected_and_a_dial_to_it_fails() -> None:
    net = network(saturation=2)
    for x in ["00000000", "10000000", "11000000", "01000000"]:
        net.join(a(x))
    net.connect(0, 1)
    net.connect(0, 2)
    net.leave(1)
    assert not net.tables[0].is_connected(a("10000000"))
    assert net.tables[0].is_known(a("10000000"))  # known until a dial fails
    assert net.size == 3 and net.online_nodes() == [0, 2, 3] and net.left[1] == 0
    net.tables[3].add_known(a("10000000"))
    net.turn(3)
    assert net.dial_failures == 1
    assert not net.tables[3].is_known(a("10000000"))  # forgotten, as bee prunes it
    with pytest.raises(ValueError, match="not online"):
        net.leave(1)


def test_an_over_saturated_bin_refuses_an_inbound_connection() -> None:
    # node 0 holds over_saturation (8) peers in bin 0 and its depth is 1: a ninth in bin 0 is refused
    net = network(saturation=1)
    hub = net.join(a("00000000"))
    bin0 = [net.join(bytes([0x80 | x])) for x in range(9)]
    deep = [net.join(a(x)) for x in ["01000000", "00100000", "00010000"]]
    for i in [*bin0[:8], *deep]:
        net.connect(hub, i)
    assert net.tables[hub].depth() >= 1
    late = bin0[8]
    net.tables[late].add_known(a("00000000"))
    net.turn(late)
    assert net.refused == 1 and not net.tables[hub].is_connected(net.overlays[late])


def test_hive_announces_a_window_per_bin_and_every_neighbour() -> None:
    rng = random.Random(1)
    net = network(saturation=8, announce=Hive(rng, bin_size=2))
    x = net.join(a("00000000"))
    far = [net.join(bytes([b])) for b in (0x80, 0x90, 0xA0, 0xB0, 0xC0)]  # x's bin 0
    middle = [net.join(bytes([b])) for b in (0x40, 0x20, 0x10, 0x08)]  # bins 1-4, one each
    near = [net.join(bytes([b])) for b in (0x04, 0x05, 0x06)]  # x's bin 5: its neighbourhood
    for i in far + middle + near:
        net.tables[x].connect(net.overlays[i])
        net.tables[i].connect(net.overlays[x])
    assert net.tables[x].depth() == 5
    new = net.join(a("00000111"))  # a neighbour of x
    net.connect(new, x)
    known = set(net.tables[new].known_peers())
    assert len(known & {net.overlays[i] for i in far}) == 2  # bin 0 of x: a window of 2
    assert {net.overlays[i] for i in middle + near} <= known  # small bins and the neighbourhood: all
    for i in far + middle + near:  # every peer named learned the new node
        assert net.tables[i].is_known(a("00000111")) == (net.overlays[i] in known)


def test_hive_contact_names_what_the_bootnode_knows_and_does_not_connect() -> None:
    hive = Hive(random.Random(2), bin_size=4)
    net = network(announce=hive)
    boot = net.join(a("00000000"))
    first = net.join(a("10000000"))
    hive.contact(net, first, boot)  # the bootnode knows nobody: the joiner keeps the bootnode
    assert net.tables[first].known_peers() == [a("00000000")]
    second = net.join(a("01000000"))
    hive.contact(net, second, boot)
    assert net.tables[second].known_peers() == [a("10000000")]
    assert net.tables[first].is_known(a("01000000"))  # named peers learn the joiner
    assert net.tables[boot].connected_count() == 0


# -- scenarios ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["first", "gap", "temperature", "hottest"])
def test_a_gossip_network_settles_two_way_and_nobody_is_left_alone(strategy: str) -> None:
    net, settled_after = run_scenario(GridKey(strategy, 64, 0), PARAMS, lambda *_: None)
    assert net.size == 64 and settled_after == net.rounds > 0
    edges = set()
    for i, table in enumerate(net.tables):
        assert is_settled(table)
        assert table.connected_count() > 0
        assert table.max_known_per_bin == (None if i < PARAMS.bootnodes else PARAMS.known_per_bin)
        for peer in table.connected_peers():
            j = net.index[peer]
            assert net.tables[j].is_connected(net.overlays[i])
            edges.add(frozenset((i, j)))
    assert len(edges) == sum(net.outbound)  # each connection was made once, by one side


def test_the_old_set_up_learns_the_known_sets_only() -> None:
    net, _ = run_scenario(GridKey("first", 48, 0), KNOWN, lambda *_: None)
    for i, known in enumerate(known_sets(KNOWN, 48, 0)):
        assert all(net.tables[i].is_known(net.overlays[j]) for j in known)
        # beyond its known set a node knows only those that connected to it
        extra = set(net.tables[i].known_peers()) - {net.overlays[j] for j in known}
        assert all(net.tables[i].is_connected(p) for p in extra)


def test_churn_replaces_the_same_nodes_whatever_the_strategy() -> None:
    seen = {}
    for strategy in ("first", "hottest"):
        rounds: list[list[int]] = []

        def observe(net: SimNetwork, _s: object, _l: object, rounds: list[list[int]] = rounds) -> None:
            rounds.append(net.online_nodes())

        net, _ = run_scenario(GridKey(strategy, 40, 0), CHURN, observe)
        assert len(rounds) == CHURN.churn_rounds
        assert all(len(online) == 40 for online in rounds)  # as many join as leave
        assert all(online[:2] == [0, 1] for online in rounds)  # bootnodes stay
        left = [i for i, r in enumerate(net.left) if r >= 0]
        assert len(left) == len(net.overlays) - 40 == 3 * round(0.1 * 40)
        seen[strategy] = (rounds, left)
    assert seen["first"] == seen["hottest"]


# -- one key end to end -------------------------------------------------------------------------------


def rows_of(params: SimParams, key: GridKey) -> tuple[dict[str, object], list[dict[str, object]]]:
    result = simulate(key, params)
    run = dict(zip([c for c, _ in RUN_COLUMNS], result.run, strict=True))
    nodes = [dict(zip([c for c, _ in NODE_COLUMNS], row, strict=True)) for row in result.nodes]
    return run, nodes


def test_simulate_rows_match_the_columns_and_each_other() -> None:
    run, nodes = rows_of(PARAMS, GridKey("gap", 48, 1))
    assert (run["strategy"], run["nodes"], run["run"], run["lookups"]) == ("gap", 48, 1, 300)
    assert [n["node"] for n in nodes] == list(range(48))
    assert run["gini"] == gini([n["relayed"] for n in nodes])  # type: ignore[misc]
    assert run["retrieval_gini"] == gini([n["retrieval_load"] for n in nodes])  # type: ignore[misc]
    assert run["storage_gini"] == gini([n["storage"] for n in nodes])  # type: ignore[misc]
    assert sum(n["served"] for n in nodes) == 300  # type: ignore[misc]
    assert run["connections_mean"] == sum(n["connections"] for n in nodes) / 48  # type: ignore[misc]
    assert run["gap_po_worst"] == min(n["gap_po"] for n in nodes)  # type: ignore[type-var]
    assert sum(n["outbound"] for n in nodes) * 2 == sum(n["connections"] for n in nodes)  # type: ignore[misc]
    assert all(n["storage"] == 2.0 ** -n["depth"] for n in nodes)  # type: ignore[operator]
    assert all(n["lookup_rounds"] == 1 and n["left"] == -1 for n in nodes)
    assert run["churned"] == 0 and run["dial_failures"] == 0
    assert 0 <= run["failed"] <= 1 and run["hops_p95"] <= run["hops_max"]  # type: ignore[operator]
    assert run["replication_min"] >= 1  # type: ignore[operator]  # the closest node stores every chunk


def test_simulate_under_churn_counts_the_newcomers_and_the_leavers() -> None:
    run, nodes = rows_of(CHURN, GridKey("temperature", 40, 0))
    assert run["churned"] == 12 and len(nodes) == 52
    assert sum(1 for n in nodes if n["left"] == -1) == 40
    assert sum(n["lookup_rounds"] for n in nodes) == 40 * CHURN.churn_rounds  # type: ignore[misc]
    assert sum(n["served"] for n in nodes) == 300  # type: ignore[misc]


def test_simulate_is_a_pure_function_of_key_and_params() -> None:
    for params in (PARAMS, CHURN, KNOWN):
        key = GridKey("hottest", 40, 0)
        assert simulate(key, params) == simulate(key, params)
        assert simulate(key, params) != simulate(key, dataclasses.replace(params, seed=6))


def test_strategies_share_overlays_and_lookups() -> None:
    rows = {s: simulate(GridKey(s, 40, 0), PARAMS).nodes for s in ("first", "gap", "temperature", "hottest")}
    overlay = [c for c, _ in NODE_COLUMNS].index("overlay")
    for s in rows:
        assert [r[overlay] for r in rows[s]] == [r[overlay] for r in rows["first"]]
