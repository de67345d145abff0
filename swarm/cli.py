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
import time
from pathlib import Path
from typing import Any

import httpx
import trio

from swarm import __version__
from swarm.localswarm import LocalSwarmError

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
        strategy=args.suggest,
        gossip=not args.no_gossip,
    )
    # Once the node has shut down, a late SIGINT/SIGTERM must not kill the exiting process (and
    # turn a clean exit into a signal death): the signal receiver of _run_node takes them while
    # the node runs and restores these handlers when it is done.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
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


# -- which node: --api URL | --node I | --all, with --data-dir ---------------------------------


def add_target_options(p: argparse.ArgumentParser, *, allow_all: bool = False) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--api", metavar="URL", help="a node's HTTP API, e.g. http://127.0.0.1:1633")
    group.add_argument("--node", type=int, metavar="I", help="node I of the local swarm in --data-dir")
    if allow_all:
        group.add_argument("--all", action="store_true", help="every node of the local swarm in --data-dir")
    add_data_dir_option(p)


def add_data_dir_option(p: argparse.ArgumentParser) -> None:
    from swarm.localswarm import default_data_dir

    p.add_argument(
        "--data-dir",
        type=Path,
        default=default_data_dir(),
        metavar="DIR",
        help=f"the local swarm's directory (default $SWARM_DATA_DIR or {default_data_dir()})",
    )


def add_suggest_option(p: argparse.ArgumentParser) -> None:
    from swarm.node import DEFAULT_STRATEGY

    p.add_argument(
        "--suggest",
        choices=["first", "gap", "temperature"],
        default=DEFAULT_STRATEGY,
        help=f"peer suggestion strategy of the Kademlia connection manager (default {DEFAULT_STRATEGY})",
    )


def target_api(args: argparse.Namespace) -> str:
    """The API URL the command talks to: --api, else --node I, else node 0 of the local swarm."""
    from swarm.localswarm import LocalSwarmError, api_url_of, node_indices

    if args.api:
        return str(args.api)
    index = args.node
    if index is None:
        if not node_indices(args.data_dir):
            return DEFAULT_API
        index = 0
    try:
        return api_url_of(args.data_dir, index)
    except LocalSwarmError as exc:
        raise CliError(str(exc)) from None


def all_apis(args: argparse.Namespace) -> list[tuple[int, str | None, str]]:
    """(index, API URL or None if down, note) for every node of the local swarm."""
    from swarm.localswarm import LocalSwarmError, api_url_of, node_indices

    indices = node_indices(args.data_dir)
    if not indices:
        raise CliError(f"no local swarm in {args.data_dir} (start one with `swarm up`)")
    found: list[tuple[int, str | None, str]] = []
    for i in indices:
        try:
            found.append((i, api_url_of(args.data_dir, i), ""))
        except LocalSwarmError as exc:
            found.append((i, None, str(exc)))
    return found


# -- swarm sync-status --------------------------------------------------------------------------


def cmd_sync_status(args: argparse.Namespace) -> int:
    from swarm.tables import sync_status_text, table

    if not getattr(args, "all", False):
        doc = api_get(target_api(args), "/sync")
        if args.json:
            print_json(doc)
        else:
            print(sync_status_text(doc))
        return 0
    rows: list[list[object]] = []
    docs = []
    for index, url, note in all_apis(args):
        if url is None:
            rows.append([index, "", None, None, None, "down"])
            docs.append({"node": index, "error": note})
            continue
        doc = api_get(url, "/sync")
        docs.append({"node": index, **doc})
        rows.append(
            [index, doc["overlay"][:16], doc["depth"], len(doc["peers"]), doc["chunks"], doc["fully_synced"]]
        )
    if args.json:
        print_json(docs)
    else:
        print(table(["node", "overlay", "depth", "peers", "chunks", "fully synced"], rows))
    return 0


# -- swarm topology -------------------------------------------------------------------------------


def cmd_topology(args: argparse.Namespace) -> int:
    from swarm.tables import table

    doc = api_get(target_api(args), "/topology")
    if args.json:
        print_json(doc)
        return 0
    print(
        f"node {doc['baseAddr'][:16]}  depth {doc['depth']}  known {doc['population']}  "
        f"connected {doc['connected']}  strategy {doc['strategy']}"
    )
    rows = []
    for po in range(len(doc["bins"])):
        b = doc["bins"][f"bin_{po}"]
        if not b["population"]:
            continue
        peers = " ".join(p["address"][:8] for p in b["connectedPeers"])
        rows.append([po, b["population"], b["connected"], peers])
    print(table(["bin", "known", "connected", "connected peers"], rows) if rows else "no peers known")
    return 0


# -- swarm upload / download ---------------------------------------------------------------------


