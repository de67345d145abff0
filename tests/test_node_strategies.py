"""Every suggestion strategy and forwarding rule is selectable on real nodes: `swarm up` passes
`--suggest` and `--forwarding` to its `swarm node` processes, and each node reports what it runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from kademlia import STRATEGIES
from swarm.cli.localswarm import read_node_info
from swarm.testing import poll

pytestmark = pytest.mark.process


def topology(data_dir: Path, index: int) -> dict | None:
    info = read_node_info(data_dir / f"node-{index}")
    if info is None:
        return None
    try:
        return httpx.get(f"http://127.0.0.1:{info['api_port']}/topology", timeout=2).json()
    except httpx.HTTPError:
        return None


def test_swarm_up_runs_its_nodes_with_hottest_and_a_spreading_rule(tmp_path: Path) -> None:
    data_dir = tmp_path / "swarm"
    env = dict(os.environ, HOME=str(tmp_path / "home"), XDG_RUNTIME_DIR=str(tmp_path / "run"))
    env.pop("SWARM_DATA_DIR", None)
    (tmp_path / "run").mkdir()
    command = [sys.executable, "-m", "swarm", "up", "--nodes", "2", "--data-dir", str(data_dir)]
    command += ["--base-port", "0", "--suggest", "hottest", "--forwarding", "spread1"]
    up = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, env=env
    )
    try:
        poll(lambda: all(topology(data_dir, i) is not None for i in range(2)), timeout=60)
        for i in range(2):
            doc = topology(data_dir, i)
            assert doc is not None
            assert (doc["strategy"], doc["forwarding"]) == ("hottest", "spread1")
        # and the node connects by it: the two find each other
        poll(lambda: all((topology(data_dir, i) or {}).get("connected") == 1 for i in range(2)), timeout=60)
    finally:
        os.killpg(up.pid, signal.SIGINT)
        try:
            up.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(up.pid, signal.SIGKILL)
            up.wait(timeout=10)


@pytest.mark.parametrize("option", ["--suggest", "--forwarding"])
def test_an_unknown_strategy_or_rule_is_one_line_naming_the_choices(option: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "swarm", "node", "--data-dir", str(tmp_path), option, "bogus"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert f"argument {option}: invalid choice: 'bogus'" in last
    assert "hottest" in last if option == "--suggest" else "spread" in last
    assert "Traceback" not in result.stderr
    assert set(STRATEGIES) == {"first", "gap", "temperature", "hottest", "loaded"}
