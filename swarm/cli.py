"""The `swarm` command line."""

from __future__ import annotations

import argparse
import sys

from swarm import __version__


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def _cmd_version(args: argparse.Namespace) -> int:
    print(f"swarm {__version__}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="swarm",
        description="A Swarm-style chunk syncing node: store, sync and retrieve content-addressed chunks.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("version", help="print the version and exit")
    p.set_defaults(func=_cmd_version)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return 0
    try:
        return int(args.func(args))
    except CliError as exc:
        print(f"swarm: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
