"""`swarm prove` and `swarm verify-proof`: inclusion proofs of chunks in a node's bin logs.

`swarm prove ADDRESS` asks a node (`GET /proofs/{address}`) for the proof that the chunk is an
entry of its log, with the receipts of the downstreams that took it over, and prints a summary
or (`--json`, `--output FILE`) the document itself; `swarm verify-proof FILE` checks such a
document offline, on any machine: exit status 0 if every part holds, 1 naming the first that
does not (swarm/proofs/document.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from swarm.cli.common import CliError, add_target_options, api_get, print_json, target_api

__all__ = ["add_proof_parsers"]


def cmd_prove(args: argparse.Namespace) -> int:
    address = args.address.removeprefix("0x").lower()
    if len(address) != 64 or any(c not in "0123456789abcdef" for c in address):
        raise CliError(f"a chunk address is 64 hex characters, got {args.address!r}")
    doc = api_get(target_api(args), f"/proofs/{address}")
    if args.output:
        Path(args.output).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    if args.json:
        print_json(doc)
    elif not args.output:
        print(summary(doc, held=_holds(target_api(args), address)))
    return 0


def _holds(url: str, address: str) -> bool:
    import httpx

    try:
        return httpx.head(f"{url.rstrip('/')}/chunks/{address}", timeout=10.0).status_code == 200
    except httpx.HTTPError:
        return True  # it answered the proof a moment ago; say nothing about the data


def summary(doc: dict[str, Any], *, held: bool = True) -> str:
    chunk, state, node = doc["chunk"], doc["state"], doc["node"]
    lines = [
        f"chunk {chunk['address']}",
        f"  entry {chunk['bin_id']} of bin {chunk['bin']} of node {node['overlay']}"
        + ("" if held else "  (the node no longer holds its data)"),
        f"  signed state: epoch {state['epoch']}, size {state['size']}, root {state['root']}",
        f"  audit path: {len(doc['path'])} hashes",
    ]
    for r in doc["receipts"]:
        lines.append(f"  receipt: {r['downstream']['overlay'][:16]} took over [{r['start']}, {r['end']}]")
    if not doc["receipts"]:
        lines.append("  no receipt covers it")
    lines.append(
        "save it with --output FILE (or --json) and check it anywhere with `swarm verify-proof FILE`"
    )
    return "\n".join(lines)


def cmd_verify_proof(args: argparse.Namespace) -> int:
    from swarm.proofs.document import InvalidProofDocument, parse_proof, verify_proof

    try:
        doc = json.loads(Path(args.file).read_text())
    except OSError as exc:
        raise CliError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CliError(f"{args.file} is not JSON: {exc}") from None
    except RecursionError:
        raise CliError(f"{args.file} is nested too deeply to be a proof document") from None
    try:
        held = verify_proof(parse_proof(doc))
    except InvalidProofDocument as exc:
        print(f"invalid: {exc}", file=sys.stderr)
        return 1
    print("valid:")
    for line in held:
        print(f"  {line}")
    return 0


def add_proof_parsers(sub: Any) -> None:
    """Register `prove` and `verify-proof` with the `swarm` parser's subcommands."""
    p = sub.add_parser(
        "prove",
        help="the inclusion proof of a chunk in a node's bin log, and the receipts that cover it",
        description="Ask a node for the proof that ADDRESS is an entry of its bin log: its signed state "
        "of the bin, the entry's audit path to it, and the receipts of downstreams that took the entry "
        "over. Check the proof anywhere with `swarm verify-proof`.",
    )
    p.add_argument("address", metavar="ADDRESS", help="the chunk's address (64 hex characters)")
    add_target_options(p)
    p.add_argument("--json", action="store_true", help="print the proof document (JSON)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the proof document to FILE")
    p.set_defaults(func=cmd_prove)

    p = sub.add_parser(
        "verify-proof",
        help="check an inclusion proof from `swarm prove` offline",
        description="Check every signature and hash of a proof document: exit status 0 if it holds, "
        "1 (naming the first part that does not) if not.",
    )
    p.add_argument("file", metavar="FILE")
    p.set_defaults(func=cmd_verify_proof)
