"""`--capacity` on the command line: `swarm up` passes it to every node it starts (a size of disk
becomes chunks), and a value that is neither chunks nor a size is refused before anything starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from localstore.chunkfile import SLOT_SIZE
from swarm.cli.localswarm import read_node_info
from swarm.testing import poll

pytestmark = pytest.mark.process

NODES = 2


def capacity_of(data_dir: Path, index: int) -> int | None:
    info = read_node_info(data_dir / f"node-{index}")
    if info is None:
        return None
    try:
        doc = httpx.get(f"http://127.0.0.1:{info['api_port']}/sync", timeout=5).json()
    except httpx.HTTPError:
        return None
    capacity: int = doc["reserve"]["capacity"]
    return capacity


def test_swarm_up_gives_every_node_its_capacity(tmp_path: Path) -> None:
    data_dir = tmp_path / "swarm"
    env = {k: v for k, v in os.environ.items() if k != "SWARM_DATA_DIR"}
    (tmp_path / "run").mkdir()
    env.update(HOME=str(tmp_path / "home"), XDG_RUNTIME_DIR=str(tmp_path / "run"))
    command = ["up", "--nodes", str(NODES), "--data-dir", str(data_dir), "--base-port", "0"]
    up = subprocess.Popen(
        [sys.executable, "-m", "swarm", *command, "--capacity", "1MiB"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=env,
    )
    try:
        wanted = (1 << 20) // SLOT_SIZE
        poll(lambda: all(capacity_of(data_dir, i) == wanted for i in range(NODES)), timeout=60)
    finally:
        up.send_signal(signal.SIGINT)
        try:
            output, _ = up.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(up.pid, signal.SIGKILL)
            output, _ = up.communicate()
    assert up.returncode == 0, output.decode()[-2000:]


@pytest.mark.parametrize("command", ["node", "up"])
def test_a_bad_capacity_is_refused_saying_what_is_accepted(tmp_path: Path, command: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "swarm", command, "--data-dir", str(tmp_path), "--capacity", "lots"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "capacity 'lots' is neither a number of chunks nor a size like 4GiB" in last
    assert not (tmp_path / "localstore").exists() and not (tmp_path / "node-0").exists()
