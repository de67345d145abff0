"""`swarm space`: multi-writer spaces through a node's API (`swarm.spaces`).

A space is a set of member feeds, one per writer, read by every node in one causally
consistent order. SPACE is a space id (40 hex characters) or a space file (what `new` writes:
the space's name and key, which admits members; share it to invite).

- ``swarm space new NAME --key FILE [--out FILE]``: a new space, you its first member;
- ``swarm space join SPACEFILE --key FILE``: become a member;
- ``swarm space members SPACE``;
- ``swarm space say SPACE --key FILE MESSAGE...`` / ``set SPACE --key FILE KEY VALUE`` (an
  empty VALUE clears the key) / ``heartbeat SPACE --key FILE`` (lets total order pass you);
- ``swarm space log SPACE [--mode causal|total] [--follow] [--json]``: every message in the
  processing order, with its member, sequence number and timeframe;
- ``swarm space state SPACE [--json]``: the shared map (``--json``: byte-identical on two nodes
  that hold the same messages);
- ``swarm space status SPACE [--json]``: per member, what is processed, and what processing
  waits for, since when.

A --key file that does not exist is made for ``new`` and ``join`` (a secp256k1 key, owner-only,
as `swarm feed key new` makes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from swarm.cli.common import CliError, print_json, target_api
from swarm.cli.space_view import json_line, log_line, print_status, short_owner

__all__ = [
    "cmd_heartbeat",
    "cmd_join",
    "cmd_log",
    "cmd_members",
    "cmd_new",
    "cmd_say",
    "cmd_set",
    "cmd_state",
    "cmd_status",
]


def _space_id(text: str) -> bytes:
    """A space id from 40 hex characters, or from the space file at that path."""
    raw = text.removeprefix("0x")
    if len(raw) == 40:
        try:
            return bytes.fromhex(raw)
        except ValueError:
            pass
    return _space_file(text).space


def _space_file(text: str) -> Any:
    from chunks.keyfile import KeyFileError
    from swarm.spaces.client import load_space_file

    path = Path(text)
    if not path.exists():
        raise CliError(f"{text} is neither a space id (40 hex characters) nor a space file")
    try:
        return load_space_file(path)
    except (OSError, KeyFileError) as exc:
        raise CliError(f"cannot use space file {text}: {exc}") from None


def _key(path: Path, *, create: bool = False) -> Any:
    from chunks.ethkey import Secp256k1Key, checksum_address, load_key_file, save_key_file
    from chunks.keyfile import KeyFileError

    if create and not path.exists():
        key = Secp256k1Key.generate()
        try:
            save_key_file(key, path)
        except OSError as exc:
            raise CliError(f"cannot write key file {path}: {exc}") from None
        print(f"made a new key {path} (owner {checksum_address(key.owner)})", file=sys.stderr)
        return key
    try:
        return load_key_file(path)
    except (OSError, KeyFileError) as exc:
        raise CliError(f"cannot use key file {path}: {exc}") from None


def _client(args: argparse.Namespace) -> Any:
    from swarm.spaces.client import SpaceClient

    return SpaceClient(target_api(args))


def _run(args: argparse.Namespace, command: Any) -> int:
    """Run a command with a client, turning the client's errors into one line."""
    from swarm.spaces.client import SpaceApiError

    client = _client(args)
    try:
        return int(command(client))
    except SpaceApiError as exc:
        raise CliError(str(exc)) from None
    finally:
        client.close()


# -- members --------------------------------------------------------------------------------------


def cmd_new(args: argparse.Namespace) -> int:
    from chunks.ethkey import checksum_address
    from swarm.spaces.client import save_space_file

    out = args.out or Path(f"{args.name}.space")
    if out.exists():
        raise CliError(f"{out} exists; give another --out (a space file is never overwritten)")
    key = _key(args.key, create=True)

    def run(client: Any) -> int:
        space = client.create(args.name, key)
        try:
            save_space_file(out, space)
        except OSError as exc:
            raise CliError(f"cannot write {out}: {exc}; the space is {space.space.hex()}") from None
        print(f"space {space.space.hex()} {args.name!r}: member 0 is {checksum_address(key.owner)}")
        print(f"space file {out}: share it to invite members (it admits anyone who holds it)")
        return 0

    return _run(args, run)


def cmd_join(args: argparse.Namespace) -> int:
    space = _space_file(args.space)
    key = _key(args.key, create=True)

    def run(client: Any) -> int:
        member = client.join(space, key)
        print(f"member {member} of space {space.space.hex()} {space.name!r}")
        return 0

    return _run(args, run)


def cmd_members(args: argparse.Namespace) -> int:
    space = _space_id(args.space)

    def run(client: Any) -> int:
        summary = client.summary(space)
        if args.json:
            print_json(summary)
            return 0
        from swarm.render import table

        print(f"space {summary['space']} {summary['name']!r}")
        print(table(["member", "owner"], [[m["member"], m["owner"]] for m in summary["members"]]))
        return 0

    return _run(args, run)


# -- writing ------------------------------------------------------------------------------------


def _write(args: argparse.Namespace, kind_name: str, **body: str) -> int:
    from swarm.spaces.messages import InvalidSpaceMessage, Kind

    space = _space_id(args.space)
    key = _key(args.key)

    def run(client: Any) -> int:
        try:
            member, seq = client.write(space, key, Kind[kind_name], **body)
        except InvalidSpaceMessage as exc:
            raise CliError(str(exc)) from None
        print(f"member {member} message {seq}")
        return 0

    return _run(args, run)


def cmd_say(args: argparse.Namespace) -> int:
    return _write(args, "SAY", text=" ".join(args.message))


def cmd_set(args: argparse.Namespace) -> int:
    return _write(args, "SET", key=args.name, value=args.value)


def cmd_heartbeat(args: argparse.Namespace) -> int:
    return _write(args, "HEARTBEAT")


# -- reading --------------------------------------------------------------------------------------


def cmd_log(args: argparse.Namespace) -> int:
    space = _space_id(args.space)

    def run(client: Any) -> int:
        start = 0
        while True:
            page = client.log(space, mode=args.mode, start=start, wait=30 if args.follow else 0)
            for entry in page["entries"]:
                if entry["kind"] == "heartbeat" and not args.heartbeats:
                    continue
                print(json_line(entry) if args.json else log_line(entry), flush=True)
            start = page["next"]
            if not args.follow and not page["entries"]:
                return 0

    try:
        return _run(args, run)
    except BrokenPipeError:  # the reader went away (| head): not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def cmd_state(args: argparse.Namespace) -> int:
    import json

    space = _space_id(args.space)

    def run(client: Any) -> int:
        data = client.state(space)
        if args.json:
            sys.stdout.buffer.write(data + b"\n")
            sys.stdout.flush()
            return 0
        from swarm.render import table

        doc = json.loads(data)
        if not doc:
            print("(empty)")
            return 0
        rows = [[k, v["value"], short_owner(v["writer"]), v["seq"]] for k, v in doc.items()]
        print(table(["key", "value", "writer", "seq"], rows))
        return 0

    return _run(args, run)


def cmd_status(args: argparse.Namespace) -> int:
    space = _space_id(args.space)

    def run(client: Any) -> int:
        doc = client.status(space)
        if args.json:
            print_json(doc)
        else:
            print_status(doc)
        return 0

    return _run(args, run)
