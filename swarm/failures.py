"""Why a node could not start (or stopped), said in one line for the command line.

A failure inside the node's trio nursery arrives wrapped in (nested) exception groups, so
`python -m swarm node` used to print a 30-60 line traceback with the real cause at the bottom.
The cause is a leaf of the group: known causes (a store in use or damaged, a bad key file, a
port in use) become a message naming the file or the port; anything else is a bug, said in one
line too, its traceback in the log at DEBUG level.
"""

from __future__ import annotations

import errno
import logging
from pathlib import Path

__all__ = ["PortUnavailable", "describe_node_failure", "leaf_exceptions"]

log = logging.getLogger(__name__)

# bind() errors that say the address itself cannot be had (not a file's error: those carry a name)
_BIND_ERRORS = {
    errno.EADDRINUSE: "the port is already in use",
    errno.EADDRNOTAVAIL: "the address is not one of this machine's",
    errno.EACCES: "permission denied (ports below 1024 need privileges)",
}


class PortUnavailable(Exception):
    """A listening socket could not be bound; names which one (`role`, with its option) and where."""

    def __init__(self, role: str, host: str, port: int, cause: OSError) -> None:
        reason = _BIND_ERRORS.get(cause.errno or 0, cause.strerror or str(cause))
        super().__init__(f"cannot listen for {role} on {host}:{port}: {reason}")
        self.role = role
        self.host = host
        self.port = port
        self.cause = cause


def leaf_exceptions(exc: BaseException) -> list[BaseException]:
    """The exceptions inside `exc`, depth first, with every (nested) exception group opened."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in leaf_exceptions(sub)]
    return [exc]


def bind_error(exc: BaseException) -> OSError | None:
    """The first leaf of `exc` that is a failed bind() (an OSError about no file)."""
    for leaf in leaf_exceptions(exc):
        if isinstance(leaf, OSError) and leaf.filename is None and leaf.errno in _BIND_ERRORS:
            return leaf
    return None


def describe_node_failure(exc: BaseException, *, data_dir: Path, host: str, port: int) -> str:
    """One line saying why the node with this data directory and peer address failed."""
    from localstore import StoreCorrupt, StoreError, StoreLocked
    from localstore.errors import MOVE_AWAY
    from streamer.identity import KeyFileError

    leaves = [leaf for leaf in leaf_exceptions(exc) if isinstance(leaf, Exception)]
    known = (StoreError, KeyFileError, PortUnavailable, OSError)
    cause = next((leaf for leaf in leaves if isinstance(leaf, known)), leaves[0] if leaves else exc)
    if isinstance(cause, StoreLocked):
        return f"{cause}: is another `swarm node --data-dir {data_dir}` running{_running_pid(data_dir)}?"
    if isinstance(cause, StoreCorrupt) and MOVE_AWAY not in str(cause):
        return f"{cause}; {MOVE_AWAY}"
    if isinstance(cause, StoreError | KeyFileError | PortUnavailable):
        return str(cause)
    if isinstance(cause, OSError):
        if cause is bind_error(cause):
            # the API's listener reports PortUnavailable itself, so a bare one is the peer port's
            return str(PortUnavailable("peers (--port)", host, port, cause))
        where = f": {cause.filename}" if cause.filename else ""
        return f"cannot start the node: {cause.strerror or cause}{where}"
    log.debug("the node failed", exc_info=exc)
    return (
        f"the node failed: {type(cause).__name__}: {cause} "
        "(a bug; run with --log-level DEBUG to see the traceback)"
    )


def _running_pid(data_dir: Path) -> str:
    """' (pid N)' when the data directory's node.json names a live process, else ''."""
    from swarm.node_info import pid_alive, read_node_info

    info = read_node_info(data_dir)
    pid = info.get("pid") if info else None
    return f" (pid {pid})" if pid_alive(pid) else ""
