"""The house rule of `swarm/` (docs/architecture.md): rooms, not a flat folder.

The layers between the rooms are an import-linter contract (pyproject.toml, run by CI); this
checks what a contract cannot: the root keeps only the node's wiring, and every room says what
it is for.
"""

from __future__ import annotations

import ast
from pathlib import Path

SWARM = Path(__file__).resolve().parent.parent / "swarm"
ROOT_AT_MOST = 12


def test_the_root_of_swarm_keeps_about_a_dozen_modules():
    root = sorted(p.name for p in SWARM.glob("*.py"))
    assert len(root) <= ROOT_AT_MOST, f"{len(root)} modules at the root of swarm/: {root}"


def test_every_room_says_what_it_is_for():
    rooms = [p for p in SWARM.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    assert {"api", "cli", "net", "reserve", "files", "feeds", "live", "spaces", "sim", "testing"} <= {
        p.name for p in rooms
    }
    for room in rooms:
        doc = ast.get_docstring(ast.parse((room / "__init__.py").read_text()))
        assert doc and len(doc) > 40, f"swarm/{room.name}/__init__.py has no docstring saying what it holds"


def _modules_after(statement: str) -> set[str]:
    import subprocess
    import sys

    code = f"import sys\n{statement}\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_the_chunk_model_and_a_verifier_worker_import_no_store():
    # the chunk model is its own package (issue 26): naming and checking chunks needs no LevelDB
    model = "import chunks, chunks.soc, chunks.feeds, chunks.merkle"
    for statement in (model, "import syncer.verify_worker"):
        loaded = _modules_after(statement)
        assert not loaded & {"plyvel", "trio", "localstore.store"}, (statement, loaded & {"plyvel", "trio"})
        assert "localstore" not in loaded, statement
