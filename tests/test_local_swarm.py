"""`swarm up --nodes 6` as a real process tree: upload, download, placement, SIGKILL and recovery."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from pot import proximity
from swarm.cli.localswarm import Member, read_node_info
from swarm.files.chunker import split_bytes
from swarm.testing import poll

pytestmark = pytest.mark.process

NODES = 6


def api(data_dir: Path, index: int) -> str:
    info = read_node_info(data_dir / f"node-{index}")
    assert info is not None
    return f"http://127.0.0.1:{info['api_port']}"


def sync_doc(data_dir: Path, index: int) -> dict:
    return httpx.get(api(data_dir, index) + "/sync", timeout=10).json()


def all_up(data_dir: Path, pids: dict[int, int] | None = None) -> bool:
    """Every node answers /health (and, if given, runs under a pid other than the old one)."""
    for i in range(NODES):
        info = read_node_info(data_dir / f"node-{i}")
        if info is None or (pids and info.get("pid") == pids[i]):
            return False
        try:
            if httpx.get(f"http://127.0.0.1:{info['api_port']}/health", timeout=2).status_code != 200:
                return False
        except httpx.HTTPError:
            return False
    return True


def placed(data_dir: Path, addresses: list[bytes]) -> bool:
    """Every chunk is on every node whose proximity to it is at least that node's depth."""
    for i in range(NODES):
        doc = sync_doc(data_dir, i)
        overlay, depth = bytes.fromhex(doc["overlay"]), doc["depth"]
        url = api(data_dir, i)
        with httpx.Client(timeout=10) as client:
            for address in addresses:
                responsible = proximity(overlay, address) >= depth
                if responsible and client.head(f"{url}/chunks/{address.hex()}").status_code != 200:
                    return False
    return True


def quiet(data_dir: Path) -> bool:
    return all(sync_doc(data_dir, i)["fully_synced"] for i in range(NODES))


def unsettled(data_dir: Path, addresses: list[bytes]) -> str:
    """What keeps the swarm from being quiet and placed: for a failed wait's message."""
    lines = []
    for i in range(NODES):
        doc = sync_doc(data_dir, i)
        overlay, depth = bytes.fromhex(doc["overlay"]), doc["depth"]
        lines.append(f"node {i} depth {depth} fully_synced {doc['fully_synced']} chunks {doc['chunks']}")
        for peer in doc["peers"]:
            behind = [
                (b["bin"], b["cursor"], b["synced"])
                for b in peer["bins"]
                if b["cursor"] and b["synced"] != [[1, b["cursor"]]]
            ]
            if behind or not peer.get("fully_synced", True):
                lines.append(f"  peer {peer['overlay'][:8]}: {peer.get('fully_synced')} behind {behind[:4]}")
        url = api(data_dir, i)
        with httpx.Client(timeout=10) as client:
            mine = [a for a in addresses if proximity(overlay, a) >= depth]
            missing = [a.hex()[:8] for a in mine if client.head(f"{url}/chunks/{a.hex()}").status_code != 200]
        if missing:
            lines.append(f"  missing {len(missing)}: {missing[:6]}")
    return "\n".join(lines)


def swarm_cli(
    *args: str, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "swarm", *args], capture_output=True, timeout=timeout, env=env
    )


def test_local_swarm_upload_download_placement_and_recovery(tmp_path: Path) -> None:
    data_dir = tmp_path / "swarm"
    data = random.Random(11).randbytes(600_000)
    source = tmp_path / "in.bin"
    source.write_bytes(data)
    reference, chunks = split_bytes(data)
    addresses = [c.address for c in chunks]
    # `swarm up` records where it runs; the client commands below find it without --data-dir
    env = {k: v for k, v in os.environ.items() if k != "SWARM_DATA_DIR"}
    (tmp_path / "run").mkdir()
    env.update(HOME=str(tmp_path / "home"), XDG_RUNTIME_DIR=str(tmp_path / "run"))
    up = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "swarm",
            "up",
            "--nodes",
            str(NODES),
            "--data-dir",
            str(data_dir),
            "--base-port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=env,
    )
    try:
        poll(lambda: all_up(data_dir), timeout=60)
        # everyone learns everyone through the bootnode
        poll(lambda: all(len(sync_doc(data_dir, i)["peers"]) == NODES - 1 for i in range(NODES)), timeout=60)

        records = list((tmp_path / "run" / "swarm").glob("up-*.json"))
        assert len(records) == 1 and str(data_dir) in records[0].read_text()
        uploaded = swarm_cli("upload", str(source), "--node", "0", "-q", env=env)
        assert uploaded.returncode == 0, uploaded.stderr
        assert uploaded.stdout.decode().strip() == reference.hex()

        poll(lambda: quiet(data_dir) and placed(data_dir, addresses), timeout=90)
        out = tmp_path / "out.bin"
        got = swarm_cli("download", reference.hex(), "-o", str(out), "--node", "5", env=env)
        assert got.returncode == 0, got.stderr
        assert out.read_bytes() == data

        # SIGKILL two nodes; the supervisor starts them again on the same ports and data
        victims = [2, 4]
        pids = {i: read_node_info(data_dir / f"node-{i}")["pid"] for i in range(NODES)}  # type: ignore[index]
        for i in victims:
            os.kill(pids[i], signal.SIGKILL)
        restarted = {i: pids[i] for i in victims}
        poll(
            lambda: all(read_node_info(data_dir / f"node-{i}")["pid"] != restarted[i] for i in victims),  # type: ignore[index]
            timeout=60,
        )
        poll(lambda: all_up(data_dir), timeout=60)
        poll(lambda: all(len(sync_doc(data_dir, i)["peers"]) == NODES - 1 for i in range(NODES)), timeout=60)
        try:
            poll(lambda: quiet(data_dir) and placed(data_dir, addresses), timeout=90)
        except TimeoutError:
            raise AssertionError(unsettled(data_dir, addresses)) from None
        for i in range(NODES):
            response = httpx.get(f"{api(data_dir, i)}/bytes/{reference.hex()}", timeout=60)
            assert response.status_code == 200 and response.content == data, i
        # the command-line views work against the live swarm
        status = swarm_cli("sync-status", "--all", env=env)
        assert status.returncode == 0 and status.stdout.decode().count("yes") == NODES
        topo = swarm_cli("topology", "--node", "3", "--json", env=env)
        assert topo.returncode == 0 and b'"connected": 5' in topo.stdout
        ports = ",".join(api(data_dir, i).rsplit(":", 1)[1] for i in range(NODES))
        dashboard = swarm_cli("dashboard", env=env)
        assert dashboard.stdout.decode().strip() == f"{api(data_dir, 0)}/dashboard?nodes={ports}"
    finally:
        up.send_signal(signal.SIGINT)
        try:
            output, _ = up.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(up.pid, signal.SIGKILL)
            output, _ = up.communicate()
    assert up.returncode == 0, output.decode()[-2000:]
    assert f"stopped: {NODES} nodes closed cleanly" in output.decode()
    assert "node 2 was killed by SIGKILL; restarting in 1s" in output.decode()
    assert f"dashboard: {dashboard.stdout.decode().strip()}" in output.decode()
    assert not list((tmp_path / "run" / "swarm").glob("up-*.json"))  # the record goes with the swarm
    # every node process is gone after Ctrl-C
    for i in range(NODES):
        info = read_node_info(data_dir / f"node-{i}")
        assert info is not None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(info["pid"], 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"node {i} (pid {info['pid']}) still running after the swarm stopped")


