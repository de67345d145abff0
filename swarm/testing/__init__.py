"""Test tools that ship with the package: chunk factories, in-process nodes, polling waits."""

from __future__ import annotations

import compileall
import functools
import importlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import trio

from chunks import CHUNK_SIZE, Chunk
from swarm.config import NodeConfig
from swarm.node import Node
from syncer.pull_config import PullerConfig

PROJECT_PACKAGES = ("pot", "chunks", "localstore", "syncer", "kademlia", "streamer", "swarm")


@functools.cache
def compile_project() -> None:
    """Compile the project's modules to bytecode (once per process; up-to-date files are skipped).

    A node installed from a wheel starts from compiled bytecode; an editable install compiles at
    the first import and caches the result, unless ``PYTHONDONTWRITEBYTECODE`` is set (as on the
    development VM), when every node process would compile its ~450 modules again at each start
    (0.16 s of CPU before its first dial: docs/performance.md, "Start-up"). Node processes
    started for tests and benches start as an installed node does."""
    for name in PROJECT_PACKAGES:
        package = importlib.import_module(name)
        for directory in package.__path__:
            compileall.compile_dir(directory, quiet=1)


def random_chunks(count: int, *, seed: int = 0, size: int = CHUNK_SIZE) -> list[Chunk]:
    """`count` distinct chunks of random payload bytes, reproducible from `seed`."""
    rng = random.Random(seed)
    return [Chunk.from_payload(rng.randbytes(size)) for _ in range(count)]


def node_config(data_dir: Path, *, peers: Iterable[tuple[str, int]] = (), **overrides: object) -> NodeConfig:
    """A node config for tests: loopback, ephemeral ports, quick re-dials and cursor refreshes."""
    settings: dict[str, object] = {
        "data_dir": data_dir,
        "peers": tuple(peers),
        "redial_min": 0.1,
        "redial_max": 1.0,
        "puller": PullerConfig(cursor_refresh=0.5, batch_timeout=20.0),
    }
    settings.update(overrides)
    return NodeConfig(**settings)  # type: ignore[arg-type]


async def start_node(nursery: trio.Nursery, config: NodeConfig, **kwargs: object) -> Node:
    """Start a node in `nursery`; returns once it listens."""
    node = Node(config, **kwargs)  # type: ignore[arg-type]
    await nursery.start(node.run)
    return node


async def start_synced_pair(
    nursery: trio.Nursery, directory: Path, chunks: Iterable[Chunk], **a_overrides: Any
) -> tuple[Node, Node]:
    """Node A (``directory / "a"``) holding ``chunks`` and node B pulling from it, once B holds
    them all: B's streams from A are open by then (a chunk A stores next comes live)."""
    chunks = list(chunks)
    a = await start_node(nursery, node_config(directory / "a", **a_overrides))
    for chunk in chunks:
        a.intake.store(chunk)
    b = await start_node(nursery, node_config(directory / "b", peers=[("127.0.0.1", a.p2p_port)]))
    await wait_for(lambda: all(b.store.has(chunk.address) for chunk in chunks))
    return a, b


@asynccontextmanager
async def node_with_client(data_dir: Path, **overrides: Any) -> AsyncIterator[tuple[Node, httpx.AsyncClient]]:
    """A node in this process (`node_config(data_dir, **overrides)`) and a client of its API;
    both stop when the block ends."""
    async with trio.open_nursery() as nursery:
        node = await start_node(nursery, node_config(data_dir, **overrides))
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{node.api_port}", timeout=30) as client:
            yield node, client
        nursery.cancel_scope.cancel()


async def wait_for(condition: Callable[[], bool], *, timeout: float = 20.0, interval: float = 0.05) -> None:
    """Poll `condition` until it holds; trio.TooSlowError after `timeout` seconds."""
    with trio.fail_after(timeout):
        while not condition():
            await trio.sleep(interval)


# -- real node processes ---------------------------------------------------------------------


