"""The README's promises about itself: its commands exist and explain themselves; no file carries
merge-conflict markers.

Every `swarm ...` command in the README's shell blocks must answer `--help` with status 0, and
every `python -m benches.NAME` must name a bench module that exists. A README that names a
command the code lacks, or a merge that left its markers behind, fails here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MARKERS = re.compile(r"^(<{7}( .*)?|={7}|>{7}( .*)?)$", re.MULTILINE)


def _shell_lines() -> list[str]:
    lines: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", README.read_text(), flags=re.DOTALL):
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                lines.append(line)
    return lines


def _swarm_commands() -> list[tuple[str, ...]]:
    """The distinct `swarm` subcommand paths the README runs (`swarm pin ls` -> ("pin", "ls"))."""
    found: set[tuple[str, ...]] = set()
    for line in _shell_lines():
        for part in line.split("|"):
            words = part.split()
            if not words or words[0] != "swarm":
                continue
            path = []
            for word in words[1:3]:
                if not re.fullmatch(r"[a-z][a-z-]*", word):
                    break
                path.append(word)
            found.add(tuple(path))
    return sorted(found)


def _tracked_text_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    suffixes = {".py", ".md", ".toml", ".html", ".cjs", ".json", ".txt", ".cfg", ""}
    return [ROOT / name for name in out.stdout.splitlines() if Path(name).suffix in suffixes]


def test_no_file_carries_merge_conflict_markers():
    bad = []
    for path in _tracked_text_files():
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        for match in MARKERS.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            bad.append(f"{path.relative_to(ROOT)}:{line}: {match.group(0)[:20]}")
    assert not bad, "merge-conflict markers:\n" + "\n".join(bad)


def test_readme_names_swarm_commands():
    commands = _swarm_commands()
    assert ("up",) in commands and ("upload",) in commands and ("sync-status",) in commands


def _help(path: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "swarm", *path, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )


@pytest.mark.parametrize("path", _swarm_commands(), ids=lambda p: " ".join(p) or "swarm")
def test_every_readme_swarm_command_answers_help(path):
    # a path may run past the command into a lowercase argument (`swarm feed publish news`):
    # argparse still answers --help for the command, and refuses a subcommand it does not know
    result = _help(path)
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout
    if path:
        assert path[0] in result.stdout, f"`swarm {path[0]} --help` does not name the command"


def test_every_readme_bench_exists():
    benches = sorted({m for line in _shell_lines() for m in re.findall(r"python -m (benches\.\w+)", line)})
    assert len(benches) >= 10
    missing = [name for name in benches if not (ROOT / (name.replace(".", "/") + ".py")).is_file()]
    assert not missing, f"README names benches that do not exist: {missing}"
