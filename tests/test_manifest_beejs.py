"""Our mantaray manifests against bee-js's own `MantarayNode`, run under Node.js.

For the same entries both build the same nodes (byte for byte) and so the same reference; bee-js
reads every manifest we write (paths, references, metadata, the index and error documents),
including obfuscated ones, and we read every manifest bee-js writes. The trees are drawn at
random (seeded) to stress long paths (past the 30-byte prefix limit), shared prefixes, slashes and
non-ASCII names. bee-js is installed as tests/test_beejs_vectors.py does it (or the test skips).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

import pytest
import trio

from swarm.manifest.reader import ManifestReader
from swarm.manifest.trie import NO_REFERENCE, Entry, save
from tests.test_beejs_vectors import JS_DIR, bee_js_modules

ALPHABET = ["a", "b", "/", "é", "x" * 29, "index.html", "img/", "-", "日本"]


def random_tree(rng: random.Random) -> dict[bytes, Entry]:
    entries: dict[bytes, Entry] = {}
    for _ in range(rng.randint(1, 12)):
        path = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 6))).encode()
        metadata = None
        if rng.random() < 0.6:
            metadata = {
                "Content-Type": rng.choice(["text/html; charset=utf-8", "image/png"]),
                "Filename": "f",
            }
            metadata["Filename"] = path.decode().rsplit("/", 1)[-1] or "f" * rng.randint(1, 40)
        entries[path] = Entry(rng.randbytes(32), metadata)
    if rng.random() < 0.5:
        entries[b"/"] = Entry(NO_REFERENCE, {"website-index-document": "index.html"})
    return entries


TREES = [random_tree(random.Random(seed)) for seed in range(40)] + [
    {
        b"index.html": Entry(
            b"\x11" * 32, {"Content-Type": "text/html; charset=utf-8", "Filename": "index.html"}
        )
    },
    # metadata whose JSON and size fill exactly two words: bee-js adds no padding there
    {b"a": Entry(b"\x22" * 32, {"k": "v" * 54})},
]


def as_input(entries: dict[bytes, Entry]) -> list[list[object]]:
    return [[path.hex(), entry.reference.hex(), entry.metadata] for path, entry in sorted(entries.items())]


@pytest.fixture(scope="module")
def bee_js(tmp_path_factory: pytest.TempPathFactory) -> dict:
    modules = bee_js_modules()
    ours = [save(tree) for tree in TREES] + [save(TREES[0], obfuscation_key=bytes(range(32)))]
    request = {
        "trees": [as_input(tree) for tree in TREES],
        "ours": [
            {"root": s.reference.hex(), "nodes": {ref.hex(): data.hex() for ref, data in s.nodes.items()}}
            for s in ours
        ],
    }
    path = tmp_path_factory.mktemp("mantaray") / "input.json"
    path.write_text(json.dumps(request))
    done = subprocess.run(
        ["node", str(JS_DIR / "mantaray.cjs"), str(path)],
        env={**os.environ, "NODE_PATH": str(modules)},
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    result: dict = json.loads(done.stdout)
    return result


def test_the_same_entries_give_the_same_nodes_and_reference(bee_js: dict) -> None:
    for tree, theirs in zip(TREES, bee_js["built"], strict=True):
        ours = save(tree)
        assert theirs["reference"] == ours.reference.hex(), sorted(tree)
        assert theirs["nodes"] == {ref.hex(): data.hex() for ref, data in ours.nodes.items()}


def test_bee_js_reads_our_manifests(bee_js: dict) -> None:
    for tree, theirs in zip([*TREES, TREES[0]], bee_js["read"], strict=True):
        expected = {path.hex(): [e.reference.hex(), e.metadata] for path, e in tree.items()}
        assert theirs["paths"] == expected
        root = tree.get(b"/")
        index = (root.metadata or {}).get("website-index-document") if root else None
        assert theirs["docs"]["indexDocument"] == index


async def test_we_read_bee_js_manifests(bee_js: dict) -> None:
    for tree, theirs in zip(TREES, bee_js["built"], strict=True):
        nodes = {bytes.fromhex(ref): bytes.fromhex(data) for ref, data in theirs["nodes"].items()}

        async def read(reference: bytes, nodes: dict[bytes, bytes] = nodes) -> bytes:
            return nodes[reference]

        with trio.fail_after(10):
            reader = ManifestReader(read, bytes.fromhex(theirs["reference"]))
            assert await reader.entries() == tree
            for path, entry in tree.items():
                if entry.reference != NO_REFERENCE:
                    assert await reader.entry(path) == entry


def test_the_fixture_tree_shapes_are_not_trivial() -> None:
    """The random trees do reach past one 30-byte prefix and share prefixes."""
    assert any(len(path) > 60 for tree in TREES for path in tree)
    assert any(a != b and b.startswith(a) for tree in TREES for a in tree for b in tree)
    assert Path(JS_DIR / "mantaray.cjs").exists()
