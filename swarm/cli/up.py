"""`swarm up`: run a local swarm in the foreground until Ctrl-C.

Starts the nodes (swarm.cli.localswarm), records where the swarm lives so that client commands find
it without `--data-dir` (swarm.cli.runfile), prints a table of the nodes and the dashboard's
address, then restarts nodes that die until Ctrl-C or SIGTERM, showing either one line per event
or, with `--watch`, the live view of every node (swarm.cli.liveview).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections import deque

from swarm.cli.common import CliError
from swarm.cli.localswarm import LocalSwarm, LocalSwarmError, api_url_of
from swarm.cli.node import default_workers
from swarm.cli.runfile import record_running
from swarm.render import table

__all__ = ["cmd_up", "dashboard_url", "node_arguments"]


def dashboard_url(api: str, ports: list[str]) -> str:
    """The dashboard page served by the node at `api`, showing the nodes on these API ports."""
    return f"{api}/dashboard?nodes={','.join(ports)}"


def node_arguments(args: argparse.Namespace) -> list[str]:
    """The options `swarm up` gives every node: its own choices, and a share of the cores for
    verifying chunks (`default_workers` over the nodes)."""
    node_args = ["--suggest", args.suggest, "--forwarding", args.forwarding]
    node_args += ["--network-id", str(args.network_id)]
    node_args += ["--verify-workers", str(default_workers(args.nodes))]
    if getattr(args, "capacity", None):
        node_args += ["--capacity", str(args.capacity)]
    return node_args


def cmd_up(args: argparse.Namespace) -> int:
    node_args = node_arguments(args)
    os.environ["SWARM_LOG_LEVEL"] = args.log_level  # the nodes inherit it
    notes: deque[str] = deque(maxlen=6)  # what --watch shows under its tables

    def say(line: str) -> None:
        if args.watch:
            notes.append(time.strftime("%H:%M:%S ") + line)
        else:
            print(line, flush=True)

    swarm = LocalSwarm(
        args.data_dir,
        args.nodes,
        base_port=args.base_port,
        node_args=node_args,
        restart=not args.no_restart,
        say=say,
    )
    stopping: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        stopping.append(signum)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            swarm.start()
        except LocalSwarmError as exc:
            raise CliError(str(exc)) from None
        with record_running(args.data_dir, args.nodes):
            print(table(["node", "overlay", "api", "p2p port", "data directory"], swarm.rows()), flush=True)
            ports = [str(member.api_port) for member in swarm.members]
            print(f"dashboard: {dashboard_url(str(swarm.rows()[0][2]), ports)}", flush=True)
            print(
                f"{args.nodes} nodes up; Ctrl-C stops them. Logs: {args.data_dir}/node-*/node.log", flush=True
            )
            supervise(args, swarm, stopping, notes)
        print("stopping the swarm ...", flush=True)
    finally:
        problems = swarm.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    for problem in problems:
        print(f"swarm: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"stopped: {args.nodes} nodes closed cleanly", flush=True)
    return 0


def supervise(args: argparse.Namespace, swarm: LocalSwarm, stopping: list[int], notes: deque[str]) -> None:
    """Restart nodes that die until a signal arrives, with the live view if asked for."""
    if not args.watch:
        while not stopping:
            swarm.watch_once()
            time.sleep(0.2)
        return
    from swarm.cli.liveview import watch

    def targets() -> list[tuple[str, str | None]]:
        found: list[tuple[str, str | None]] = []
        for member in swarm.members:
            try:
                found.append((f"node {member.index}", api_url_of(args.data_dir, member.index)))
            except LocalSwarmError:
                found.append((f"node {member.index}", None))
        return found

    watch(targets, interval=1.0, tick=swarm.watch_once, stop=lambda: bool(stopping), notes=notes)
