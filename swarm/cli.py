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
from pathlib import Path
from typing import Any

import trio

from localstore.cache import DEFAULT_CACHE_BYTES
from swarm import __version__
from swarm.cli_common import (
    CliError,
    add_data_dir_option,
    add_suggest_option,
    add_target_options,
    mebibytes,
    parse_hostport,
    port_number,
    positive_seconds,
    worker_count,
)
from swarm.cli_reserve import add_capacity_option, add_upload_options, neighbourhood_size
from swarm.cli_space_args import add_space_node_options, space_config  # spaces (issue 15)
from swarm.localswarm import LocalSwarmError
from syncer.verifier import default_workers

__all__ = ["CliError", "build_parser", "main"]


def _command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """The command ``name`` of the module ``module``, imported when it runs (the client commands
    need httpx, which `swarm node` does not: importing it would add a tenth to its start-up)."""

    def run(args: argparse.Namespace) -> int:
        command: Callable[[argparse.Namespace], int] = getattr(importlib.import_module(module), name)
        return command(args)

    return run


def _client_command(name: str) -> Callable[[argparse.Namespace], int]:
    return _command("swarm.cli_client", name)


def network_range(text: str) -> str:
    """An IP network in CIDR notation (argparse type)."""
    import ipaddress

    try:
        return str(ipaddress.ip_network(text, strict=False))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an IP network (CIDR, e.g. 10.0.0.0/8): {text!r}") from None


# -- swarm version ----------------------------------------------------------------------------


def cmd_version(args: argparse.Namespace) -> int:
    print(f"swarm {__version__}")
    return 0


# -- swarm node -------------------------------------------------------------------------------


def cmd_node(args: argparse.Namespace) -> int:
    from swarm.config import NodeConfig
    from swarm.failures import describe_node_failure

    config = NodeConfig(
        data_dir=Path(args.data_dir),
        host=args.host,
        port=args.port,
        api_port=None if args.no_api else args.api_port,
        peers=tuple(args.peer),
        network_id=args.network_id,
        strategy=args.suggest,
        gossip=not args.no_gossip,
        cache_bytes=args.cache_mib * 2**20,
        verify_workers=args.verify_workers,
        channel=args.channel,
        dial_networks=tuple(args.dial_allow),
        neighbourhood_size=args.neighbourhood_size,
        **({"capacity": args.capacity} if args.capacity else {}),
        provable_sync=args.provable_sync,
        spaces=space_config(args),  # spaces (issue 15)
    )
    # Once the node has shut down, a late SIGINT/SIGTERM must not kill the exiting process (and
    # turn a clean exit into a signal death): the signal receiver of _run_node takes them while
    # the node runs and restores these handlers when it is done.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        trio.run(_run_node, config)
    except Exception as exc:  # arrives inside trio's exception groups: said in one line
        raise CliError(
            describe_node_failure(exc, data_dir=config.data_dir, host=config.host, port=config.port)
        ) from None
    return 0


async def _run_node(config: Any) -> None:
    from swarm.node import Node

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        node = Node(config)
        async with trio.open_nursery() as nursery:
            await nursery.start(node.run)
            api = f"http://{config.api_host}:{node.api_port}" if node.api_port else "off"
            p2p = f"{config.host}:{node.p2p_port}"
            print(f"node {node.overlay.hex()} p2p {p2p} api {api} data {config.data_dir}", flush=True)
            async for signum in signals:
                logging.getLogger("swarm").info("%s: shutting down", signal.Signals(signum).name)
                nursery.cancel_scope.cancel()
                break


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
    add_suggest_option(p)
    p.add_argument(
        "--no-gossip",
        action="store_true",
        help="static peering: no peer records sent or learned (only --peer and peers that dial in)",
    )
    p.add_argument(
        "--cache-mib",
        type=mebibytes,
        default=DEFAULT_CACHE_BYTES // 2**20,
        metavar="MIB",
        help="memory for chunks retrieved or forwarded for others, answering repeat requests "
        f"without the network (default {DEFAULT_CACHE_BYTES // 2**20}; 0: no cache)",
    )
    p.add_argument(
        "--verify-workers",
        type=worker_count,
        default=default_workers(),
        metavar="N",
        help="processes that verify synced chunks (BMT hashing) on other cores, 0..8; 0 verifies in "
        f"the node's process (default: one per core beyond the first, at most 4: {default_workers()} here)",
    )
    p.add_argument(
        "--dial-allow",
        type=network_range,
        action="append",
        default=[],
        metavar="CIDR",
        help="a network whose addresses gossip may make this node dial (repeatable; default: "
        "loopback only when listening on loopback, else any address but loopback, link-local and "
        "multicast); --peer addresses are always dialled",
    )
    p.add_argument(
        "--channel",
        choices=("tls", "plain"),
        default="tls",
        help="tls (default): every connection is TLS 1.3, bound to the peers' identities; plain: no "
        "encryption, for measuring what TLS costs (a plain node only talks to plain nodes)",
    )
    add_capacity_option(p)  # issue 17: the reserve
    p.add_argument(
        "--neighbourhood-size",
        type=neighbourhood_size,
        default=3,
        metavar="N",
        help="peers at or beyond the depth a node wants; the depth caps the storage radius (default 3)",
    )
    p.add_argument(
        "--provable-sync",
        choices=("off", "sign", "verify"),
        default="verify",
        help="provable bin streams: verify (default) signs states of this node's bin logs and checks "
        "every peer's proofs, signing receipts; sign serves them but pulls without checking; off keeps "
        "no logs and serves plain streams (for measuring the cost; a verifying peer does not pull from it)",
    )
    add_space_node_options(p)  # spaces (issue 15)
    p.set_defaults(func=cmd_node)

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
    p.set_defaults(func=_command("swarm.cli_up", "cmd_up"))

    p = sub.add_parser(
        "upload",
        help="upload a file; prints its reference",
        description="Cut FILE into a chunk tree at a node and print the reference to download it by.",
    )
    p.add_argument("file", metavar="FILE", help="the file to upload; - reads standard input")
    add_target_options(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_upload_options(p)
    p.set_defaults(func=_client_command("cmd_upload"))

    p = sub.add_parser(
        "download",
        help="download a file by its reference",
        description="Fetch the file REFERENCE from a node (which retrieves what it lacks from the swarm), "
        "verifying every chunk.",
    )
    p.add_argument("reference", metavar="REFERENCE")
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

    from swarm.cli_feed import add_feed_parser
    from swarm.cli_reserve import register as add_pin_parser
    from swarm.sim import add_sim_parser

    add_feed_parser(sub)
    add_pin_parser(sub)
    add_sim_parser(sub)

    from swarm.cli_space_args import add_space_parser  # spaces (issue 15)

    add_space_parser(sub)

    from swarm.cli_live_args import add_live_parsers  # topic, loss (live propagation; feed follow: cli_feed)

    add_live_parsers(sub)

    from swarm.cli_proofs import add_proof_parsers  # provable streams (issue 16)

    add_proof_parsers(sub)

    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
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