def test_commands_fail_with_one_clear_line(tmp_path: Path) -> None:
    empty = tmp_path / "nothing"
    for args, words in [
        (["sync-status", "--all", "--data-dir", str(empty)], "no local swarm"),
        (["download", "xyz", "--data-dir", str(empty)], "64 hex characters"),
        (["upload", str(tmp_path / "missing.bin"), "--data-dir", str(empty)], "cannot read"),
        (["sync-status", "--api", "http://127.0.0.1:9"], "cannot reach the node API"),
        (["up", "--nodes", "0", "--data-dir", str(empty)], "at least 1"),
    ]:
        result = swarm_cli(*args)
        err = result.stderr.decode()
        assert result.returncode != 0, args
        assert words in err and "Traceback" not in err, (args, err)
        assert len(err.strip().splitlines()) == 1, err
    result = swarm_cli("node", "--data-dir", str(empty), "--peer", "nohostport")
    assert result.returncode == 2 and "HOST:PORT" in result.stderr.decode()
    result = swarm_cli("node", "--data-dir", str(empty), "--verify-workers", "9")
    assert result.returncode == 2 and "0..8, got '9'" in result.stderr.decode()


SCRIPTS = {
    # stops cleanly on SIGTERM, as a node does
    "clean": "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n",
    # exits with status 3 on SIGTERM
    "status 3": "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *a: sys.exit(3))\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n",
    # ignores SIGTERM
    "ignores": "import signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n",
}


@pytest.mark.parametrize(
    ("kind", "reported"),
    [
        ("status 3", "node 7 exited with status 3; see "),
        ("ignores", "node 7 did not stop within 0.5s and was killed"),
    ],
)
def test_a_node_that_does_not_stop_cleanly_is_reported(tmp_path: Path, kind: str, reported: str) -> None:
    member = Member(index=7, directory=tmp_path, api_port=0, p2p_port=0, args=[])
    member.proc = subprocess.Popen([sys.executable, "-c", SCRIPTS[kind]], stdout=subprocess.PIPE)
    try:
        assert member.proc.stdout is not None and member.proc.stdout.readline() == b"ready\n"
        problem = member.stop(timeout=0.5)
        assert problem is not None and problem.startswith(reported), problem
        assert member.proc.poll() is not None
    finally:
        if member.proc.poll() is None:
            member.proc.kill()
        member.proc.wait()
        member.proc.stdout.close()  # type: ignore[union-attr]
    # a node that stops when asked is no problem, and nor is one that is not running
    member.proc = subprocess.Popen([sys.executable, "-c", SCRIPTS["clean"]], stdout=subprocess.PIPE)
    assert member.proc.stdout is not None and member.proc.stdout.readline() == b"ready\n"
    assert member.stop(timeout=10) is None
    member.proc.stdout.close()
    assert member.stop(timeout=10) is None


def test_swarm_up_says_why_a_node_could_not_start(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_RUNTIME_DIR": str(tmp_path)}
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = swarm_cli(
            "up", "--nodes", "1", "--data-dir", str(tmp_path / "s"), "--base-port", str(port), env=env
        )
    err = result.stderr.decode()
    assert result.returncode != 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    log = tmp_path / "s" / "node-0" / "node.log"
    # the API port is the busy one; the peer port (base + 1) may be taken by another process now
    # and then, and it is bound first: either refusal names its port and the log
    api_busy = f"cannot listen for the HTTP API (--api-port) on 127.0.0.1:{port}"
    peer_busy = f"cannot listen for peers (--port) on 127.0.0.1:{port + 1}"
    assert "node 0 exited with status 2 while starting: " in err, err
    assert api_busy in err or peer_busy in err, err
    assert f": the port is already in use; see {log}" in err, err
    assert not list((tmp_path / "swarm").glob("up-*.json"))  # nothing recorded for a swarm that never ran