def cmd_upload(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        size = path.stat().st_size
        handle = path.open("rb")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    url = target_api(args)
    progress = Progress(size, enabled=sys.stderr.isatty() and not args.quiet)

    def body() -> Any:
        with handle:
            while piece := handle.read(256 * 1024):
                progress.advance(len(piece))
                yield piece

    try:
        response = httpx.post(f"{url}/bytes", content=body(), timeout=None)
    except httpx.HTTPError as exc:
        raise CliError(f"upload to {url} failed: {exc}") from None
    finally:
        progress.done()
    if response.status_code != 201:
        raise CliError(f"upload to {url} failed with {response.status_code}: {_message(response)}")
    print(response.json()["reference"])
    return 0


def cmd_download(args: argparse.Namespace) -> int:
    reference = args.reference.removeprefix("0x")
    if len(reference) != 64 or any(c not in "0123456789abcdefABCDEF" for c in reference):
        raise CliError(f"a reference is 64 hex characters, got {args.reference!r}")
    url = target_api(args)
    out_path = Path(args.output) if args.output else None
    tmp = out_path.with_name(out_path.name + ".part") if out_path else None
    try:
        with httpx.stream("GET", f"{url}/bytes/{reference}", timeout=None) as response:
            if response.status_code != 200:
                response.read()
                raise CliError(f"download failed with {response.status_code}: {_message(response)}")
            size = int(response.headers.get("content-length", 0))
            progress = Progress(size, enabled=sys.stderr.isatty() and out_path is not None and not args.quiet)
            received = 0
            sink = tmp.open("wb") if tmp else sys.stdout.buffer
            try:
                for piece in response.iter_bytes():
                    sink.write(piece)
                    received += len(piece)
                    progress.advance(len(piece))
            finally:
                progress.done()
                if tmp:
                    sink.close()
    except httpx.HTTPError as exc:
        if tmp:
            tmp.unlink(missing_ok=True)
        raise CliError(f"download from {url} failed: {exc}") from None
    if size and received != size:
        if tmp:
            tmp.unlink(missing_ok=True)
        raise CliError(
            f"download incomplete: got {received} of {size} bytes (a chunk could not be retrieved)"
        )
    if tmp and out_path:
        tmp.replace(out_path)
    return 0


class Progress:
    """A one-line progress bar on stderr (only when it is a terminal)."""

    def __init__(self, total: int, *, enabled: bool) -> None:
        self.total = total
        self.enabled = enabled
        self.done_bytes = 0
        self.started = time.monotonic()

    def advance(self, amount: int) -> None:
        self.done_bytes += amount
        if not self.enabled:
            return
        fraction = self.done_bytes / self.total if self.total else 1.0
        bar = "#" * int(30 * fraction)
        rate = self.done_bytes / max(time.monotonic() - self.started, 1e-6) / 2**20
        sys.stderr.write(
            f"\r[{bar:<30}] {fraction:6.1%} {self.done_bytes / 2**20:8.1f} MiB {rate:6.1f} MiB/s"
        )
        sys.stderr.flush()

    def done(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


# -- swarm up -------------------------------------------------------------------------------------


def cmd_up(args: argparse.Namespace) -> int:
    from swarm.localswarm import LocalSwarm, LocalSwarmError
    from swarm.tables import table

    node_args = ["--suggest", args.suggest, "--network-id", str(args.network_id)]
    os.environ["SWARM_LOG_LEVEL"] = args.log_level  # the nodes inherit it

    def say(line: str) -> None:
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
        print(table(["node", "overlay", "api", "p2p port", "data directory"], swarm.rows()), flush=True)
        say(f"{args.nodes} nodes up; Ctrl-C stops them. Logs: {args.data_dir}/node-*/node.log")
        while not stopping:
            swarm.watch_once()
            time.sleep(0.2)
        say("stopping the swarm ...")
    finally:
        problems = swarm.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    for problem in problems:
        print(f"swarm: {problem}", file=sys.stderr)
    if problems:
        return 1
    say(f"stopped: {args.nodes} nodes closed cleanly")
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
    add_suggest_option(p)
    p.add_argument(
        "--no-gossip",
        action="store_true",
        help="static peering: no peer records sent or learned (only --peer and peers that dial in)",
    )
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
    p.set_defaults(func=cmd_up)

    p = sub.add_parser(
        "upload",
        help="upload a file; prints its reference",
        description="Cut FILE into a chunk tree at a node and print the reference to download it by.",
    )
    p.add_argument("file", metavar="FILE")
    add_target_options(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_upload)

    p = sub.add_parser(
        "download",
        help="download a file by its reference",
        description="Fetch the file REFERENCE from a node (which retrieves what it lacks from the swarm), "
        "verifying every chunk.",
    )
    p.add_argument("reference", metavar="REFERENCE")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: standard output)")
    add_target_options(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_download)

    p = sub.add_parser(
        "sync-status",
        help="how far a node is synced with each peer",
        description="Per peer and bin: PO, cursor, synced ranges (historical coverage), lag; then per peer "
        "the loss counters (repeat, unsolicited, invalid, missing, resets) with the time each last changed; "
        "then the recent disconnections (who ended them, why, the peer's counters). "
        "With --all: one line per node of the local swarm.",
    )
    add_target_options(p, allow_all=True)
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(func=cmd_sync_status)

    p = sub.add_parser(
        "topology",
        help="a node's Kademlia table",
        description="Depth, and per bin the known and connected peers of a node.",
    )
    add_target_options(p)
    p.add_argument("--json", action="store_true", help="print the /topology JSON instead of a table")
    p.set_defaults(func=cmd_topology)

    from swarm.sim import add_sim_parser

    add_sim_parser(sub)

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
    except (CliError, LocalSwarmError) as exc:
        print(f"swarm: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
