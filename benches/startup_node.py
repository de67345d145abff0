"""`swarm node ...` with start-up milestones: what `benches.startup` runs as the downstream node.

Run as ``python benches/startup_node.py node ...`` with the node's source tree on ``$PYTHONPATH``.
Runs the real command (`swarm.cli.main.main` with this process's arguments) after wrapping a few
of the node's methods so that each milestone prints one line on stderr, the first time it is
reached: ``MARK <seconds since spawn> <CPU seconds of this process> <milestone>``. The spawn time
is the parent's ``time.time()`` just before it started this process, in ``$STARTUP_T0``; the
chunk count that ends the run ("all stored") is ``$STARTUP_CHUNKS``.

Milestones: ``imported`` (the command line and `swarm.node` imported, where `swarm node`
imports it: in `swarm.cli.node._serve_node`), ``dial`` (the first dial
begins), ``connected`` (its handshake is done), ``first chunks`` (the first batch of synced chunks
entered the store), ``api`` (node.json written: the API answers), ``all stored``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

# Run as a script (so that the tree on $PYTHONPATH provides the node, even one without this file):
# its own folder must not shadow the node's packages (benches/localstore.py and the like).
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

T0 = float(os.environ["STARTUP_T0"])
CHUNKS = int(os.environ["STARTUP_CHUNKS"])
_reached: set[str] = set()


def mark(milestone: str) -> None:
    if milestone not in _reached:
        _reached.add(milestone)
        print(
            f"MARK {time.time() - T0:.4f} {time.process_time():.4f} {milestone}", file=sys.stderr, flush=True
        )


def main() -> int:
    import swarm.cli.main as cli
    import swarm.cli.node as cli_node

    # `swarm node` imports the node's modules in `_serve_node` (after the command line set the
    # process up for it, e.g. the garbage collector off, and the verifier's workers started; in
    # `_run_node` in trees before that): so does the probe, then wraps them
    name = "_serve_node" if hasattr(cli_node, "_serve_node") else "_run_node"
    serve = getattr(cli_node, name)

    async def instrumented(*args: Any) -> None:
        wrap()
        await serve(*args)

    setattr(cli_node, name, instrumented)
    return cli.main(sys.argv[1:])


def wrap() -> None:
    import swarm.net.sessions as sessions
    import swarm.node as node
    import syncer.intake as intake

    mark("imported")
    stored = 0
    store_many = intake.ChunkIntake.store_many

    def counted(self: Any, chunks: Any, **kwargs: Any) -> int:
        nonlocal stored
        new: int = store_many(self, chunks, **kwargs)
        stored += new
        if new:
            mark("first chunks")
        if stored >= CHUNKS:
            mark("all stored")
        return new

    connect = sessions.Sessions.connect

    async def connecting(self: Any, host: str, port: int) -> Any:
        mark("dial")
        conn = await connect(self, host, port)
        mark("connected")
        return conn

    write_node_info = node.write_node_info

    def written(*args: Any, **kwargs: Any) -> None:
        mark("api")
        write_node_info(*args, **kwargs)

    intake.ChunkIntake.store_many = counted  # type: ignore[method-assign]
    sessions.Sessions.connect = connecting  # type: ignore[method-assign]
    node.write_node_info = written


if __name__ == "__main__":
    raise SystemExit(main())
