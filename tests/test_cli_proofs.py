"""`swarm prove` on one node, `swarm verify-proof` elsewhere; any changed byte makes it fail.

Two `swarm node` processes: the upstream holds chunks, the downstream pulls and verifies them and
sends receipts. `swarm prove` asks the upstream for a chunk's inclusion proof (its signed state,
the audit path, the downstream's receipt), `swarm verify-proof` checks the saved document from
another directory, and every field of the document, changed, makes the check fail.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from chunks.merkle import leaf_hash
from streamer.identity import NodeIdentity
from streamer.states import StateSigner
from swarm.cli.main import main
from swarm.proofs.document import InclusionProof, InvalidProofDocument, parse_proof, proof_json, verify_proof
from swarm.testing import NodeProcess, node_config, poll, preload, random_chunks, start_node, wait_for

CHUNKS = random_chunks(300, seed=171)


def swarm(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "swarm", *args], capture_output=True, text=True, timeout=60, cwd=cwd
    )


def receipts_of(up: NodeProcess, downstream: str) -> dict[int, tuple[int, int]]:
    for peer in up.sync()["peers"]:
        if peer["overlay"] == downstream:
            return {r["bin"]: (r["start"], r["end"]) for r in peer["serving"]["receipts"]}
    return {}


@pytest.mark.process
def test_prove_on_one_node_verify_elsewhere_and_fail_on_any_change(tmp_path: Path) -> None:
    preload(tmp_path / "up", CHUNKS)
    with NodeProcess(tmp_path / "up") as up, NodeProcess(tmp_path / "down", peers=[up.p2p]) as down:
        poll(lambda: down.sync()["chunks"] == len(CHUNKS) and down.sync()["fully_synced"], timeout=60)
        bins = {b["bin"]: b["cursor"] for b in down.sync()["peers"][0]["bins"] if b["cursor"]}
        poll(lambda: receipts_of(up, down.overlay) == {b: (1, c) for b, c in bins.items()}, timeout=30)

        # `swarm sync-status` shows the downstream's latest verified state of each bin
        status = swarm("sync-status", "--api", down.api)
        assert status.returncode == 0, status.stderr
        states = [b["state"] for b in down.sync()["peers"][0]["bins"] if b["state"]]
        assert {s["size"] for s in states} == set(bins.values())
        for state in states:
            assert f"{state['size']} {state['root'][:12]} ok" in status.stdout

        address = CHUNKS[7].address.hex()
        proof = tmp_path / "proof.json"
        result = swarm("prove", address, "--api", up.api, "--output", str(proof))
        assert result.returncode == 0, result.stderr
        shown = swarm("prove", address, "--api", up.api)
        assert f"chunk {address}" in shown.stdout and "receipt:" in shown.stdout

        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "p.json").write_bytes(proof.read_bytes())
        checked = swarm("verify-proof", "p.json", cwd=elsewhere)
        assert checked.returncode == 0, checked.stderr
        assert checked.stdout.startswith("valid:") and down.overlay in checked.stdout

        doc = json.loads(proof.read_text())
        assert doc["chunk"]["address"] == address
        assert doc["node"]["overlay"] == up.overlay and doc["state"]["size"] == bins[doc["chunk"]["bin"]]
        [receipt] = doc["receipts"]
        assert receipt["downstream"]["overlay"] == down.overlay and receipt["start"] == 1

        # one changed hex digit of the signature, through the command line
        tampered = copy.deepcopy(doc)
        tampered["state"]["signature"] = flip_hex(tampered["state"]["signature"], 5)
        (elsewhere / "bad.json").write_text(json.dumps(tampered))
        refused = swarm("verify-proof", "bad.json", cwd=elsewhere)
        assert refused.returncode == 1 and refused.stderr.startswith("invalid: ")

        # every field, changed, fails the check (in process: the same code, faster)
        assert verify_proof(parse_proof(doc))
        for path in leaves(doc):
            for changed in variants(get(doc, path)):
                bad = copy.deepcopy(doc)
                put(bad, path, changed)
                with pytest.raises(InvalidProofDocument):
                    verify_proof(parse_proof(bad))

        missing = swarm("prove", "ab" * 32, "--api", up.api)
        assert missing.returncode == 2 and "no entry of bin" in missing.stderr


async def test_a_dropped_chunk_is_still_proven_as_a_hole(tmp_path: Path) -> None:
    """The seed's finger pointing: a node that lost (or deleted) a chunk's data can still prove
    that it was entry N of its log, and show the receipt of the downstream that took it over."""
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            up = await start_node(nursery, node_config(tmp_path / "up", api_port=None))
            up.store_chunks(CHUNKS[:50])
            down = await start_node(
                nursery, node_config(tmp_path / "down", api_port=None, peers=[("127.0.0.1", up.p2p_port)])
            )
            await wait_for(lambda: len(down.store) == 50 and down.puller.fully_synced())
            victim = CHUNKS[3].address
            bin = up.store.bin_of(victim)
            await wait_for(
                lambda: any(
                    k.receipt.bin == bin and k.receipt.end == up.store.cursor(bin)
                    for k in up.proofs.store.receipts()
                )
            )
            bin_id = up.store.bin_id_of(victim)
            assert bin_id is not None
            up.store._forget(victim, bin_id)  # what a damaged read does
            assert not up.store.has(victim)
            proof = await up.proofs.prove(victim)
            assert proof.bin_id == bin_id and len(proof.receipts) == 1
            told = verify_proof(proof)
            assert f"entry {bin_id} of bin {bin}" in told[0] and down.overlay.hex() in told[-1]
            nursery.cancel_scope.cancel()


# -- walking a JSON document ---------------------------------------------------------------------


def leaves(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(doc, dict):
        return [p for key, value in doc.items() for p in leaves(value, (*path, key))]
    if isinstance(doc, list):
        return [p for i, value in enumerate(doc) for p in leaves(value, (*path, i))]
    return [path]


def get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def put(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    get(doc, path[:-1])[path[-1]] = value


def flip_hex(text: str, at: int) -> str:
    return text[:at] + ("0" if text[at] != "0" else "1") + text[at + 1 :]


def variants(value: Any) -> list[Any]:
    """Changed versions of a field: a hex digit at the start, middle and end; a number +-1; a flag."""
    if isinstance(value, int):
        return [value + 1, value - 1] if value else [value + 1]
    if isinstance(value, str) and all(c in "0123456789abcdef" for c in value):
        return [flip_hex(value, i) for i in sorted({0, len(value) // 2, len(value) - 1})]
    return [value + "x"]


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ({}, 'it has no "format" field'),
        ({"format": "something else"}, "not a swarm-inclusion-proof/1 document (format 'something else')"),
        ([1, 2], "a JSON object was expected, not list"),
        ({"format": "swarm-inclusion-proof/1", "node": {}}, "the field 'chunk' is missing"),
    ],
)
def test_a_malformed_document_is_refused_naming_what_is_wrong(document: object, says: str) -> None:
    with pytest.raises(InvalidProofDocument) as refused:
        parse_proof(document)
    assert says in str(refused.value)
    assert "KeyError" not in str(refused.value)


def small_proof() -> dict[str, Any]:
    """A valid proof document of a one-entry log, made here (no node needed)."""
    node = NodeIdentity.from_private_bytes(bytes(range(32)))
    overlay = node.overlay(1)
    address = b"\xaa" * 32
    state = StateSigner(node, overlay).state(3, 5, 1, leaf_hash(1, address))
    return proof_json(InclusionProof(1, overlay, node.public_key, address, 1, state, (), ()))


def verify_file(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`swarm verify-proof FILE` in this process: exit status and stderr."""
    (tmp_path / "p.json").write_text(text)
    status = main(["verify-proof", str(tmp_path / "p.json")])
    return status, capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (("chunk", "bin_id", -1), "chunk.bin_id is -1, not 1..2^64-1"),
        (("chunk", "bin_id", 0), "chunk.bin_id is 0, not 1..2^64-1"),
        (("chunk", "bin_id", 2**64), f"chunk.bin_id is {2**64}, not 1..2^64-1"),
        (("chunk", "bin_id", 10**40), "not 1..2^64-1"),
        (("node", None, []), "node must be a JSON object, not list"),
        (("receipts", None, [5]), "a receipt must be a JSON object, not int"),
        (("path", None, ["zz"]), "path: 'zz' is not hex"),
        (("format", None, None), 'it has no "format" field'),
        (("node", "public_key", "ab"), "public_key: 1 bytes, not 32"),  # found by benches/fuzz.py
        (("node", "network_id", -1), "network_id: -1 is not in 0..2^64-1"),
    ],
)
def test_verify_proof_refuses_bad_fields_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str | None, Any], says: str
) -> None:
    """Issue 30 item 10: out-of-range bin IDs were an OverflowError traceback; a missing format
    a bare KeyError. Now: one line on stderr naming the field, exit status 1."""
    doc = small_proof()
    assert verify_proof(parse_proof(doc))
    outer, inner, value = change
    if value is None:
        del doc[outer]
    elif inner is None:
        doc[outer] = value
    else:
        doc[outer][inner] = value
    status, err = verify_file(tmp_path, json.dumps(doc), capsys)
    assert status == 1
    assert err.count("\n") == 1 and err.startswith("invalid: ") and says in err, err


@pytest.mark.parametrize(
    "text", ["[" * 100_000 + "]" * 100_000, '{"format": ' + "[" * 50_000 + "]" * 50_000 + "}"]
)
def test_verify_proof_refuses_deeply_nested_json_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    status, err = verify_file(tmp_path, text, capsys)
    assert status == 2
    assert err == f"swarm: error: {tmp_path / 'p.json'} is nested too deeply to be a proof document\n"
