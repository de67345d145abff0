"""The `swarm space` command line's arguments: the ``space`` commands' parsers (their help
description is `swarm.cli.space`'s docstring) and `swarm node`'s options for the spaces it
follows; the commands themselves are in `swarm.cli.space`, as `swarm.cli.live_args` is to
`swarm.cli.live`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from swarm.cli import space as cli_space
from swarm.cli.common import add_target_options
from swarm.cli.space import (
    cmd_heartbeat,
    cmd_join,
    cmd_log,
    cmd_members,
    cmd_new,
    cmd_say,
    cmd_set,
    cmd_state,
    cmd_status,
)

__all__ = ["add_space_node_options", "add_space_parser", "space_config"]


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 10**9:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def add_space_node_options(p: argparse.ArgumentParser) -> None:
    """`swarm node`'s options for the spaces it follows."""
    from swarm.spaces.total import DEFAULT_INACTIVE_AFTER

    p.add_argument(
        "--space-inactive-after",
        type=_seconds,
        default=DEFAULT_INACTIVE_AFTER,
        metavar="SECONDS",
        help="a space member silent this long no longer holds the total order back "
        f"(default {DEFAULT_INACTIVE_AFTER:g})",
    )


def space_config(args: argparse.Namespace) -> Any:
    """The node's `SpaceConfig` from `add_space_node_options`' options."""
    from swarm.spaces.config import SpaceConfig

    return SpaceConfig(inactive_after=args.space_inactive_after)


def add_space_parser(sub: Any) -> None:
    """Register ``space`` and its commands on the ``swarm`` parser's subcommands."""
    space = sub.add_parser(
        "space",
        help="multi-writer spaces: many writers' feeds in one causally consistent order",
        description=cli_space.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = space.add_subparsers(dest="space_command", metavar="COMMAND", required=True)

    def command(name: str, help: str, func: Any, *, key: bool = False) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = commands.add_parser(name, help=help)
        if name != "new":
            p.add_argument("space", metavar="SPACEFILE" if name == "join" else "SPACE")
        if key:
            p.add_argument("--key", type=Path, required=True, metavar="FILE", help="your secp256k1 key file")
        add_target_options(p)
        p.set_defaults(func=func)
        return p

    p = command("new", "make a space, you its first member; writes its space file", cmd_new, key=True)
    p.add_argument("name", metavar="NAME")
    p.add_argument("--out", type=Path, help="the space file to write (default ./NAME.space)")
    command("join", "become a member (with the space file)", cmd_join, key=True)
    command("members", "the members, in admission order", cmd_members).add_argument(
        "--json", action="store_true"
    )
    command("say", "write a message", cmd_say, key=True).add_argument("message", nargs="+", metavar="MESSAGE")
    p = command("set", "set a key of the shared map (an empty VALUE clears it)", cmd_set, key=True)
    p.add_argument("name", metavar="KEY")
    p.add_argument("value", metavar="VALUE")
    command("heartbeat", "say nothing, to let total order pass you", cmd_heartbeat, key=True)
    p = command("log", "every message in the processing order", cmd_log)
    p.add_argument(
        "--mode", choices=("causal", "total"), default="causal", help="processing order (default causal)"
    )
    p.add_argument("--follow", action="store_true", help="keep printing new messages (Ctrl-C stops)")
    p.add_argument("--heartbeats", action="store_true", help="show heartbeats too (each member's latest)")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    command("state", "the shared map", cmd_state).add_argument("--json", action="store_true")
    command("status", "per member: processed, waiting for what since when", cmd_status).add_argument(
        "--json", action="store_true"
    )
