"""A node's `node.json`: what a running `swarm node` says about itself (ports, overlay, pid).

The node writes it (`swarm.node`) once it listens; `swarm up`, the client commands and the
start-up failure messages read it. Kept apart from both so that neither imports the other.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["pid_alive", "read_node_info", "write_node_info"]


def read_node_info(directory: Path) -> dict[str, Any] | None:
    try:
        info: dict[str, Any] = json.loads((Path(directory) / "node.json").read_text())
    except (OSError, ValueError):
        return None
    return info


def write_node_info(directory: Path, info: dict[str, Any]) -> None:
    """Replace ``directory/node.json`` at once (a reader never sees half of it)."""
    tmp = Path(directory) / "node.json.tmp"
    tmp.write_text(json.dumps(info) + "\n")
    tmp.replace(Path(directory) / "node.json")


def pid_alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
