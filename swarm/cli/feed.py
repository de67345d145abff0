"""`swarm feed`: keys, updates and reads of sequence feeds, through a node's Bee-shaped API.

A feed is (owner, topic): the owner is the Ethereum address of a secp256k1 key, the topic 32
bytes (text is hashed as bee-js does; 64 hex characters are taken as they are). Update `i` is a
single-owner chunk at a deterministic address, so any node can find the latest one.

- ``swarm feed key new [--out FILE]``: a new key file (owner-only), prints the owner address;
- ``swarm feed update --key KEYFILE TOPIC (FILE | --ref REF)``: uploads the file (or takes a
  reference) and writes the next update, pointing at it (Bee's v1 update, as bee-js writes);
  ``--topic TOPIC`` is still taken in place of the first argument;
- ``swarm feed get OWNER TOPIC [--index N] [-o FILE]``: the content of the latest update (or of
  update N);
- ``swarm feed history OWNER TOPIC [--json]``: every update, with its index, time and reference;
- ``swarm feed follow OWNER TOPIC`` and ``swarm feed publish TOPIC MESSAGE``: live, pushed to
  followers as they are written (`swarm.cli.live`, docs/live.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from swarm.cli.common import (
    CliError,
    add_target_options,
    feed_update_line,
    hex_of_size,
    print_json,
    response_message,
    target_api,
)

__all__ = ["add_feed_parser"]

DEFAULT_KEY_FILE = "feed.key"


def _client() -> Any:
    import httpx

    return httpx.Client(timeout=60.0)


def _owner(text: str) -> bytes:
    owner = hex_of_size(text, 20)
    if owner is None:
        raise argparse.ArgumentTypeError(f"an owner is 40 hex characters (an Ethereum address), got {text!r}")
    return owner


def _topic(text: str) -> bytes:
    from chunks.feeds import topic_from_text

    return topic_from_text(text)


def _reference(text: str) -> bytes:
    reference = hex_of_size(text, 32)
    if reference is None:
        raise argparse.ArgumentTypeError(f"a reference is 64 hex characters, got {text!r}")
    return reference


def _load_key(path: Path) -> Any:
    from chunks.ethkey import load_key_file
    from chunks.keyfile import KeyFileError

    try:
        return load_key_file(path)
    except (OSError, KeyFileError) as exc:
        raise CliError(f"cannot use key file {path}: {exc}") from None


def _call(client: Any, method: str, url: str, **kwargs: Any) -> Any:
    import httpx

    try:
        return client.request(method, url, **kwargs)
    except httpx.HTTPError as exc:
        raise CliError(f"cannot reach the node API at {url}: {exc} (is the node running?)") from None


# -- commands --------------------------------------------------------------------------------


def cmd_key_new(args: argparse.Namespace) -> int:
    from chunks.ethkey import Secp256k1Key, checksum_address, save_key_file

    key = Secp256k1Key.generate()
    try:
        save_key_file(key, args.out)
    except FileExistsError:
        raise CliError(f"{args.out} exists; give another --out (a key file is never overwritten)") from None
    except OSError as exc:
        raise CliError(f"cannot write {args.out}: {exc.strerror}") from None
    print(checksum_address(key.owner))
    return 0


def _latest(client: Any, api: str, owner: bytes, topic: bytes) -> tuple[int | None, int]:
    """(latest index or None, next index) of a feed, from the node's feed lookup."""
    url = f"{api}/feeds/{owner.hex()}/{topic.hex()}"
    response = _call(client, "GET", url, params={"swarm-only-root-chunk": "true"})
    if response.status_code == 404:
        return None, 0
    if response.status_code != 200:
        raise CliError(f"feed lookup failed ({response.status_code}): {response_message(response)}")
    return int(response.headers["swarm-feed-index"], 16), int(response.headers["swarm-feed-index-next"], 16)


