"""`swarm node`'s default number of verifier workers: one per core it may run on, at most 4,
and none on a single core; the nodes of `swarm up` share the cores (docs/performance.md,
"Verifier workers on every core")."""

from __future__ import annotations

import os

import pytest

import swarm.cli.node as cli_node
from swarm.cli.main import build_parser
from swarm.cli.up import node_arguments


@pytest.mark.parametrize(("cores", "workers"), [(1, 0), (2, 2), (3, 3), (4, 4), (8, 4), (64, 4)])
def test_one_worker_per_core_at_most_four_and_none_on_one_core(
    cores: int, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    assert cli_node.default_workers() == workers


SHARES = [(2, 1, 2), (2, 2, 0), (2, 5, 0), (8, 2, 4), (8, 3, 2), (8, 5, 0)]


@pytest.mark.parametrize(("cores", "nodes", "workers"), SHARES)
def test_nodes_sharing_the_machine_share_its_cores(
    cores: int, nodes: int, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    assert cli_node.default_workers(nodes) == workers


def test_without_affinity_the_cores_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    assert cli_node.default_workers() == 3


def test_the_command_line_takes_the_default_and_says_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    args = build_parser("node").parse_args(["node", "--data-dir", "d"])
    assert args.verify_workers == 2
    with pytest.raises(SystemExit):
        build_parser("node").parse_args(["node", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "one per core, at most 4, none on one core: 2 here" in help_text


@pytest.mark.parametrize(("nodes", "workers"), [(1, "2"), (4, "0")])
def test_swarm_up_gives_each_node_its_share(
    nodes: int, workers: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    args = build_parser("up").parse_args(["up", "--nodes", str(nodes)])
    node_args = node_arguments(args)
    assert node_args[node_args.index("--verify-workers") + 1] == workers
