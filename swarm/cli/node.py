"""`swarm node`: run one node in the foreground, and its command-line options.

Split from `swarm.cli.main` (which builds the whole parser and dispatches) because the node command is
the one that turns options into a `NodeConfig`, runs the node under trio and turns a failed start
into one line; the client commands live in their own cli_* modules the same way.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localstore.cache import DEFAULT_CACHE_BYTES
from swarm.cli.common import (
    CliError,
    add_suggest_option,
    int_in,
    mebibytes,
    parse_hostport,
    port_number,
    seconds_in,
    worker_count,
)
from swarm.cli.reserve import add_capacity_option, neighbourhood_size
from swarm.cli.space_args import add_space_node_options, space_config
from swarm.live.pruning import DEFAULT_EAGER
from syncer.upload_first import DEFAULT_MAX_WAIT, DEFAULT_QUIET

if TYPE_CHECKING:  # imported where they run: `swarm --help` need not load them
    from syncer.verifier import ChunkVerifier

__all__ = ["add_node_parser", "cmd_node", "network_range"]


eager_paths = int_in("a number of paths", 0, 64)


def default_workers(nodes: int = 1) -> int:
    """Verifier workers by default: one per core this process may run on, at most 4, and none
    on a single core. The node's own process is not counted against a core: it spends about a
    third of a core while it syncs, and the kernel gives its idle time to a worker (with one
    worker on two cores that worker was the bottleneck and the other core partly idle,
    docs/performance.md). On one core a worker would only add its IPC to the same CPU.
    ``nodes`` nodes sharing the machine (`swarm up`) share its cores the same way."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    share = cores // max(1, nodes)
    return 0 if share < 2 else min(4, share)


def network_range(text: str) -> str:
    """An IP network in CIDR notation (argparse type)."""
    import ipaddress

    try:
        return str(ipaddress.ip_network(text, strict=False))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an IP network (CIDR, e.g. 10.0.0.0/8): {text!r}") from None


def add_node_parser(sub: Any) -> None:
    """Register `swarm node` and its options on the subcommand parsers `sub`."""
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
        "--api-allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name the HTTP API answers besides 127.0.0.1, localhost and [::1] (repeatable; "
        "requests naming any other host are refused, against DNS rebinding)",
    )
    p.add_argument(
        "--cors-allowed-origins",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="origins (e.g. https://app.example; comma-separated or repeated; * for any) whose web "
        "pages may read the HTTP API and change state (upload, publish); as Bee's option. Pages "
        "of other origins may not",
    )
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
        help="processes that verify synced chunks (BMT hashing) beside the node, 0..8; 0 verifies in "
        f"the node's process (default: one per core, at most 4, none on one core: {default_workers()} here)",
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
    p.add_argument(
        "--hedge-after",
        type=seconds_in(0.01, 10),
        default=0.25,
        metavar="S",
        help="retrieval and push syncing: an attempt silent this long gets a parallel one at the next "
        "closest peer, the first good answer wins (0.01..10 s; default 0.25, chosen with "
        "benches.retrieval; raise it on slow links)",
    )
    p.add_argument(
        "--replication-wait",
        type=seconds_in(0, 60),
        default=DEFAULT_MAX_WAIT,
        metavar="S",
        help="uploads first: while this node stores or pushes an upload's chunks, the live offers "
        "that copy new chunks on to its neighbours wait until it has done no upload work for "
        f"{DEFAULT_QUIET:g} s, at most S seconds (0..60; default {DEFAULT_MAX_WAIT:g}; 0: offer at once)",
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
    add_space_node_options(p)
    p.add_argument(
        "--live-eager",
        type=eager_paths,
        default=DEFAULT_EAGER,
        metavar="N",
        help="live propagation: unpaused paths kept per publisher; a peer that only brings repeats of "
        f"a publisher's messages beyond these is asked to stop pushing them (default {DEFAULT_EAGER}; "
        "0: never ask, every path pushes everything; docs/live.md)",
    )
    p.set_defaults(func=cmd_node)


def cmd_node(args: argparse.Namespace) -> int:
    # The cyclic garbage collector is off until the node is up (`_run_node`): starting one makes
    # about 100,000 objects that live as long as the process (modules, classes, functions), and
    # with the collector on, its ~130 passes over them while they were made cost 50-60 ms of CPU
    # before the first synced chunks were stored (docs/performance.md, "Start-up and polling").
    gc.disable()
    try:
        return _start_node(args)
    finally:
        gc.enable()


def _start_node(args: argparse.Namespace) -> int:
    # imported here, not at the top: every `swarm` command builds this parser (about a tenth of a
    # second saved on each, `swarm --help` included)
    import trio

    from swarm.config import NodeConfig
    from swarm.failures import describe_node_failure
    from swarm.live.config import LiveConfig

    config = NodeConfig(
        data_dir=Path(args.data_dir),
        host=args.host,
        port=args.port,
        api_port=None if args.no_api else args.api_port,
        api_allow_hosts=tuple(args.api_allow_host),
        cors_allowed_origins=tuple(o for item in args.cors_allowed_origins for o in item.split(",")),
        peers=tuple(args.peer),
        network_id=args.network_id,
        strategy=args.suggest,
        forwarding=args.forwarding,
        gossip=not args.no_gossip,
        cache_bytes=args.cache_mib * 2**20,
        verify_workers=args.verify_workers,
        channel=args.channel,
        dial_networks=tuple(args.dial_allow),
        neighbourhood_size=args.neighbourhood_size,
        hedge_after=args.hedge_after,
        replication_wait=args.replication_wait,
        **({"capacity": args.capacity} if args.capacity else {}),
        provable_sync=args.provable_sync,
        spaces=space_config(args),
        live=LiveConfig(eager=args.live_eager),
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
    import trio

    from syncer.verifier import ChunkVerifier

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as workers:
            # The verifier's workers are spawned before the node's modules are imported (a third
            # of a second on one core): their own start-up, an interpreter each, runs on the other
            # cores meanwhile instead of when the first synced chunks arrive. They outlive the node.
            verifier = await workers.start(ChunkVerifier(config.verify_workers).run)
            await _serve_node(config, verifier, signals)
            workers.cancel_scope.cancel()


async def _serve_node(config: Any, verifier: ChunkVerifier, signals: AsyncIterator[int]) -> None:
    import trio

    from swarm.node import Node

    node = Node(config, verifier=verifier)
    async with trio.open_nursery() as nursery:
        await nursery.start(node.run)
        # Up: what start-up made is kept out of every later collection (gc.freeze: it lives as
        # long as the process; the little cyclic garbage among it, about 1 MB, stays too).
        gc.freeze()
        gc.enable()
        api = f"http://{config.api_host}:{node.api_port}" if node.api_port else "off"
        p2p = f"{config.host}:{node.p2p_port}"
        print(f"node {node.overlay.hex()} p2p {p2p} api {api} data {config.data_dir}", flush=True)
        async for signum in signals:
            logging.getLogger("swarm").info("%s: shutting down", signal.Signals(signum).name)
            nursery.cancel_scope.cancel()
            break