def update_target(args: argparse.Namespace) -> tuple[bytes, str | None]:
    """The topic and the file of ``swarm feed update``: ``TOPIC [FILE]``, or ``--topic TOPIC
    [FILE]`` as earlier versions took it; exactly one of a FILE and ``--ref``."""
    given = [word for word in (args.topic, args.file) if word is not None]
    if args.topic_option is not None:
        topic, rest = args.topic_option, given
    elif given:
        topic, rest = given[0], given[1:]
    else:
        raise CliError("swarm feed update: give the feed's TOPIC (text, or 64 hex characters)")
    if len(rest) > 1:
        raise CliError(f"swarm feed update: the TOPIC is given twice ({args.topic_option!r} and {rest[0]!r})")
    file = rest[0] if rest else None
    if (file is None) == (args.ref is None):
        raise CliError("swarm feed update: give a FILE to upload or --ref REF (one of them)")
    return _topic(topic), file


def cmd_update(args: argparse.Namespace) -> int:
    from chunks.feeds import make_update_v1

    topic, file = update_target(args)
    key = _load_key(args.key)
    api = target_api(args)
    with _client() as client:
        reference = args.ref
        if reference is None:
            try:
                body = Path(str(file)).read_bytes()
            except OSError as exc:
                raise CliError(f"cannot read {file}: {exc.strerror}") from None
            response = _call(client, "POST", f"{api}/bytes", content=body)
            if response.status_code != 201:
                raise CliError(f"upload failed ({response.status_code}): {response_message(response)}")
            reference = bytes.fromhex(response.json()["reference"])
        _, index = _latest(client, api, key.owner, topic) if args.index is None else (None, args.index)
        soc = make_update_v1(key, topic, index, reference, int(time.time()))
        url = f"{api}/soc/{key.owner.hex()}/{soc.id.hex()}"
        response = _call(client, "POST", url, params={"sig": soc.signature.hex()}, content=soc.wrapped)
        if response.status_code != 201:
            raise CliError(f"update {index} refused ({response.status_code}): {response_message(response)}")
    print(
        feed_update_line(
            index, key.owner.hex(), topic.hex(), soc.address.hex(), f"points to {reference.hex()}"
        )
    )
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    api = target_api(args)
    params = {} if args.index is None else {"index": str(args.index)}
    with _client() as client:
        response = _call(client, "GET", f"{api}/feeds/{args.owner.hex()}/{args.topic.hex()}", params=params)
    if response.status_code == 404:
        raise CliError(f"feed {args.owner.hex()}/{args.topic.hex()} has no update{_at(args.index)}")
    if response.status_code != 200:
        raise CliError(f"feed lookup failed ({response.status_code}): {response_message(response)}")
    if args.output in (None, "-"):
        sys.stdout.buffer.write(response.content)
        sys.stdout.flush()
    else:
        try:
            Path(args.output).write_bytes(response.content)
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror}") from None
        index = int(response.headers["swarm-feed-index"], 16)
        print(f"update {index}: {len(response.content)} bytes written to {args.output}", file=sys.stderr)
    return 0


def _at(index: int | None) -> str:
    return "" if index is None else f" at index {index}"


def cmd_history(args: argparse.Namespace) -> int:
    from chunks.feeds import parse_update, update_address
    from chunks.soc import InvalidSoc

    api = target_api(args)
    rows: list[dict[str, Any]] = []
    with _client() as client:
        latest, _ = _latest(client, api, args.owner, args.topic)
        for index in range(0 if latest is None else latest + 1):
            address = update_address(args.owner, args.topic, index)
            response = _call(client, "GET", f"{api}/chunks/{address.hex()}")
            row: dict[str, Any] = {"index": index, "address": address.hex()}
            if response.status_code != 200:
                row["missing"] = response_message(response)
            else:
                try:
                    update = parse_update(args.owner, args.topic, index, response.content)
                except InvalidSoc as exc:
                    row["invalid"] = str(exc)
                else:
                    fields = update.v1_fields
                    if fields is not None:
                        row["time"], row["reference"] = fields[0], fields[1].hex()
                    else:
                        row["payload_bytes"] = len(update.soc.payload)
            rows.append(row)
    if args.json:
        print_json(rows)
    else:
        _print_history(rows)
    return 0


