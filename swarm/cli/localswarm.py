"""A local swarm: N `swarm node` processes on loopback, supervised from one foreground command.

Layout: DIR/node-0, DIR/node-1, ... each a node data directory with its `node.json`. Node 0 is
the bootnode of the others. Ports come from a base port (node i: API base + 2i, peer port
base + 2i + 1) or, with base 0, are picked by each node and then kept for its restarts. A node
that dies is restarted with backoff; Ctrl-C (or SIGTERM) stops them all cleanly. Data
directories persist, so running it again resumes the same swarm.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from swarm.node_info import pid_alive, read_node_info

DEFAULT_BASE_PORT = 1633
START_TIMEOUT = 30.0


class LocalSwarmError(Exception):
    """Something about the local swarm the user must fix (said in one line)."""


def default_data_dir() -> Path:
    """Where `swarm up` keeps its nodes unless told otherwise: $SWARM_DATA_DIR or ~/.swarm."""
    return Path(os.environ.get("SWARM_DATA_DIR") or Path.home() / ".swarm")


def node_dir(data_dir: Path, index: int) -> Path:
    return Path(data_dir) / f"node-{index}"


def exit_text(returncode: int) -> str:
    """How a process ended, for people: 'exited with status 3', 'was killed by SIGKILL'."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with status {returncode}"


def last_error_line(log_path: Path, limit: int = 8192) -> str:
    """The last `swarm: error:` line a node wrote to its log, or ''."""
    try:
        with open(log_path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - limit))
            tail = f.read().decode(errors="replace")
    except OSError:
        return ""
    lines = [line for line in tail.splitlines() if line.startswith("swarm: error: ")]
    return lines[-1].removeprefix("swarm: error: ") if lines else ""


def node_indices(data_dir: Path) -> list[int]:
    """The indices of the nodes found in a local swarm's data directory."""
    found = []
    for child in Path(data_dir).glob("node-*"):
        suffix = child.name.removeprefix("node-")
        if suffix.isdigit() and child.is_dir():
            found.append(int(suffix))
    return sorted(found)


def api_url_of(data_dir: Path, index: int) -> str:
    """The API URL of node `index` of a local swarm, from its node.json; LocalSwarmError if down."""
    directory = node_dir(data_dir, index)
    info = read_node_info(directory)
    if info is None:
        known = node_indices(data_dir)
        hint = f"nodes there: {', '.join(map(str, known))}" if known else "start one with `swarm up`"
        raise LocalSwarmError(f"no node {index} in {data_dir} ({hint})")
    if not pid_alive(info.get("pid")):
        raise LocalSwarmError(f"node {index} in {data_dir} is not running (start the swarm with `swarm up`)")
    if not info.get("api_port"):
        raise LocalSwarmError(f"node {index} in {data_dir} has no HTTP API")
    return f"http://127.0.0.1:{info['api_port']}"


