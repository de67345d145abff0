"""Files, directories and manifests from the command line: what `swarm upload` sends for a
directory (a tar collection) or a named file (`POST /bzz`), and `swarm manifest ls`.

A directory is streamed as a tar archive built on the fly (each file read in pieces, never the
whole directory in memory): its regular files under their paths relative to it, in sorted order,
symbolic links and other special files left out (as bee-js's `uploadFilesFromDirectory` leaves
them out). The node builds the manifest, so a directory uploaded here and one uploaded with bee-js
get the same reference.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from swarm.cli.common import CliError, hex_of_size, target_api

__all__ = ["add_manifest_parser", "cmd_feed_manifest", "cmd_manifest_ls", "directory_files", "upload_request"]

PIECE = 256 * 1024


def upload_request(args: argparse.Namespace) -> tuple[str, Iterator[bytes], int | None, dict[str, str]]:
    """(endpoint, body pieces, size or None, extra headers) of `swarm upload`."""
    if args.file != "-" and Path(args.file).is_dir():
        files = directory_files(Path(args.file))
        if not files:
            raise CliError(f"{args.file} holds no regular file to upload")
        headers = {"swarm-collection": "true", "content-type": "application/x-tar"}
        if args.index_document:
            headers["swarm-index-document"] = args.index_document
        if args.error_document:
            headers["swarm-error-document"] = args.error_document
        return "/bzz", tar_stream(files), sum(f.stat().st_size for _, f in files), headers
    if args.index_document or args.error_document:
        raise CliError("--index-document and --error-document are for a directory; FILE is a file")
    source, size = open_upload(args.file)
    if args.name is None:
        return "/bytes", file_pieces(source), size, {}
    headers = {"content-type": args.content_type} if args.content_type else {}
    return f"/bzz?name={quote(args.name)}", file_pieces(source), size, headers


def file_pieces(source: IO[bytes]) -> Iterator[bytes]:
    with source:
        while piece := source.read(256 * 1024):
            yield piece


def open_upload(name: str) -> tuple[IO[bytes], int | None]:
    """The file to upload and its size; `-` is standard input (size unknown)."""
    if name == "-":
        return sys.stdin.buffer, None
    path = Path(name)
    try:
        size = path.stat().st_size
        return path.open("rb"), size
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None


def directory_files(root: Path) -> list[tuple[str, Path]]:
    """(path in the collection, file) of every regular file under `root`, sorted by path."""
    found = []
    for directory, subdirectories, names in os.walk(root):
        subdirectories.sort()
        for name in names:
            path = Path(directory) / name
            if path.is_file() and not path.is_symlink():
                found.append((path.relative_to(root).as_posix(), path))
    return sorted(found)


def tar_stream(files: list[tuple[str, Path]]) -> Iterator[bytes]:
    """A tar archive (PAX: any path length) of `files`, produced piece by piece."""
    for name, path in files:
        try:
            source = path.open("rb")
            size = os.fstat(source.fileno()).st_size
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
        info = tarfile.TarInfo(name)
        info.size = size
        info.mode = 0o644
        yield info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
        sent = 0
        with source:
            while sent < size and (piece := source.read(min(PIECE, size - sent))):
                sent += len(piece)
                yield piece
        if sent != size:
            raise CliError(f"{path} changed while it was uploaded ({size} bytes, then {sent})")
        yield bytes(-size % tarfile.BLOCKSIZE)
    yield bytes(2 * tarfile.BLOCKSIZE)


# -- swarm manifest ls ---------------------------------------------------------------------------


def cmd_manifest_ls(args: argparse.Namespace) -> int:
    import trio

    from swarm.manifest.nodes import InvalidManifest

    reference = _reference(args.reference)
    url = target_api(args)
    try:
        entries = trio.run(_entries, url, reference)
    except InvalidManifest as exc:
        raise CliError(f"{reference.hex()} is not a manifest: {exc}") from None
    rows = [
        {"path": path.decode(errors="replace"), "reference": e.reference.hex(), "metadata": e.metadata or {}}
        for path, e in entries.items()
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        kind = row["metadata"].get("Content-Type", "")
        named = row["reference"] if any(int(c, 16) for c in row["reference"]) else "-" * 64
        extra = "" if kind or row["reference"] != "0" * 64 else json.dumps(row["metadata"])
        print(f"{named}  {kind or extra:<26}  {row['path']}")
    return 0


async def _entries(url: str, reference: bytes) -> Any:
    import httpx

    from swarm.manifest.reader import ManifestReader

    async with httpx.AsyncClient(base_url=url, timeout=60) as client:

        async def read(node: bytes) -> bytes:
            response = await client.get(f"/bytes/{node.hex()}")
            if response.status_code != 200:
                from swarm.cli.common import response_message

                raise CliError(
                    f"manifest node {node.hex()}: {response.status_code} {response_message(response)}"
                )
            return response.content

        try:
            return await ManifestReader(read, reference).entries()
        except httpx.HTTPError as exc:
            raise CliError(f"cannot read the manifest from {url}: {exc}") from None


def _reference(text: str) -> bytes:
    reference = hex_of_size(text, 32)
    if reference is None:
        raise CliError(f"a reference is 64 hex characters, got {text!r}")
    return reference


# -- swarm feed manifest -------------------------------------------------------------------------


def cmd_feed_manifest(args: argparse.Namespace) -> int:
    import httpx

    from swarm.cli.common import response_message

    url = target_api(args)
    try:
        response = httpx.post(f"{url}/feeds/{args.owner.hex()}/{args.topic.hex()}", timeout=None)
    except httpx.HTTPError as exc:
        raise CliError(f"cannot reach {url}: {exc}") from None
    if response.status_code != 201:
        raise CliError(f"feed manifest failed with {response.status_code}: {response_message(response)}")
    print(response.json()["reference"])
    return 0


def add_manifest_parser(sub: Any) -> None:
    from swarm.cli.common import add_target_options

    manifest = sub.add_parser(
        "manifest",
        help="manifests: the path -> reference tables of directories and websites",
        description="Read a manifest (what `swarm upload DIR`, `swarm upload FILE --name` and bee-js's "
        "uploadFile/uploadFilesFromDirectory make).",
    )
    commands = manifest.add_subparsers(dest="manifest_command", metavar="COMMAND", required=True)
    ls = commands.add_parser(
        "ls",
        help="every path of a manifest: reference, content type, path",
        description="List every path of the manifest REFERENCE with the reference it names and its "
        "content type; the root path / shows a website's index and error documents or a feed.",
    )
    ls.add_argument("reference", metavar="REFERENCE")
    ls.add_argument("--json", action="store_true", help="every entry with all its metadata, as JSON")
    add_target_options(ls)
    ls.set_defaults(func=cmd_manifest_ls)
