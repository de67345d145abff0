"""The command line of the reserve: ``--capacity``, ``swarm pin add|rm|ls``, and the
receipts of ``swarm upload`` (its ``--pin`` and ``--no-wait``, the progress of its receipts).

`register` adds the ``pin`` command to the parser; `add_capacity_option` the ``--capacity`` of
``swarm node`` and ``swarm up``; `add_upload_options`, `upload_headers` and `ReceiptWatch` are
what ``swarm upload`` (swarm/cli/client.py) uses.
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Any

from localstore.capacity import DEFAULT_CAPACITY, parse_capacity
from swarm.cli.common import CliError, add_target_options, int_in, print_json, response_message, target_api

__all__ = [
    "ReceiptWatch",
    "add_capacity_option",
    "add_upload_options",
    "neighbourhood_size",
    "register",
    "upload_headers",
]


def capacity(text: str) -> int:
    try:
        return parse_capacity(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


neighbourhood_size = int_in("a number of peers", 1, 64)


def add_capacity_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--capacity",
        type=capacity,
        default=None,
        metavar="SIZE",
        help="how much the reserve keeps: chunks (5000) or disk with a unit (4GiB, 500MB). When it is "
        "full the storage radius rises (at most to the depth), pull syncing asks only for chunks "
        "within it, and chunks outside it are evicted, farthest and oldest first; pinned chunks and "
        "uploads waiting for their push receipts do not count and stay "
        f"(default {DEFAULT_CAPACITY} chunks, about 4.4 GB)",
    )


def add_upload_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pin", action="store_true", help="pin the file: never evicted from this node")
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="answer once the file is stored at the node, without waiting for the receipts of "
        "its chunks (the node pushes them in the background)",
    )


def upload_headers(args: argparse.Namespace, tag: int | None) -> dict[str, str]:
    headers = {}
    if getattr(args, "pin", False):
        headers["swarm-pin"] = "true"
    if getattr(args, "no_wait", False):
        headers["swarm-deferred-upload"] = "true"
    if tag is not None:
        headers["swarm-tag"] = str(tag)
    return headers


class ReceiptWatch:
    """Follows an upload's tag while ``POST /bytes`` runs: a second progress bar (receipts over
    chunks split), then a line saying which chunks have no receipt, if any."""

    def __init__(self, url: str, *, enabled: bool) -> None:
        import httpx

        self.url = url
        self.tag: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            response = httpx.post(f"{url}/tags", timeout=10.0)
            if response.status_code == 201:
                self.tag = int(response.json()["uid"])
        except (httpx.HTTPError, ValueError, KeyError):
            self.tag = None  # an older node: the upload still works, without receipts shown
        self._enabled = enabled and self.tag is not None

    def follow(self) -> None:
        """Show the receipts' progress from now on (once the upload's bytes are sent)."""
        if self._enabled and self._thread is None:
            self._thread = threading.Thread(target=self._follow, daemon=True)
            self._thread.start()

    def _follow(self) -> None:
        import httpx
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        columns = [TextColumn("receipts"), BarColumn(), MofNCompleteColumn()]
        with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("", total=None)
            while not self._stop.wait(0.25):
                try:
                    doc = httpx.get(f"{self.url}/tags/{self.tag}", timeout=5.0).json()
                except (httpx.HTTPError, ValueError):
                    continue
                bar.update(task, total=max(doc["split"], 1), completed=doc["synced"])

    def done(self, document: dict[str, Any]) -> None:
        """Stop following; report the upload's receipts from its answer."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        tag = document.get("tag")
        if not isinstance(tag, dict):
            return
        missing = tag.get("without_receipt", 0)
        if missing:
            names = ", ".join(m["address"][:16] for m in tag.get("missing", [])[:5])
            print(
                f"{missing} of {tag['split']} chunks have no receipt yet (the node keeps them and "
                f"goes on pushing): {names}{', ...' if missing > 5 else ''}",
                file=sys.stderr,
            )


# -- swarm pin add|rm|ls ------------------------------------------------------------------------


def register(sub: Any) -> None:
    p = sub.add_parser(
        "pin",
        help="pin files at a node: never evicted, outside its reserve",
        description="Pin a file (all its chunks, fetched from the swarm if the node lacks them) so the "
        "node keeps it whatever its capacity, unpin it, or list the pinned files.",
    )
    pin_sub = p.add_subparsers(dest="pin_command", metavar="ACTION", required=True)
    for name, help_text in (("add", "pin a file"), ("rm", "unpin a file")):
        q = pin_sub.add_parser(name, help=help_text)
        q.add_argument("reference", metavar="REFERENCE")
        add_target_options(q)
        q.set_defaults(func=cmd_pin)
    q = pin_sub.add_parser("ls", help="list the pinned files")
    add_target_options(q)
    q.add_argument("--json", action="store_true", help="print the JSON document")
    q.set_defaults(func=cmd_pin)


def cmd_pin(args: argparse.Namespace) -> int:
    import httpx

    url = target_api(args)
    try:
        if args.pin_command == "ls":
            response = httpx.get(f"{url}/pins", timeout=10.0)
        else:
            reference = args.reference.removeprefix("0x")
            method = "POST" if args.pin_command == "add" else "DELETE"
            response = httpx.request(method, f"{url}/pins/{reference}", timeout=None)
    except httpx.HTTPError as exc:
        raise CliError(f"cannot reach the node API at {url}: {exc} (is the node running?)") from None
    if response.status_code not in (200, 201):
        problem = f"{response.status_code}: {response_message(response)}"
        raise CliError(f"pin {args.pin_command} failed with {problem}")
    doc = response.json()
    if args.pin_command == "add":
        print(f"pinned {doc['reference']} ({doc['chunks']} chunks)")
    elif args.pin_command == "rm":
        print(f"unpinned {reference}")
    elif args.json:
        print_json(doc)
    else:
        for ref in doc["references"]:
            print(f"{ref}  {doc['chunks'][ref]} chunks")
    return 0