def preload(data_dir: Path, chunks: Iterable[Chunk], *, network_id: int = 1, batch: int = 1024) -> bytes:
    """Store chunks straight into a (stopped) node's data directory; returns its overlay.

    Creates the identity and the store if they do not exist yet, exactly as `swarm node` would.
    """
    from localstore.store import LocalStore
    from streamer.identity import load_or_create_identity

    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    overlay = load_or_create_identity(data_dir / "node.key").overlay(network_id)
    with LocalStore(data_dir / "localstore", overlay) as store:
        pending: list[Chunk] = []
        for chunk in chunks:
            pending.append(chunk)
            if len(pending) >= batch:
                store.put_many(pending)
                pending.clear()
        store.put_many(pending)
    return overlay


class NodeProcess:
    """A `swarm node` OS process on loopback with ephemeral ports, found through its node.json."""

    def __init__(
        self,
        data_dir: Path,
        *,
        peers: Iterable[tuple[str, int]] = (),
        extra: Iterable[str] = (),
        own_group: bool = False,
    ) -> None:
        """``own_group``: the node leads a process group of its own (as under systemd), which
        `stop_group` signals as a whole."""
        self.data_dir = Path(data_dir)
        self.own_group = own_group
        self.peers = list(peers)
        self.extra = list(extra)
        self.proc: subprocess.Popen[bytes] | None = None
        self.info: dict[str, object] = {}

    def start(self, timeout: float = 30.0) -> NodeProcess:
        """Start the process and wait until its node.json names this process and the API answers."""
        compile_project()
        cmd = [
            sys.executable,
            "-m",
            "swarm",
            "node",
            "--data-dir",
            str(self.data_dir),
            "--port",
            "0",
            "--api-port",
            "0",
        ]
        for host, port in self.peers:
            cmd += ["--peer", f"{host}:{port}"]
        cmd += self.extra
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.data_dir / "node.log", "ab")  # noqa: SIM115 - closed in stop()/kill()
        self.proc = subprocess.Popen(
            cmd, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=self.own_group
        )
        deadline = time.monotonic() + timeout
        info_path = self.data_dir / "node.json"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"node exited with {self.proc.returncode}; see {self.data_dir / 'node.log'}"
                )
            try:
                info = json.loads(info_path.read_text())
            except (OSError, ValueError):
                info = {}
            if info.get("pid") == self.proc.pid:
                self.info = info
                try:
                    if httpx.get(self.api + "/health", timeout=2).status_code == 200:
                        return self
                except httpx.HTTPError:
                    pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"node did not come up within {timeout:g}s; see {self.data_dir / 'node.log'}")

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.info['api_port']}"

    @property
    def p2p(self) -> tuple[str, int]:
        return "127.0.0.1", int(self.info["p2p_port"])  # type: ignore[call-overload]

    @property
    def overlay(self) -> str:
        return str(self.info["overlay"])

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.api + path, timeout=10)

    def sync(self) -> dict[str, Any]:
        """The node's `GET /sync` document (JSON)."""
        doc: dict[str, Any] = self.get("/sync").json()
        return doc

    def verify_worker_pids(self) -> list[int]:
        """PIDs of the chunk-verifier worker processes this node started (Linux /proc)."""
        assert self.proc is not None
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                    cmdline = (entry / "cmdline").read_bytes()
                except (OSError, IndexError, ValueError):
                    continue
                if ppid == self.proc.pid and b"syncer.verify_worker" in cmdline:
                    found.append(int(entry.name))
        return found

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM and wait: a clean shutdown. Returns the exit status."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode

    def stop_group(self, timeout: float = 15.0) -> int:
        """SIGTERM the node's whole process group (what systemd sends), wait; the exit status."""
        assert self.proc is not None and self.own_group
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        return self.stop(timeout)

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to clean up."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if hasattr(self, "_log"):
            self._log.close()

    def __enter__(self) -> NodeProcess:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def poll(condition: Callable[[], bool], *, timeout: float = 60.0, interval: float = 0.2) -> None:
    """Blocking wait for `condition` (for process-level tests); TimeoutError naming the wait."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {timeout:g}s")
        time.sleep(interval)
