"""The `swarm` subcommands that talk to a running node over its HTTP API: sync-status, topology,
upload and download."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from swarm.cli_common import CliError, all_apis, api_get, print_json, response_message, target_api

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
        raise CliError(f"upload to {url} failed with {response.status_code}: {response_message(response)}")
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
                raise CliError(f"download failed with {response.status_code}: {response_message(response)}")
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
