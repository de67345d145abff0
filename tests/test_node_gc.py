"""`swarm node` starts with the cyclic garbage collector off and freezes what start-up made once
the node is up (docs/performance.md, "Start-up and polling")."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
import trio

import swarm.cli.node as cli_node
from swarm.cli.common import CliError
from swarm.cli.main import build_parser
from swarm.config import NodeConfig
from swarm.testing import wait_for


def node_args(data_dir: Path) -> Any:
    argv = ["node", "--data-dir", str(data_dir), "--port", "0", "--api-port", "0"]
    return build_parser("node").parse_args(argv)


def test_the_collector_is_off_while_a_node_starts_and_on_again_when_the_start_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []

    async def failing_start(config: NodeConfig) -> None:
        seen.append(gc.isenabled())
        raise OSError("no such disk")

    monkeypatch.setattr(cli_node, "_run_node", failing_start)
    assert gc.isenabled()
    with pytest.raises(CliError):
        cli_node.cmd_node(node_args(tmp_path / "n"))
    assert seen == [False]
    assert gc.isenabled()


async def test_a_node_that_is_up_collects_again_and_has_frozen_its_start_up(tmp_path: Path) -> None:
    gc.disable()  # as cmd_node does before it imports and builds the node
    gc.unfreeze()
    config = NodeConfig(data_dir=tmp_path / "n", port=0, api_port=0)
    try:
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(cli_node._run_node, config)
                await wait_for(lambda: gc.isenabled())
                assert gc.get_freeze_count() > 10_000  # the modules, classes and services made so far
                nursery.cancel_scope.cancel()
    finally:
        gc.unfreeze()
        gc.enable()
