"""The `swarm` command line: one command, a subcommand per job, `--help` on each.

Errors are one clear line on stderr and a non-zero exit status, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import httpx
import trio

from swarm import __version__

DEFAULT_API = "http://127.0.0.1:1633"


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


# -- shared helpers ---------------------------------------------------------------------------


def parse_hostport(text: str) -> tuple[str, int]:
    """HOST:PORT -> (host, port); argparse type."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT with a port in 1..65535, got {text!r}")
    return host, int(port)


def port_number(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) < 65536:
        raise argparse.ArgumentTypeError(f"expected a port in 0..65535 (0 picks a free one), got {text!r}")
    return int(text)


def api_get(url: str, path: str) -> Any:
    """GET a JSON document from a node's API, turning failures into one clear line."""
    try:
        response = httpx.get(url.rstrip("/") + path, timeout=10.0)
    except httpx.HTTPError as exc:
        raise CliError(f"cannot reach the node API at {url}: {exc} (is the node running?)") from None
    if response.status_code != 200:
        raise CliError(f"{url}{path} answered {response.status_code}: {_message(response)}")
    return response.json()


def _message(response: httpx.Response) -> str:
    try:
        return str(response.json().get("message", response.text))
    except ValueError:
        return response.text.strip()[:200]


def print_json(doc: Any) -> None:
    print(json.dumps(doc, indent=2, sort_keys=True))


# -- swarm version ----------------------------------------------------------------------------


def cmd_version(args: argparse.Namespace) -> int:
    print(f"swarm {__version__}")
    return 0


# -- swarm node -------------------------------------------------------------------------------


def cmd_node(args: argparse.Namespace) -> int:
    from localstore import StoreError
    from streamer.identity import KeyFileError
    from swarm.node import NodeConfig

    config = NodeConfig(
        data_dir=Path(args.data_dir),
        host=args.host,
        port=args.port,
        api_port=None if args.no_api else args.api_port,
        peers=tuple(args.peer),
        network_id=args.network_id,
    )
    try:
        trio.run(_run_node, config)
    except StoreError as exc:
        raise CliError(str(exc)) from None
    except KeyFileError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot start the node: {exc}") from None
    return 0


async def _run_node(config: Any) -> None:
    from swarm.node import Node

    node = Node(config)
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(node.run)
            api = f"http://{config.api_host}:{node.api_port}" if node.api_port else "off"
            p2p = f"{config.host}:{node.p2p_port}"
            print(f"node {node.overlay.hex()} p2p {p2p} api {api} data {config.data_dir}", flush=True)
            async for signum in signals:
                logging.getLogger("swarm").info("%s: shutting down", signal.Signals(signum).name)
                nursery.cancel_scope.cancel()
                break


# -- swarm sync-status --------------------------------------------------------------------------


def cmd_sync_status(args: argparse.Namespace) -> int:
    from swarm.tables import sync_status_text

    doc = api_get(args.api, "/sync")
    if args.json:
        print_json(doc)
    else:
        print(sync_status_text(doc))
    return 0


# -- the parser ---------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
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

    p = sub.add_parser(
        "node",
        help="run one node in the foreground",
        description="Run one node until SIGINT or SIGTERM. The chosen ports are printed and written to "
        "DIR/node.json; the identity lives in DIR/node.key, the chunk store in DIR/localstore/.",
    )
    p.add_argument(
        "--data-dir", required=True, metavar="DIR", help="the node's data directory (created if missing)"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on for peers (default 127.0.0.1)")
    p.add_argument(
        "--port", type=port_number, default=1634, help="peer port (default 1634; 0 picks a free one)"
    )
    p.add_argument(
        "--api-port",
        type=port_number,
        default=1633,
        help="HTTP API port on 127.0.0.1 (default 1633; 0: free one)",
    )
    p.add_argument("--no-api", action="store_true", help="do not serve the HTTP API")
    p.add_argument(
        "--peer",
        type=parse_hostport,
        action="append",
        default=[],
        metavar="HOST:PORT",
        help="a peer to dial and keep connected (repeatable)",
    )
    p.add_argument("--network-id", type=int, default=1, help="only peers of this network connect (default 1)")
    p.set_defaults(func=cmd_node)

    p = sub.add_parser(
        "sync-status",
        help="how far a node is synced with each peer",
        description="Per peer and bin: cursor, synced ranges, lag; then per peer the loss counters "
        "(repeat, unsolicited, invalid, missing, resets) with the time each last changed.",
    )
    p.add_argument(
        "--api", default=DEFAULT_API, metavar="URL", help=f"the node's API (default {DEFAULT_API})"
    )
    p.add_argument("--json", action="store_true", help="print the /sync JSON document instead of tables")
    p.set_defaults(func=cmd_sync_status)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
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
