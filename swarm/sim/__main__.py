"""``python -m swarm.sim`` and ``spark-submit .../swarm/sim/__main__.py``: the ``swarm sim`` command alone."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    from swarm.cli.common import CliError
    from swarm.cli.sim import add_sim_parser

    parser = argparse.ArgumentParser(prog="swarm")
    add_sim_parser(parser.add_subparsers(dest="command", metavar="COMMAND", required=True))
    args = parser.parse_args(["sim", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args))
    except CliError as exc:
        print(f"swarm: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
