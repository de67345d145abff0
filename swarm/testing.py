"""Test tools that ship with the package: chunk factories, in-process nodes, polling waits."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from pathlib import Path

import trio

from localstore import CHUNK_SIZE, Chunk
from swarm.node import Node, NodeConfig
from syncer.downstream import PullerConfig


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


async def wait_for(condition: Callable[[], bool], *, timeout: float = 20.0, interval: float = 0.05) -> None:
    """Poll `condition` until it holds; trio.TooSlowError after `timeout` seconds."""
    with trio.fail_after(timeout):
        while not condition():
            await trio.sleep(interval)
