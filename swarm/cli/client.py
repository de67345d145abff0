"""The `swarm` subcommands that talk to a running node over its HTTP API: sync-status, topology,
upload and download."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from swarm.cli.common import CliError, all_apis, api_get, print_json, response_message, target_api
from swarm.cli.reserve import ReceiptWatch, upload_headers

# -- swarm sync-status --------------------------------------------------------------------------


def cmd_sync_status(args: argparse.Namespace) -> int:
    from swarm.cli.tables import sync_status_text

    if args.watch:
        from swarm.cli.liveview import watch

        return watch(watch_targets(args), interval=args.interval)
    if not args.all:
        doc = api_get(target_api(args), "/sync")
        if args.json:
            print_json(doc)
        else:
            print(sync_status_text(doc))
        return 0
    return sync_status_all(args)


def sync_status_all(args: argparse.Namespace) -> int:
    """One line per node of the local swarm; exit status 1 when any node is down."""
    from swarm.render import table

    rows: list[list[object]] = []
    docs = []
    down = []
    for index, url, note in all_apis(args):
        doc = None
        if url is not None:
            try:
                doc = api_get(url, "/sync")
            except CliError as exc:
                note = str(exc)
        if doc is None:
            down.append(index)
            rows.append([index, "", None, None, None, None, None, "down"])
            docs.append({"node": index, "error": note})
            continue
        docs.append({"node": index, **doc})
        reserve = doc.get("reserve", {})
        rows.append(
            [
                index,
                doc["overlay"][:16],
                doc["depth"],
                len(doc["peers"]),
                doc["chunks"],
                reserve.get("radius"),
                reserve.get("evicted"),
                doc["fully_synced"],
            ]
        )
    if args.json:
        print_json(docs)
    else:
        headers = ["node", "overlay", "depth", "peers", "chunks", "radius", "evicted", "fully synced"]
        print(table(headers, rows))
    if down:
        sys.stdout.flush()
        which = "every node is" if len(down) == len(rows) else f"{len(down)} of {len(rows)} nodes are"
        print(f"swarm: {which} down: {', '.join(map(str, down))}", file=sys.stderr)
        return 1
    return 0


def watch_targets(args: argparse.Namespace) -> Callable[[], list[tuple[str, str | None]]]:
    """What `sync-status --watch` shows: a function giving (label, API URL or None if down) of
    each node, asked again at every refresh (a restarted node of a local swarm may move)."""
    if args.all:
        all_apis(args)  # a missing swarm is an error now, not an empty screen
        return lambda: [(f"node {index}", url) for index, url, _note in all_apis(args)]
    url = target_api(args)
    label = f"node {args.node}" if args.node is not None else url
    return lambda: [(label, url)]


# -- swarm dashboard ------------------------------------------------------------------------------


def cmd_dashboard(args: argparse.Namespace) -> int:
    """Print the address of the dashboard page showing every node of the local swarm."""
    from swarm.cli.up import dashboard_url

    if args.api:
        print(f"{args.api.rstrip('/')}/dashboard")
        return 0
    found = all_apis(args)
    apis = [url for _, url, _ in found if url is not None]
    if not apis:
        raise CliError(f"every node of the local swarm is down ({found[0][2]})")
    ports = [url.rsplit(":", 1)[1] for url in apis]
    print(dashboard_url(apis[0], ports))
    return 0


# -- swarm topology -------------------------------------------------------------------------------


def cmd_topology(args: argparse.Namespace) -> int:
    from swarm.render import table

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
    """A file to `/bytes`; with --name, a file under a manifest; a directory as a collection (`/bzz`)."""
    from swarm.cli.bzz import upload_request

    endpoint, pieces, size, extra = upload_request(args)
    url = target_api(args)
    progress = Progress(size, enabled=sys.stderr.isatty() and not args.quiet)
    receipts = ReceiptWatch(url, enabled=progress.enabled)  # issue 17: the upload's receipts

    def body() -> Iterator[bytes]:
        for piece in pieces:
            progress.advance(len(piece))
            yield piece
        progress.done()
        receipts.follow()  # the bytes are out: the node now waits for the chunks' receipts

    try:
        headers = {**upload_headers(args, receipts.tag), **extra}
        if args.encrypt:
            headers["swarm-encrypt"] = "true"
        response = httpx.post(f"{url}{endpoint}", content=body(), headers=headers, timeout=None)
    except httpx.HTTPError as exc:
        raise CliError(f"upload to {url} failed: {exc}") from None
    finally:
        progress.done()
        receipts.done({})
    if response.status_code != 201:
        raise CliError(f"upload to {url} failed with {response.status_code}: {response_message(response)}")
    receipts.done(response.json())
    print(response.json()["reference"])
    return 0


def cmd_download(args: argparse.Namespace) -> int:
    reference, slash, path = args.reference.removeprefix("0x").partition("/")
    if len(reference) not in (64, 128) or any(c not in "0123456789abcdefABCDEF" for c in reference):
        raise CliError(
            "a reference is 64 hex characters, or 128 for an encrypted upload (then /PATH in a "
            f"manifest), got {args.reference!r}"
        )
    # REF/PATH: the file at PATH of the manifest REF (REF/: its index document), as a browser gets it
    resource = f"/bzz/{reference}/{quote(path)}" if slash else f"/bytes/{reference}"
    out_path = Path(args.output) if args.output not in (None, "-") else None
    if out_path is not None and not out_path.parent.is_dir():
        raise CliError(f"cannot write {out_path}: the directory {out_path.parent} does not exist")
    url = target_api(args)
    tmp = out_path.with_name(out_path.name + ".part") if out_path else None
    try:
        received, size = _download(f"{url}{resource}", tmp, quiet=args.quiet)
    except httpx.HTTPError as exc:
        raise CliError(f"download from {url} failed: {exc}") from None
    finally:
        if tmp:
            tmp.unlink(missing_ok=True)  # moved to out_path below when it succeeded
    if size is not None and received != size:
        raise CliError(
            f"download incomplete: got {received} of {size} bytes (a chunk could not be retrieved)"
        )
    return 0


def _download(url: str, tmp: Path | None, *, quiet: bool) -> tuple[int, int | None]:
    """Stream `url` into `tmp` (renamed to its final name when complete) or standard output;
    returns (bytes received, bytes announced)."""
    with httpx.stream("GET", url, timeout=None, follow_redirects=True) as response:
        if response.status_code != 200:
            response.read()
            raise CliError(f"download failed with {response.status_code}: {response_message(response)}")
        length = response.headers.get("content-length")
        size = int(length) if length is not None else None
        progress = Progress(size, enabled=sys.stderr.isatty() and tmp is not None and not quiet)
        received = 0
        try:
            sink = tmp.open("wb") if tmp else sys.stdout.buffer
        except OSError as exc:
            raise CliError(f"cannot write {tmp}: {exc.strerror or exc}") from None
        try:
            for piece in response.iter_bytes():
                sink.write(piece)
                received += len(piece)
                progress.advance(len(piece))
            sink.flush()
        except httpx.RemoteProtocolError:
            raise CliError(
                f"download incomplete: the node closed the connection after {received} of {size} bytes; "
                "it could not retrieve a chunk (its log names it)"
                + (f", so nothing was written to {tmp.with_suffix('')}" if tmp else "")
            ) from None
        except OSError as exc:
            if isinstance(exc, BrokenPipeError) or tmp is None:
                raise
            raise CliError(f"cannot write {tmp}: {exc.strerror or exc}") from None
        finally:
            progress.done()
            if tmp:
                sink.close()
    if tmp is not None and (size is None or received == size):
        tmp.replace(tmp.with_name(tmp.name.removesuffix(".part")))
    return received, size


class Progress:
    """A progress bar on stderr (rich), shown only when stderr is a terminal."""

    def __init__(self, total: int | None, *, enabled: bool) -> None:
        self._bar: Any = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        columns = [
            BarColumn(),
            DownloadColumn(binary_units=True),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
        ]
        self._bar = Progress(*columns, console=Console(stderr=True))
        self._task = self._bar.add_task("", total=total)  # total None (standard input): no bar length
        self._bar.start()

    @property
    def enabled(self) -> bool:
        return self._bar is not None

    def advance(self, amount: int) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, amount)

    def done(self) -> None:
        if self._bar is not None:
            self._bar.stop()
