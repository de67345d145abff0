"""The client commands as a user runs them: real `swarm` processes against a real node process.

Pipes, standard input and output, missing directories, readers that go away, swarms that are
down or elsewhere: each ends in the right bytes or one line on stderr, never a traceback.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from swarm.files.chunker import split_bytes
from swarm.testing import NodeProcess

pytestmark = pytest.mark.process

DATA = random.Random(3).randbytes(300_000)
REFERENCE, _ = split_bytes(DATA)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    with NodeProcess(tmp_path_factory.mktemp("node")) as running:
        yield running


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """An environment whose home, runtime directory and default data directory are empty."""
    env = {k: v for k, v in os.environ.items() if k != "SWARM_DATA_DIR"}
    (tmp_path / "run").mkdir()
    env.update(HOME=str(tmp_path / "home"), XDG_RUNTIME_DIR=str(tmp_path / "run"))
    return env


def swarm(
    *args: str, stdin: bytes = b"", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    cmd = [sys.executable, "-m", "swarm", *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, timeout=60, env=env)


def one_line(result: subprocess.CompletedProcess[bytes]) -> str:
    err = result.stderr.decode()
    assert result.returncode != 0 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    return err.strip()


def test_upload_from_stdin_and_download_to_stdout(node: NodeProcess) -> None:
    uploaded = swarm("upload", "-", "--api", node.api, stdin=DATA)
    assert uploaded.returncode == 0, uploaded.stderr
    assert uploaded.stdout.decode().strip() == REFERENCE.hex()
    for output in (["-o", "-"], []):
        got = swarm("download", REFERENCE.hex(), "--api", node.api, *output)
        assert got.returncode == 0 and got.stdout == DATA, got.stderr


def test_download_into_a_missing_directory(node: NodeProcess, tmp_path: Path) -> None:
    assert httpx.post(f"{node.api}/bytes", content=DATA, timeout=30).status_code == 201
    target = tmp_path / "no" / "such" / "dir" / "out.bin"
    line = one_line(swarm("download", REFERENCE.hex(), "--api", node.api, "-o", str(target)))
    assert f"cannot write {target}: the directory {target.parent} does not exist" in line


def closed_pipe_run(*args: str) -> subprocess.CompletedProcess[bytes]:
    """Run `swarm ARGS` writing into a pipe whose reader is already gone (as `| head` leaves it)."""
    read, write = os.pipe()
    os.close(read)
    try:
        cmd = [sys.executable, "-m", "swarm", *args]
        return subprocess.run(cmd, stdout=write, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write)


@pytest.mark.parametrize(
    "args",
    [["sync-status", "--json"], ["topology", "--json"], ["download", REFERENCE.hex()]],
    ids=lambda a: a[0],
)
def test_a_reader_that_goes_away_is_no_error(node: NodeProcess, args: list[str]) -> None:
    if args[0] == "download":
        assert httpx.post(f"{node.api}/bytes", content=DATA, timeout=30).status_code == 201
    result = closed_pipe_run(*args, "--api", node.api)
    assert result.stderr == b"", result.stderr.decode()
    assert result.returncode == 141  # as a tool killed by SIGPIPE


def write_node_json(directory: Path, **info: object) -> None:
    directory.mkdir(parents=True)
    (directory / "node.json").write_text(json.dumps(info))


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    return int(done.stdout)


def test_sync_status_all_fails_when_nodes_are_down(node: NodeProcess, tmp_path: Path) -> None:
    data_dir = tmp_path / "swarm"
    for i in range(3):
        write_node_json(data_dir / f"node-{i}", pid=dead_pid(), api_port=1, p2p_port=2, overlay="00" * 32)
    result = swarm("sync-status", "--all", "--data-dir", str(data_dir))
    assert result.returncode == 1, result.stderr
    assert result.stdout.decode().count("down") == 3
    assert result.stderr.decode().strip() == "swarm: every node is down: 0, 1, 2"
    # one node up, two down: still a failure, and the live one is shown
    (data_dir / "node-1" / "node.json").write_text(json.dumps(node.info))
    result = swarm("sync-status", "--all", "--data-dir", str(data_dir))
    assert result.returncode == 1 and result.stderr.decode().strip() == "swarm: 2 of 3 nodes are down: 0, 2"
    assert node.overlay[:16] in result.stdout.decode()


def test_a_running_swarm_is_found_without_data_dir(
    node: NodeProcess, tmp_path: Path, home: dict[str, str]
) -> None:
    # nothing running, nothing in the default directory: the message says where it looked
    line = one_line(swarm("sync-status", "--node", "0", env=home))
    assert f"no running `swarm up` is recorded in {tmp_path / 'run' / 'swarm'}" in line, line
    assert str(tmp_path / "home" / ".swarm") in line, line
    # a `swarm up` (this test's process stands in for it) records its data directory
    data_dir = tmp_path / "elsewhere"
    write_node_json(data_dir / "node-0", **node.info)
    record = tmp_path / "run" / "swarm" / f"up-{os.getpid()}.json"
    record.parent.mkdir()
    record.write_text(json.dumps({"pid": os.getpid(), "data_dir": str(data_dir), "nodes": 1}))
    found = swarm("sync-status", "--node", "0", "--json", env=home)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["overlay"] == node.overlay
    # a record left by a `swarm up` that was killed is ignored, and removed
    record.write_text(json.dumps({"pid": dead_pid(), "data_dir": str(data_dir), "nodes": 1}))
    assert swarm("sync-status", "--node", "0", env=home).returncode != 0
    assert not record.exists()
