"""The ``swarm sim`` subcommand: argparse wiring (what it prints: swarm/cli/sim_view.py).

``swarm.cli.main`` registers it with ``add_sim_parser(subparsers)``; the command function returns an exit
status and raises ``swarm.cli.common.CliError`` for anything the user has to fix (one line, non-zero
exit).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kademlia import STRATEGIES
from kademlia.forwarding import FORWARDING
from swarm.sim.grid import SimParams

__all__ = ["add_sim_parser", "cmd_sim"]

# Strings: argparse converts a string default with the option's type, and --help shows it as typed.
DEFAULT_NODES = "1024,4096,16384"
DEFAULT_RUNS = 3
DEFAULT_STRATEGIES = "first,gap,temperature,hottest"


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated node counts like 64,256, got {text!r}"
        ) from None
    if not sizes or any(n < 2 for n in sizes):
        raise argparse.ArgumentTypeError(f"every network needs at least 2 nodes, got {text!r}")
    return sorted(set(sizes))


def _strategies(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in STRATEGIES]
    if not names or unknown:
        valid = ", ".join(sorted(STRATEGIES))
        raise argparse.ArgumentTypeError(f"unknown strategy {', '.join(unknown) or text!r}; valid: {valid}")
    return list(dict.fromkeys(names))


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], got {text!r}")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1), got {text!r}")
    return value


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return int(text)


class _DefaultsOnce(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default once: not where its help already says it, nor for a flag or None."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "default" in text or action.default in (None, False):
            return text
        return super()._get_help_string(action)


def add_sim_parser(subparsers: Any) -> None:
    """Register ``sim`` on ``subparsers`` (from ``ArgumentParser.add_subparsers``); sets ``func``."""
    p = subparsers.add_parser(
        "sim",
        help="load-balancing simulations of peer suggestion strategies on Spark",
        description="Build networks of the real kademlia tables for every (strategy, network size, run): "
        "nodes join from bootnodes and learn peers by gossip (or, with --known, from fixed known sets), "
        "optionally under churn; route random lookups and retrievals greedily and measure gaps, relay, "
        "retrieval and storage load, hops and failures. Runs on Spark: local mode unless --master is "
        "given. Writes Parquet tables, summary.csv, summary.md, PNG plots and run.json into --out, and "
        "prints a compact summary (--wide: every column). See docs/simulation.md.",
        formatter_class=_DefaultsOnce,
    )
    p.add_argument("--nodes", type=_sizes, default=DEFAULT_NODES, metavar="N[,N...]", help="network sizes")
    p.add_argument("--runs", type=_positive, default=DEFAULT_RUNS, help="networks per (strategy, size)")
    p.add_argument(
        "--strategies",
        type=_strategies,
        default=DEFAULT_STRATEGIES,
        metavar="S[,S...]",
        help=f"suggestion strategies among {', '.join(sorted(STRATEGIES))}",
    )
    p.add_argument(
        "--known",
        type=_fraction,
        default=None,
        metavar="FRACTION",
        help="the old set-up: each node knows this fraction of the others from the start and nobody "
        "gossips (default: discovery by gossip from --bootnodes)",
    )
    p.add_argument(
        "--churn",
        type=_rate,
        default=0.0,
        metavar="RATE",
        help="after settling, this fraction of the nodes leaves (and as many new ones join) at each of "
        "--churn-rounds events; lookups run between events (0: no churn)",
    )
    p.add_argument("--churn-rounds", type=_positive, default=10, help="churn events")
    p.add_argument(
        "--turns", type=_positive, default=4, help="dials each node makes between two churn events"
    )
    p.add_argument("--bootnodes", type=_positive, default=4, help="nodes the others join through")
    p.add_argument(
        "--known-per-bin",
        type=_positive,
        default=16,
        help="with gossip: known, unconnected peers a node keeps per bin (its address book)",
    )
    p.add_argument(
        "--saturation", type=_positive, default=4, help="connected peers wanted per bin below depth"
    )
    p.add_argument(
        "--neighbourhood-size",
        type=_positive,
        default=3,
        help="connected peers at or beyond depth that define the depth",
    )
    p.add_argument("--lookups", type=_positive, default=2000, help="random lookups routed per network")
    p.add_argument("--seed", type=int, default=1, help="seed of every random choice")
    p.add_argument(
        "--forwarding",
        choices=list(FORWARDING),
        default="closest",
        help="next-hop rule of the lookups (kademlia.forwarding)",
    )
    p.add_argument(
        "--storage",
        choices=["area", "pull"],
        default="area",
        help="which nodes hold a chunk: area, the nodes responsible for it (PO >= their depth); pull, "
        "also what the sync rule brings to nodes whose reserves are not full, as a young real swarm "
        "holds (swarm/sim/storage.py)",
    )
    p.add_argument(
        "--master",
        default=None,
        metavar="URL",
        help="Spark master URL, e.g. local[2] or spark://host:7077 (default: local[*], or the "
        "master spark-submit was given)",
    )
    p.add_argument(
        "--partitions", type=_count, default=0, help="Spark partitions for the grid (0: one per network)"
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path("sim-out"),
        metavar="DIR",
        help="output directory (created; files in it are overwritten)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress display on stderr")
    p.add_argument("--wide", action="store_true", help="print every summary column (as summary.md has)")
    p.set_defaults(func=cmd_sim)


def cmd_sim(args: argparse.Namespace) -> int:
    """Run the simulation grid; print the summary table on stdout."""
    from swarm.cli.common import CliError
    from swarm.cli.sim_view import Progress, print_summary
    from swarm.sim.run import run_simulation
    from swarm.sim.sparkstart import SparkUnavailable

    try:
        params = SimParams(
            seed=args.seed,
            known=args.known,
            saturation=args.saturation,
            lookups=args.lookups,
            neighbourhood_size=args.neighbourhood_size,
            churn=args.churn,
            churn_rounds=args.churn_rounds,
            turns=args.turns,
            bootnodes=args.bootnodes,
            known_per_bin=args.known_per_bin,
            forwarding=args.forwarding,
            storage=args.storage,
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None
    out: Path = args.out
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {out} exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot create the output directory {out}: {exc.strerror or exc}") from None
    try:
        report = run_simulation(
            sizes=args.nodes,
            runs=args.runs,
            strategies=args.strategies,
            params=params,
            out=out,
            master=args.master,
            partitions=args.partitions,
            progress=None if args.no_progress else Progress(),
        )
    except SparkUnavailable as exc:
        raise CliError(str(exc)) from None
    print_summary(report.summary, report.files, out, wide=args.wide)
    print(
        f"{len(args.strategies) * len(args.nodes) * args.runs} networks on {report.master} in "
        f"{report.seconds:.1f}s (grid {report.grid_seconds:.1f}s); results in {out}/"
    )
    return 0