@dataclass
class Member:
    """One supervised node process."""

    index: int
    directory: Path
    api_port: int
    p2p_port: int
    args: list[str]
    proc: subprocess.Popen[bytes] | None = None
    log: IO[bytes] | None = None
    restarts: int = 0
    retry_at: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    def start(self) -> None:
        cmd = [sys.executable, "-m", "swarm", "node", "--data-dir", str(self.directory)]
        cmd += ["--port", str(self.p2p_port), "--api-port", str(self.api_port), *self.args]
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.log is None:
            self.log = open(self.directory / "node.log", "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_ready(self, timeout: float = START_TIMEOUT) -> dict[str, Any]:
        """Wait until node.json names this process; returns it."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log = self.directory / "node.log"
                why = last_error_line(log)
                raise LocalSwarmError(
                    f"node {self.index} {exit_text(self.proc.returncode)} while starting"
                    + (f": {why}" if why else "")
                    + f"; see {log}"
                )
            info = read_node_info(self.directory)
            if info and info.get("pid") == self.proc.pid:
                self.info = info
                # keep the ports for restarts, so peers and scripts find the node where it was
                self.api_port = int(info["api_port"])
                self.p2p_port = int(info["p2p_port"])
                return info
            time.sleep(0.05)
        raise LocalSwarmError(
            f"node {self.index} did not start within {timeout:g}s; see {self.directory / 'node.log'}"
        )

    def stop(self, timeout: float = 15.0, *, signalled: bool = False) -> str | None:
        """SIGTERM the node (unless `signalled` already) and wait for it; None if it stopped
        cleanly (or was not running), else what went wrong, for the operator.

        One SIGTERM only: a second one, reaching a node after its graceful shutdown has begun,
        would count against it."""
        problem = None
        if self.proc is not None and self.proc.poll() is None:
            if not signalled:
                self.proc.send_signal(signal.SIGTERM)
            try:
                status = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                problem = f"node {self.index} did not stop within {timeout:g}s and was killed"
            else:
                if status != 0:
                    log = self.directory / "node.log"
                    problem = f"node {self.index} {exit_text(status)}; see {log}"
        if self.log is not None:
            self.log.close()
            self.log = None
        return problem


class LocalSwarm:
    """Starts, watches and stops the nodes of a local swarm."""

    def __init__(
        self,
        data_dir: Path,
        nodes: int,
        *,
        base_port: int = DEFAULT_BASE_PORT,
        node_args: list[str] | None = None,
        restart: bool = True,
        say: Callable[[str], None] = print,
    ) -> None:
        if nodes < 1:
            raise LocalSwarmError(f"--nodes must be at least 1, got {nodes}")
        if base_port and base_port + 2 * nodes > 65536:
            raise LocalSwarmError(f"base port {base_port} leaves no room for {nodes} nodes (2 ports each)")
        self.data_dir = Path(data_dir)
        self.restart = restart
        self.say = say
        self.members = []
        for i in range(nodes):
            api, p2p = (base_port + 2 * i, base_port + 2 * i + 1) if base_port else (0, 0)
            self.members.append(Member(i, node_dir(self.data_dir, i), api, p2p, list(node_args or [])))

    def _check_not_running(self) -> None:
        for member in self.members:
            info = read_node_info(member.directory)
            if info and pid_alive(info.get("pid")):
                raise LocalSwarmError(
                    f"node {member.index} in {self.data_dir} is already running (pid {info['pid']}); "
                    "stop that swarm first or choose another --data-dir"
                )

    def start(self) -> None:
        """Start node 0, then the others with node 0 as their bootnode."""
        self._check_not_running()
        boot = self.members[0]
        try:
            boot.start()
            boot.wait_ready()
            for member in self.members[1:]:
                member.args += ["--peer", f"127.0.0.1:{boot.p2p_port}"]
                member.start()
            for member in self.members[1:]:
                member.wait_ready()
        except BaseException:
            self.stop()
            raise

    def watch_once(self) -> None:
        """Restart nodes that died (with backoff: 1 s doubling to 30 s)."""
        now = time.monotonic()
        for member in self.members:
            proc = member.proc
            if proc is None or proc.poll() is None:
                continue
            if member.retry_at == 0.0:
                delay = min(30.0, 2.0 ** min(member.restarts, 5))
                member.retry_at = now + delay
                self.say(
                    f"node {member.index} {exit_text(proc.returncode)}"
                    + (f"; restarting in {delay:g}s" if self.restart else "")
                )
            if self.restart and now >= member.retry_at:
                member.restarts += 1
                member.retry_at = 0.0
                member.start()
                try:
                    member.wait_ready()
                except LocalSwarmError as exc:
                    self.say(str(exc))
                else:
                    self.say(f"node {member.index} restarted (pid {member.info['pid']})")

    def stop(self) -> list[str]:
        """Stop every node (all signalled at once); returns the problems, empty if all went well."""
        for member in self.members:
            if member.proc is not None and member.proc.poll() is None:
                member.proc.send_signal(signal.SIGTERM)
        stopped = [member.stop(signalled=True) for member in self.members]
        return [problem for problem in stopped if problem is not None]

    def rows(self) -> list[list[object]]:
        return [
            [
                m.index,
                str(m.info.get("overlay", ""))[:16],
                f"http://127.0.0.1:{m.api_port}",
                m.p2p_port,
                str(m.directory),
            ]
            for m in self.members
        ]
