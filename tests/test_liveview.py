"""The live terminal view: per-bin progress and rates from `/sync` documents (pure), and
`swarm sync-status --watch` redrawing in a real pseudo-terminal until Ctrl-C."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from swarm.cli.liveview import BinProgress, SyncRates, View, bin_progress, render
from swarm.testing import NodeProcess, preload, random_chunks


def peer(*bins: tuple[int, int, int]) -> dict[str, Any]:
    return {"bins": [{"bin": b, "cursor": cursor, "lag": lag, "synced": []} for b, cursor, lag in bins]}


def doc(chunks: int, *peers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    base = {"overlay": "ab" * 32, "depth": 1, "chunks": chunks, "fully_synced": False, "totals": {}}
    return {**base, "peers": list(peers), **extra}


def test_bin_progress_sums_over_peers() -> None:
    sync = doc(0, peer((0, 100, 40), (1, 10, 0)), peer((1, 30, 30)))
    assert bin_progress(sync) == {0: BinProgress(60, 100, 1), 1: BinProgress(10, 40, 2)}
    assert BinProgress(0, 0, 1).fraction == 1.0  # nothing to sync is fully synced


def test_rates_come_from_successive_samples() -> None:
    rates = SyncRates()
    assert rates.update(doc(10, peer((3, 100, 100))), now=5.0) == (None, {3: None})
    chunk_rate, bins = rates.update(doc(30, peer((3, 100, 60)), peer((4, 8, 0))), now=7.0)
    assert chunk_rate == 10.0 and bins == {3: 20.0, 4: None}


def test_the_view_shows_every_node_its_bins_and_loss() -> None:
    console = Console(record=True, width=200, height=30, color_system=None)
    sync = doc(7, peer((2, 10, 5)), totals={"missing": 3})
    console.print(
        render([("node 0", sync), ("node 1", "not running")], View(), now=1.0, width=200, height=30)
    )
    text = console.export_text()
    assert "node 0" in text and "abababababababab" in text and "syncing" in text
    assert "not running" in text
    row = next(line for line in text.splitlines() if "node 0" in line and "5/10" in line)
    assert row.split()[:3] == ["node", "0", "2"] and "5/10" in row.split()  # bin 2, 5 of 10 synced
    console.print(render([("node 0", doc(0, peer((0, 0, 0))))], View(), now=1.0, width=200, height=30))
    assert "nothing to sync yet: the peers offer no chunks" in console.export_text()


def swarm_of_four(chunks: int, behind: float = 0.0) -> list[tuple[str, dict[str, Any] | str]]:
    """Four nodes, each syncing 8 bins from 3 peers, one of them down."""
    samples: list[tuple[str, dict[str, Any] | str]] = []
    for i in range(3):
        bins = [(b, chunks, 50 * b) for b in range(8)]
        peers = [peer(*bins) for _ in range(3)]
        for p in peers:
            for b in p["bins"]:
                b["behind_seconds"] = behind * b["bin"]
        samples.append((f"node {i}", doc(chunks * 24 - i, *peers, totals={"missing": 3, "repeat": 71360})))
    samples.append(("node 3", "http://127.0.0.1:1641: ConnectError: [Errno 111] Connection refused"))
    return samples


def screen(samples: list[tuple[str, dict[str, Any] | str]], view: View, width: int, height: int) -> list[str]:
    console = Console(record=True, width=width, height=height, color_system=None)
    console.print(render(samples, view, now=1.0, width=width, height=height))
    return console.export_text().splitlines()


@pytest.mark.parametrize(("width", "height"), [(80, 24), (200, 60)])
def test_the_view_fits_the_terminal_and_never_cuts_a_number(width: int, height: int) -> None:
    view = View()
    lines = screen(swarm_of_four(7136, behind=12.5), view, width, height)
    assert len(lines) == height and max(len(line) for line in lines) <= width
    assert lines[-1].startswith("updated ") and "Ctrl-C to stop" in lines[-1]  # the footer shows
    assert any("node 3: http://127.0.0.1:1641" in line for line in lines)  # why it is down
    nodes = lines[: lines.index(next(line for line in lines if line.startswith("bins:")))]
    for i in range(3):
        row = next(line for line in nodes if line.startswith(f"node {i}"))
        assert str(7136 * 24 - i) in row.split() and "1 m 27 s" in row  # whole numbers; 7 x 12.5 s
    assert ("71360" if width >= 120 else "71363") in nodes[2].split()  # wide: repeat; narrow: the loss sum
    if height >= 40:  # every bin of every node
        assert sum(1 for line in lines if line.startswith("node 0 ") and "21408" in line) == 8
    else:  # one summary row per node
        assert sum("8 bins" in line and "167064/171264" in line for line in lines) == 3


@pytest.mark.parametrize(("width", "height"), [(80, 24), (200, 60)])
def test_columns_keep_their_place_between_frames_and_when_a_node_is_down(width: int, height: int) -> None:
    view = View()
    first = screen(swarm_of_four(7136), view, width, height)
    small = swarm_of_four(5)  # smaller numbers next frame: the columns do not narrow
    second = screen(small, view, width, height)
    header = next(line for line in first if line.startswith("node ") and "depth" in line)
    assert header in second
    state_at = header.index("state")
    down = next(line for line in second if line.startswith("node 3"))
    assert down.index("not answering") == state_at  # aligned with the other rows' state
    for line in (x for x in second if x.startswith("node ") and "syncing" in x):
        assert line.index("syncing") == state_at


def run_in_terminal(
    args: list[str], until: Callable[[str], bool], timeout: float = 60.0, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run `swarm ARGS` on a pseudo-terminal until `until(its output)` holds, then Ctrl-C it."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    cmd = [sys.executable, "-m", "swarm", *args]
    env = {**os.environ, **(env or {}), "COLUMNS": "200", "LINES": "50"}  # pytest exports its own COLUMNS
    proc = subprocess.Popen(
        cmd, stdin=follower, stdout=follower, stderr=follower, start_new_session=True, env=env
    )
    os.close(follower)
    out = bytearray()

    def read(seconds: float) -> bool:
        """Read what the program wrote within `seconds`; False once the terminal is closed."""
        if select.select([leader], [], [], seconds)[0]:
            try:
                piece = os.read(leader, 1 << 16)
            except OSError:  # the program is gone and the terminal closed
                return False
            out.extend(piece)
            return bool(piece)
        return True

    deadline = time.monotonic() + timeout
    try:
        while not until(out.decode(errors="replace")) and time.monotonic() < deadline:
            read(0.1)
        proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 10
        while proc.poll() is None and time.monotonic() < deadline:
            read(0.1)  # keep reading: a program blocked writing to a full terminal never exits
        while read(0.2) and select.select([leader], [], [], 0)[0]:
            pass
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(leader)
    return proc.returncode, out.decode(errors="replace")


@pytest.mark.process
def test_sync_status_watch_redraws_as_a_node_syncs(tmp_path: Path) -> None:
    preload(tmp_path / "a", random_chunks(3000, seed=4))

    def synced_and_redrawn(screen: str) -> bool:
        frames = screen.split("chunks/s")
        return len(frames) > 3 and "fully synced" in frames[-1] and "3000" in frames[-1]

    with NodeProcess(tmp_path / "a") as a, NodeProcess(tmp_path / "b", peers=[a.p2p]) as b:
        status, screen = run_in_terminal(
            ["sync-status", "--watch", "--interval", "0.2", "--api", b.api], until=synced_and_redrawn
        )
    assert status == 0 and "Traceback" not in screen, screen[-3000:]
    assert synced_and_redrawn(screen), screen[-3000:]
    last = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", " ", screen.split("chunks/s")[-1])  # without the escapes
    assert re.search(r"\s1\s+3000\s", last), last  # one peer, 3000 chunks
    assert "bins: sync progress" in last and re.search(r"\d+/\d+", last.split("bins: sync progress")[1])


@pytest.mark.process
def test_swarm_up_watch_shows_the_swarm_and_stops_cleanly(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "XDG_RUNTIME_DIR": str(tmp_path)}

    def both_nodes_synced(screen: str) -> bool:
        last = screen.split("chunks/s")[-1]
        return screen.count("chunks/s") > 2 and "node 1" in last and last.count("fully synced") == 2

    status, screen = run_in_terminal(
        ["up", "--nodes", "2", "--base-port", "0", "--data-dir", str(tmp_path / "s"), "--watch"],
        until=both_nodes_synced,
        env=env,
    )
    assert status == 0 and "Traceback" not in screen, screen[-3000:]
    assert both_nodes_synced(screen.rsplit("stopping the swarm", 1)[0]), screen[-3000:]
    assert "dashboard: http://127.0.0.1:" in screen and "stopped: 2 nodes closed cleanly" in screen
    assert not list((tmp_path / "swarm").glob("up-*.json"))
