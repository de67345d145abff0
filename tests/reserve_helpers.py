"""Test tools for the reserve's tests: nodes whose overlays are spread over the address space.

With random overlays a small swarm's depths (and so who is responsible for what) vary from run to
run; these identities put one node under each ``bits``-bit prefix, so every run has the same shape.
"""

from __future__ import annotations

import os
from pathlib import Path

from streamer.identity import NodeIdentity


def spread_identities(bits: int, network_id: int = 1) -> list[NodeIdentity]:
    """``2**bits`` identities whose overlays start with each ``bits``-bit prefix, in prefix order."""
    found: dict[int, NodeIdentity] = {}
    while len(found) < 1 << bits:
        identity = NodeIdentity.generate()
        found.setdefault(identity.overlay(network_id)[0] >> (8 - bits), identity)
    return [found[prefix] for prefix in range(1 << bits)]


def write_identity(data_dir: Path, identity: NodeIdentity) -> None:
    """Give the node of ``data_dir`` this identity (its node.key, mode 0600)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "node.key"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, identity.private_bytes())
    finally:
        os.close(fd)
