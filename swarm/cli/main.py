"""The `swarm` command line: one command, a subcommand per job, `--help` on each.

Errors are one clear line on stderr and a non-zero exit status, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
from collections.abc import Callable

from swarm import __version__
from swarm.cli.common import (
    CliError,
    add_data_dir_option,
    add_suggest_option,
    add_target_options,
    port_number,
    positive_seconds,
)
from swarm.cli.localswarm import LocalSwarmError
from swarm.cli.node import add_node_parser
from swarm.cli.reserve import add_capacity_option, add_upload_options

__all__ = ["CliError", "build_parser", "main"]


def _command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """The command ``name`` of the module ``module``, imported when it runs (the client commands
    need httpx, which `swarm node` does not: importing it would add a tenth to its start-up)."""

    def run(args: argparse.Namespace) -> int:
        command: Callable[[argparse.Namespace], int] = getattr(importlib.import_module(module), name)
        return command(args)

    return run


def _client_command(name: str) -> Callable[[argparse.Namespace], int]:
    return _command("swarm.cli.client", name)


# -- swarm version ----------------------------------------------------------------------------


def cmd_version(args: argparse.Namespace) -> int:
    print(f"swarm {__version__}")
    return 0


# -- the parser ---------------------------------------------------------------------------------


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with ``command="node"`` one that knows only `swarm node` (see `main`)."""
    parser = argparse.ArgumentParser(
        prog="swarm",
        description="A Swarm-style chunk syncing node: store, sync and retrieve content-addressed chunks.",
    )
    parser.add_argument(
        "--log-level",
        default=os.environ.get("SWARM_LOG_LEVEL", "WARNING"),
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="log verbosity on stderr (default WARNING, or $SWARM_LOG_LEVEL)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("version", help="print the version and exit")
    p.set_defaults(func=cmd_version)

    add_node_parser(sub)
    if command == "node":
        return parser

    p = sub.add_parser(
        "up",
        help="start a local swarm of N nodes (the main job)",
        description="Start N `swarm node` processes on loopback (node 0 is the bootnode of the others), "
        "print a table of them and stay in the foreground; Ctrl-C stops them all cleanly. A node that dies "
        "is restarted. Data directories (DIR/node-I) persist: running it again resumes the same swarm.",
    )
    p.add_argument("--nodes", type=int, default=4, metavar="N", help="how many nodes (default 4)")
    add_data_dir_option(p)
    p.add_argument(
        "--base-port",
        type=port_number,
        default=1633,
        metavar="P",
        help="node I listens on P+2I (API) and P+2I+1 (peers); 0 picks free ports (default 1633)",
    )
    add_suggest_option(p)
    p.add_argument("--network-id", type=int, default=1, help="network ID of the swarm (default 1)")
    p.add_argument("--no-restart", action="store_true", help="do not restart nodes that die")
    p.add_argument(
        "--watch",
        action="store_true",
        help="show the live view of every node (as `sync-status --watch --all`)",
    )
    add_capacity_option(p)
    p.set_defaults(func=_command("swarm.cli.up", "cmd_up"))

    p = sub.add_parser(
        "upload",
        help="upload a file or a directory; prints its reference",
        description="Cut FILE into a chunk tree at a node and print the reference to download it by "
        "(swarm download REFERENCE). With --name, the file goes under a manifest as Bee's POST /bzz "
        "stores it (open it at /bzz/REFERENCE/, swarm download REFERENCE/NAME). A DIRECTORY is "
        "uploaded as a collection (a website): every file under its relative path, served at "
        "/bzz/REFERENCE/PATH; with --index-document index.html, /bzz/REFERENCE/ opens the site.",
    )
    p.add_argument("file", metavar="FILE|DIRECTORY", help="what to upload; - reads standard input")
    add_target_options(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_upload_options(p)
    p.add_argument("--name", help="a file: store it under a manifest with this name (Bee's /bzz upload)")
    p.add_argument(
        "--content-type", help="with --name: the file's content type (default: guessed by the node)"
    )
    p.add_argument(
        "--index-document",
        metavar="FILE",
        help="a directory: the file a directory's path serves (index.html)",
    )
    p.add_argument("--error-document", metavar="PATH", help="a directory: the file served for a missing path")
    p.add_argument(
        "--encrypt",
        action="store_true",
        help="encrypt every chunk (Bee's Swarm-Encrypt): the reference, 128 hex characters, holds "
        "the key; whoever has the reference can read the file, nobody else",
    )
    p.set_defaults(func=_client_command("cmd_upload"))

    p = sub.add_parser(
        "download",
        help="download a file by its reference, or a file of a manifest by REFERENCE/PATH",
        description="Fetch the file REFERENCE from a node (which retrieves what it lacks from the swarm), "
        "verifying every chunk. REFERENCE/PATH fetches the file at PATH of the manifest REFERENCE (a "
        "directory or a named file: swarm upload DIR, swarm upload FILE --name); REFERENCE/ its index "
        "document. An encrypted upload's REFERENCE is 128 hex characters (swarm upload --encrypt).",
    )
    p.add_argument("reference", metavar="REFERENCE[/PATH]")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE; - or none: standard output")
    add_target_options(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_client_command("cmd_download"))

    p = sub.add_parser(
        "sync-status",
        help="how far a node is synced with each peer",
        description="Per peer and bin: PO, cursor, synced ranges (historical coverage), lag; then per peer "
        "the loss counters (repeat, unsolicited, invalid, missing, resets) with the time each last changed; "
        "then the recent disconnections (who ended them, why, the peer's counters). "
        "With --all: one line per node of the local swarm.",
    )
    add_target_options(p, allow_all=True)
    view = p.add_mutually_exclusive_group()
    view.add_argument("--json", action="store_true", help="print JSON instead of tables")
    view.add_argument(
        "--watch",
        action="store_true",
        help="a live view redrawn until Ctrl-C: per node depth, peers, chunks, loss, and per bin "
        "sync progress and rate",
    )
    p.add_argument(
        "--interval", type=positive_seconds, default=1.0, metavar="S", help="--watch refresh (default 1 s)"
    )
    p.set_defaults(func=_client_command("cmd_sync_status"))

    p = sub.add_parser(
        "topology",
        help="a node's Kademlia table",
        description="Depth, and per bin the known and connected peers of a node.",
    )
    add_target_options(p)
    p.add_argument("--json", action="store_true", help="print the /topology JSON instead of a table")
    p.set_defaults(func=_client_command("cmd_topology"))

    p = sub.add_parser(
        "dashboard",
        help="print the address of the local swarm's dashboard page",
        description="The dashboard is a web page every node serves at /dashboard: nodes, Kademlia bins, "
        "per-bin sync progress and rate, loss counters and disconnections, updated every second. This "
        "prints its address with every node of the local swarm (or, with --api, a lone node's).",
    )
    add_target_options(p)
    p.set_defaults(func=_client_command("cmd_dashboard"))

    from swarm.cli.bzz import add_manifest_parser
    from swarm.cli.feed import add_feed_parser

    add_manifest_parser(sub)
    from swarm.cli.reserve import register as add_pin_parser
    from swarm.cli.sim import add_sim_parser

    add_feed_parser(sub)
    add_pin_parser(sub)
    add_sim_parser(sub)

    from swarm.cli.space_args import add_space_parser

    add_space_parser(sub)

    from swarm.cli.live_args import add_live_parsers  # topic, loss (live propagation; feed follow: cli_feed)

    add_live_parsers(sub)

    from swarm.cli.proofs import add_proof_parsers

    add_proof_parsers(sub)

    return parser


def command_named(argv: list[str]) -> str | None:
    """The subcommand ``argv`` names when only ``--log-level`` comes before it, else None.

    `swarm node` builds a parser of that command alone: registering every subcommand takes about
    25 ms, which a node would spend before it dials its peers (docs/performance.md, "Start-up").
    Anything else (``-h`` before the command, an unknown option) gets the whole parser, and so
    the same help and errors as before."""
    words = iter(argv)
    for word in words:
        if word == "--log-level":
            next(words, None)
        elif not word.startswith("--log-level="):
            return None if word.startswith("-") else word
    return None


def main(argv: list[str] | None = None) -> int:
    command = command_named(sys.argv[1:] if argv is None else argv)
    parser = build_parser("node" if command == "node" else None)
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    if not hasattr(args, "func"):
        parser.print_help()
        return 0
    try:
        status = int(args.func(args))
        sys.stdout.flush()  # inside the try: a reader that went away is handled below
        return status
    except (CliError, LocalSwarmError) as exc:
        print(f"swarm: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader of our output went away (`swarm ... | head`): stop quietly, as a tool killed
        # by SIGPIPE would, and keep the interpreter's final flush from complaining
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def configure_logging(level_name: str) -> None:
    """Log records at `level_name` and above to stderr; the store's few INFO records (an index
    rebuilt after a crash) always, since they explain a slow start."""
    level = getattr(logging, level_name)
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    logging.getLogger("localstore").setLevel(min(level, logging.INFO))
