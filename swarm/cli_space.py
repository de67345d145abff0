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
import time
from pathlib import Path
from typing import Any

from swarm.cli_common import CliError, add_target_options, print_json, target_api

__all__ = ["add_space_node_options", "add_space_parser", "space_config"]


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
    from localstore.keyfile import KeyFileError
    from swarm.spaces.client import load_space_file

    path = Path(text)
    if not path.exists():
        raise CliError(f"{text} is neither a space id (40 hex characters) nor a space file")
    try:
        return load_space_file(path)
    except (OSError, KeyFileError) as exc:
        raise CliError(f"cannot use space file {text}: {exc}") from None


def _key(path: Path, *, create: bool = False) -> Any:
    from localstore.ethkey import Secp256k1Key, checksum_address, load_key_file, save_key_file
    from localstore.keyfile import KeyFileError

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


def _short(owner_hex: str) -> str:
    return owner_hex[:8]


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) if ms else "-"


# -- members --------------------------------------------------------------------------------------


def cmd_new(args: argparse.Namespace) -> int:
    from localstore.ethkey import checksum_address
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
        from swarm.tables import table

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
                print(json_line(entry) if args.json else _log_line(entry), flush=True)
            start = page["next"]
            if not args.follow and not page["entries"]:
                return 0

    try:
        return _run(args, run)
    except BrokenPipeError:  # the reader went away (| head): not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def json_line(entry: dict[str, Any]) -> str:
    import json

    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _log_line(entry: dict[str, Any]) -> str:
    timeframe = ",".join("-" if s < 0 else str(s) for s in entry["timeframe"])
    if entry["kind"] == "say":
        what = entry.get("text", "?")
    elif entry["kind"] == "set":
        what = (
            f"set {entry.get('key')} = {entry.get('value')}"
            if entry.get("value")
            else f"clear {entry.get('key')}"
        )
    else:
        what = "(heartbeat)"
    late = " (late)" if entry.get("late") else ""
    return (
        f"{entry['position']:>6}  {entry['member']}:{entry['seq']:<6} [{timeframe}]  "
        f"{_when(entry['written_at'])}  {_short(entry['owner'])}: {what}{late}"
    )


def cmd_state(args: argparse.Namespace) -> int:
    import json

    space = _space_id(args.space)

    def run(client: Any) -> int:
        data = client.state(space)
        if args.json:
            sys.stdout.buffer.write(data + b"\n")
            sys.stdout.flush()
            return 0
        from swarm.tables import table

        doc = json.loads(data)
        if not doc:
            print("(empty)")
            return 0
        rows = [[k, v["value"], _short(v["writer"]), v["seq"]] for k, v in doc.items()]
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


def print_status(doc: dict[str, Any]) -> None:
    from swarm.tables import table

    def ago(since: float) -> str:
        return f"{time.strftime('%H:%M:%S', time.localtime(since))} ({doc['now'] - since:.0f} s ago)"

    rows = []
    for m in doc["members"]:
        state = m["state"]
        if "waiting_for" in m:
            w = m["waiting_for"]
            state = f"waits for {w['member']}:{w['seq']} since {ago(w['since'])}"
        if "invalid" in m:
            state = f"INVALID from {m['invalid']['from']}: {m['invalid']['reason']}"
        rows.append(
            [
                m["member"],
                _short(m["owner"]),
                "-" if m["last_processed"] is None else m["last_processed"],
                m["held"],
                "yes" if m["active"] else "NO",
                state,
            ]
        )
    print(
        f"space {doc['space']} {doc['name']!r}: {doc['processed']} processed, {doc['ordered']} in total order"
    )
    print(table(["member", "owner", "last processed", "held", "active", "state"], rows))
    for missing in doc["missing"]:
        what = f"message {missing['seq']} of member {missing['member']} ({_short(missing['owner'] or '?')})"
        if missing["seq"] is None:
            what = f"member {missing['member']} (the member list update naming it)"
        by = ", ".join(f"{m}:{s}" for m, s in missing["needed_by"])
        print(f"STALLED: waiting for {what} since {ago(missing['since'])}, needed by {by}")
    if not doc["missing"]:
        print("not stalled")
    if doc["holding_back_order"]:
        names = ", ".join(str(m["member"]) for m in doc["holding_back_order"])
        pending = doc["pending_order"]
        print(f"total order waits for members {names} ({pending} processed messages not ordered yet)")


# -- parser --------------------------------------------------------------------------------------


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 10**9:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def add_space_node_options(p: argparse.ArgumentParser) -> None:
    """`swarm node`'s options for the spaces it follows."""
    from swarm.spaces.total import DEFAULT_INACTIVE_AFTER

    p.add_argument(
        "--space-inactive-after",
        type=_seconds,
        default=DEFAULT_INACTIVE_AFTER,
        metavar="SECONDS",
        help="a space member silent this long no longer holds the total order back "
        f"(default {DEFAULT_INACTIVE_AFTER:g})",
    )


def space_config(args: argparse.Namespace) -> Any:
    """The node's `SpaceConfig` from `add_space_node_options`' options."""
    from swarm.spaces.config import SpaceConfig

    return SpaceConfig(inactive_after=args.space_inactive_after)


def add_space_parser(sub: Any) -> None:
    space = sub.add_parser(
        "space",
        help="multi-writer spaces: many writers' feeds in one causally consistent order",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = space.add_subparsers(dest="space_command", metavar="COMMAND", required=True)

    def command(name: str, help: str, func: Any, *, key: bool = False) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = commands.add_parser(name, help=help)
        if name != "new":
            p.add_argument("space", metavar="SPACEFILE" if name == "join" else "SPACE")
        if key:
            p.add_argument("--key", type=Path, required=True, metavar="FILE", help="your secp256k1 key file")
        add_target_options(p)
        p.set_defaults(func=func)
        return p

    p = command("new", "make a space, you its first member; writes its space file", cmd_new, key=True)
    p.add_argument("name", metavar="NAME")
    p.add_argument("--out", type=Path, help="the space file to write (default ./NAME.space)")
    command("join", "become a member (with the space file)", cmd_join, key=True)
    command("members", "the members, in admission order", cmd_members).add_argument(
        "--json", action="store_true"
    )
    command("say", "write a message", cmd_say, key=True).add_argument("message", nargs="+", metavar="MESSAGE")
    p = command("set", "set a key of the shared map (an empty VALUE clears it)", cmd_set, key=True)
    p.add_argument("name", metavar="KEY")
    p.add_argument("value", metavar="VALUE")
    command("heartbeat", "say nothing, to let total order pass you", cmd_heartbeat, key=True)
    p = command("log", "every message in the processing order", cmd_log)
    p.add_argument(
        "--mode", choices=("causal", "total"), default="causal", help="processing order (default causal)"
    )
    p.add_argument("--follow", action="store_true", help="keep printing new messages (Ctrl-C stops)")
    p.add_argument("--heartbeats", action="store_true", help="show heartbeats too")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    command("state", "the shared map", cmd_state).add_argument("--json", action="store_true")
    command("status", "per member: processed, waiting for what since when", cmd_status).add_argument(
        "--json", action="store_true"
    )