def _print_history(rows: list[dict[str, Any]]) -> None:
    from swarm.render import table

    if not rows:
        print("no updates")
        return
    lines = []
    for row in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(row["time"])) if "time" in row else ""
        inline = f"{row['payload_bytes']} bytes inline" if "payload_bytes" in row else None
        what = row.get("reference") or inline or row.get("missing") or row.get("invalid")
        lines.append([row["index"], when, what])
    print(table(["index", "time (UTC)", "reference or content"], lines))


# -- parser --------------------------------------------------------------------------------------


def _feed_manifest(args: argparse.Namespace) -> int:
    from swarm.cli.bzz import cmd_feed_manifest

    return cmd_feed_manifest(args)


def add_feed_parser(sub: Any) -> None:
    feed = sub.add_parser(
        "feed",
        help="sequence feeds: mutable content under (owner, topic), compatible with Bee and bee-js",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = feed.add_subparsers(dest="feed_command", metavar="COMMAND", required=True)

    key = commands.add_parser("key", help="feed keys").add_subparsers(dest="key_command", required=True)
    new = key.add_parser("new", help="make a new secp256k1 key file and print its owner address")
    new.add_argument(
        "--out", type=Path, default=Path(DEFAULT_KEY_FILE), help=f"where (default ./{DEFAULT_KEY_FILE})"
    )
    new.set_defaults(func=cmd_key_new)

    update = commands.add_parser("update", help="write the next update of your feed")
    update.add_argument("--key", type=Path, required=True, help="your key file (swarm feed key new)")
    update.add_argument("topic", nargs="?", metavar="TOPIC", help="text, or 64 hex characters")
    update.add_argument("file", nargs="?", metavar="FILE", help="a file to upload and point the update at")
    update.add_argument("--ref", type=_reference, help="point the update at this reference instead of a FILE")
    update.add_argument(
        "--topic", dest="topic_option", metavar="TOPIC", help="the TOPIC, as an option (the older spelling)"
    )
    update.add_argument("--index", type=int, help="write this index (default: the one after the latest)")
    add_target_options(update)
    update.set_defaults(func=cmd_update)

    get = commands.add_parser("get", help="the content of a feed's latest update (or of --index N)")
    get.add_argument("owner", type=_owner)
    get.add_argument("topic", type=_topic)
    get.add_argument("--index", type=int)
    get.add_argument("-o", "--output", metavar="FILE", help="write here (default, or -: standard output)")
    add_target_options(get)
    get.set_defaults(func=cmd_get)

    history = commands.add_parser("history", help="every update of a feed: index, time, reference")
    history.add_argument("owner", type=_owner)
    history.add_argument("topic", type=_topic)
    history.add_argument("--json", action="store_true")
    add_target_options(history)
    history.set_defaults(func=cmd_history)

    manifest = commands.add_parser(
        "manifest",
        help="make a feed manifest: a reference whose /bzz/REF/ serves the feed's latest update",
        description="Store a manifest naming the feed (OWNER, TOPIC), as Bee's POST /feeds and bee-js's "
        "createFeedManifest do, and print its reference. /bzz/REFERENCE/ then serves the content of "
        "the feed's latest update (a website: point the updates at `swarm upload DIR` references).",
    )
    manifest.add_argument("owner", type=_owner)
    manifest.add_argument("topic", type=_topic, help="text, or 64 hex characters")
    add_target_options(manifest)
    manifest.set_defaults(func=_feed_manifest)

    from swarm.cli.live_args import add_feed_live_commands  # follow, publish (live propagation)

    add_feed_live_commands(commands)
