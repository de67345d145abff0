"""A `swarm node` that cannot start says why in one line on stderr and exits non-zero.

Each case is a real `python -m swarm node` process meeting the failing condition on disk or on
the network: a store in use, a damaged marker, lost LevelDB tables or chunk file (what the store
cannot recover by itself), a bad key file, a port in use. Before, each printed a 30-60 line
ExceptionGroup traceback from trio's nursery.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from swarm.failures import PortUnavailable, describe_node_failure, leaf_exceptions
from swarm.testing import NodeProcess, preload, random_chunks

pytestmark = pytest.mark.process


def start_node(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `swarm node` (ephemeral ports unless `args` say otherwise); it must fail to start."""
    cmd = [
        sys.executable,
        "-m",
        "swarm",
        "node",
        "--data-dir",
        str(data_dir),
        "--port",
        "0",
        "--api-port",
        "0",
    ]
    result = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=30)
    assert result.returncode != 0, result.stdout
    return result


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    """A stopped node's data directory holding 40 chunks."""
    preload(tmp_path / "node", random_chunks(40))
    return tmp_path / "node"


def damage_marker(data_dir: Path) -> str:
    (data_dir / "localstore" / "LOCALSTORE").write_text("{not json")
    return "LOCALSTORE marker is unreadable"


def lose_leveldb_tables(data_dir: Path) -> str:
    for path in (data_dir / "localstore").iterdir():
        if path.suffix in (".ldb", ".log", ".sst"):
            path.unlink()
    return "the LevelDB lost the store's metadata and cursors"


def lose_chunk_file(data_dir: Path) -> str:
    (data_dir / "localstore" / "CHUNKS").unlink()
    return "the chunk data file CHUNKS is missing though the index names 40 chunks"


def short_key(data_dir: Path) -> str:
    (data_dir / "node.key").write_bytes(b"short")
    return "node.key is 5 bytes, expected exactly 32"


def open_key(data_dir: Path) -> str:
    (data_dir / "node.key").chmod(0o644)
    return "node.key is accessible by group/others"


@pytest.mark.parametrize(
    "damage",
    [damage_marker, lose_leveldb_tables, lose_chunk_file, short_key, open_key],
    ids=lambda f: f.__name__,
)
def test_a_damaged_data_directory_is_one_line_naming_the_file(
    stored: Path, damage: Callable[[Path], str]
) -> None:
    cause = damage(stored)
    line = one_line(start_node(stored))
    assert line.startswith("swarm: error: ") and cause in line, line
    where = "node.key" if "key" in cause else str(stored / "localstore")
    assert where in line, line


def test_a_store_in_use_names_the_running_node(tmp_path: Path) -> None:
    with NodeProcess(tmp_path / "node") as running:
        line = one_line(start_node(tmp_path / "node"))
        assert f"store {tmp_path / 'node' / 'localstore'} is already open" in line, line
        assert f"(pid {running.proc.pid})" in line, line  # type: ignore[union-attr]


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port with a listener on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_peer_port_in_use_is_named(tmp_path: Path, busy_port: int) -> None:
    line = one_line(start_node(tmp_path / "node", "--port", str(busy_port)))
    assert f"cannot listen for peers (--port) on 127.0.0.1:{busy_port}: the port is already in use" in line


def test_an_api_port_in_use_is_named(tmp_path: Path, busy_port: int) -> None:
    line = one_line(start_node(tmp_path / "node", "--api-port", str(busy_port)))
    assert f"cannot listen for the HTTP API (--api-port) on 127.0.0.1:{busy_port}" in line, line


def test_the_index_rebuild_after_a_crash_is_logged_at_the_default_level(tmp_path: Path) -> None:
    preload(tmp_path / "node", random_chunks(30))
    node = NodeProcess(tmp_path / "node").start()
    assert node.proc is not None
    node.proc.send_signal(signal.SIGKILL)  # the address index is not closed cleanly
    node.kill()
    with NodeProcess(tmp_path / "node"):
        log = (tmp_path / "node" / "node.log").read_text()
    assert "rebuilt the address index of 30 chunks" in log, log
    # a brand-new store has nothing to rebuild and says nothing about it
    with NodeProcess(tmp_path / "fresh"):
        assert "rebuilt" not in (tmp_path / "fresh" / "node.log").read_text()


# -- the unwrapping itself ------------------------------------------------------------------------


def test_the_cause_is_found_inside_nested_exception_groups(tmp_path: Path) -> None:
    inner = OSError(98, "Address already in use")
    group = ExceptionGroup("outer", [ExceptionGroup("inner", [inner])])
    assert leaf_exceptions(group) == [inner]
    line = describe_node_failure(group, data_dir=tmp_path, host="127.0.0.1", port=1634)
    assert line == "cannot listen for peers (--port) on 127.0.0.1:1634: the port is already in use"
    api = PortUnavailable("the HTTP API (--api-port)", "127.0.0.1", 1633, inner)
    assert describe_node_failure(ExceptionGroup("g", [api]), data_dir=tmp_path, host="h", port=1) == str(api)


def test_an_unexpected_failure_is_one_line_that_says_it_is_a_bug(tmp_path: Path) -> None:
    line = describe_node_failure(
        ExceptionGroup("g", [RuntimeError("boom")]), data_dir=tmp_path, host="127.0.0.1", port=1
    )
    assert "\n" not in line and "RuntimeError: boom" in line and "--log-level DEBUG" in line
    # a file the node cannot write is named
    denied = PermissionError(13, "Permission denied", str(tmp_path / "node.key"))
    line = describe_node_failure(denied, data_dir=tmp_path, host="127.0.0.1", port=1)
    assert line == f"cannot start the node: Permission denied: {tmp_path / 'node.key'}"
