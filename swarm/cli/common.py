"""What the `swarm` subcommands share: the user-facing error, argument types and options, and
finding and asking a node's HTTP API (`--api URL` | `--node I` | `--all`, with `--data-dir`)."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

DEFAULT_API = "http://127.0.0.1:1633"


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


# -- argument types and the API ---------------------------------------------------------------------


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


def int_in(what: str, low: int, high: int, shown: str | None = None) -> Callable[[str], int]:
    """An argparse type: a decimal integer in ``low..high`` (``shown``: how to print ``high``),
    else one line naming ``what`` was expected."""

    def parse(text: str) -> int:
        if not (text.isascii() and text.isdigit()) or not low <= int(text) <= high:
            raise argparse.ArgumentTypeError(f"expected {what}, {low}..{shown or high}, got {text!r}")
        return int(text)

    return parse


mebibytes = int_in("a size in MiB", 0, 2**20)
worker_count = int_in("a number of worker processes", 0, 8)


def seconds_in(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: seconds in ``low..high``, else one line saying what was expected."""

    def seconds(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected seconds, {low:g}..{high:g}, got {text!r}")
        return value

    return seconds


positive_seconds = seconds_in(0.1, 3600)


def hex_of_size(text: str, size: int) -> bytes | None:
    """``size`` bytes from hex (a ``0x`` prefix allowed); None if ``text`` is not exactly that.
    Callers raise the error their context needs (argparse's, or a command's)."""
    try:
        raw = bytes.fromhex(text.removeprefix("0x"))
    except ValueError:
        return None
    return raw if len(raw) == size else None


def api_get(url: str, path: str) -> Any:
    """GET a JSON document from a node's API, turning failures into one clear line."""
    import httpx  # imported here: `swarm node` never needs it, and it takes a tenth of its start-up

    try:
        response = httpx.get(url.rstrip("/") + path, timeout=10.0)
    except httpx.HTTPError as exc:
        raise CliError(f"cannot reach the node API at {url}: {exc} (is the node running?)") from None
    if response.status_code != 200:
        raise CliError(f"{url}{path} answered {response.status_code}: {response_message(response)}")
    return response.json()


def response_message(response: httpx.Response) -> str:
    """The message of an API error response (its JSON `message`, else the start of its text)."""
    try:
        return str(response.json().get("message", response.text))
    except ValueError:
        return response.text.strip()[:200]


def feed_update_line(index: int, owner: str, topic: str, address: str, outcome: str) -> str:
    """What `swarm feed update` and `swarm feed publish` print, one format for both: the update's
    index, the feed, the update chunk's address, and what became of it."""
    return f"update {index} of feed {owner}/{topic}: {address} ({outcome})"


def print_json(doc: Any) -> None:
    print(json.dumps(doc, indent=2, sort_keys=True))


# -- which node: --api URL | --node I | --all, with --data-dir ---------------------------------


def add_target_options(p: argparse.ArgumentParser, *, allow_all: bool = False) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--api", metavar="URL", help="a node's HTTP API, e.g. http://127.0.0.1:1633")
    group.add_argument("--node", type=int, metavar="I", help="node I of the local swarm")
    if allow_all:
        group.add_argument("--all", action="store_true", help="every node of the local swarm")
    p.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the local swarm's directory (default: the one a running `swarm up` uses, else "
        "$SWARM_DATA_DIR or ~/.swarm)",
    )


def add_data_dir_option(p: argparse.ArgumentParser) -> None:
    from swarm.cli.localswarm import default_data_dir

    p.add_argument(
        "--data-dir",
        type=Path,
        default=default_data_dir(),
        metavar="DIR",
        help=f"the local swarm's directory (default $SWARM_DATA_DIR or {default_data_dir()})",
    )


def add_suggest_option(p: argparse.ArgumentParser) -> None:
    """``--suggest`` (every strategy of ``kademlia.STRATEGIES``) and ``--forwarding``."""
    from kademlia import STRATEGIES
    from kademlia.forwarding import DEFAULT_FORWARDING, FORWARDING
    from kademlia.suggest import DEFAULT_STRATEGY

    p.add_argument(
        "--suggest",
        choices=list(STRATEGIES),
        default=DEFAULT_STRATEGY,
        help=f"peer suggestion strategy of the Kademlia connection manager (default {DEFAULT_STRATEGY})",
    )
    p.add_argument(
        "--forwarding",
        choices=list(FORWARDING),
        default=DEFAULT_FORWARDING,
        help="next hop of retrievals and pushes among peers equally close to a chunk: the closest, or "
        f"the least loaded (spread; spreadK: within K proximity orders) (default {DEFAULT_FORWARDING})",
    )


def swarm_dir(args: argparse.Namespace) -> tuple[Path, str]:
    """The local swarm's data directory (--data-dir, else found) and how it was chosen."""
    from swarm.cli.runfile import find_data_dir

    if args.data_dir is not None:
        return Path(args.data_dir), ""
    try:
        return find_data_dir()
    except ValueError as exc:
        raise CliError(str(exc)) from None


def target_api(args: argparse.Namespace) -> str:
    """The API URL the command talks to: --api, else --node I of the local swarm, else its node 0,
    else (no local swarm at all) a lone node on the default port, if one answers there."""
    from swarm.cli.localswarm import LocalSwarmError, api_url_of, node_indices

    if args.api:
        return str(args.api)
    data_dir, how = swarm_dir(args)
    index = args.node
    if index is None:
        if not node_indices(data_dir):
            if not answers(DEFAULT_API):
                raise CliError(
                    f"no node found: no local swarm in {data_dir}{_note(how)} and nothing answers at "
                    f"{DEFAULT_API}; start one with `swarm up`, or name one with --api URL or --data-dir DIR"
                )
            return DEFAULT_API
        index = 0
    try:
        return api_url_of(data_dir, index)
    except LocalSwarmError as exc:
        raise CliError(f"{exc}; {data_dir} is {how}" if how else str(exc)) from None


def _note(how: str) -> str:
    return f" ({how})" if how else ""


def answers(url: str) -> bool:
    """Whether a node's API answers GET /health at `url`."""
    import httpx

    try:
        return httpx.get(url + "/health", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def all_apis(args: argparse.Namespace) -> list[tuple[int, str | None, str]]:
    """(index, API URL or None if down, note) for every node of the local swarm."""
    from swarm.cli.localswarm import LocalSwarmError, api_url_of, node_indices

    data_dir, how = swarm_dir(args)
    indices = node_indices(data_dir)
    if not indices:
        raise CliError(f"no local swarm in {data_dir}{_note(how)}; start one with `swarm up`")
    found: list[tuple[int, str | None, str]] = []
    for i in indices:
        try:
            found.append((i, api_url_of(data_dir, i), ""))
        except LocalSwarmError as exc:
            found.append((i, None, str(exc)))
    return found
