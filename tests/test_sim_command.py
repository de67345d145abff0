"""The `swarm sim` argparse wiring and its user-facing errors (no Spark started here)."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from swarm.cli.common import CliError
from swarm.cli.sim import add_sim_parser
from swarm.cli.sim_view import Progress
from swarm.sim.sparkstart import SparkUnavailable, find_java


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="swarm")
    add_sim_parser(p.add_subparsers(dest="command"))
    return p


def test_defaults_are_those_of_the_issue() -> None:
    args = parser().parse_args(["sim"])
    assert args.nodes == [1024, 4096, 16384]
    assert args.runs == 3
    assert args.strategies == ["first", "gap", "temperature", "hottest"]
    assert args.known is None  # discovery by gossip
    assert (args.churn, args.churn_rounds, args.turns, args.bootnodes, args.known_per_bin) == (
        0.0,
        10,
        4,
        4,
        16,
    )
    assert not args.wide
    assert args.saturation == 4
    assert args.lookups == 2000
    assert args.seed == 1
    assert args.master is None  # local[*] unless spark-submit gave one
    assert args.out == Path("sim-out")
    assert args.partitions == 0
    assert args.storage == "area"  # a settled swarm's full reserves; pull: a young swarm's
    assert callable(args.func)


def test_help_lists_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parser().parse_args(["sim", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for option in [
        "--nodes",
        "--runs",
        "--strategies",
        "--known",
        "--saturation",
        "--lookups",
        "--seed",
        "--master",
        "--out",
        "--partitions",
        "--neighbourhood-size",
        "--no-progress",
        "--churn",
        "--churn-rounds",
        "--turns",
        "--bootnodes",
        "--known-per-bin",
        "--wide",
        "--storage",
    ]:
        assert option in text
    assert "local[*]" in text
    # Defaults as a user would type them, not as Python lists.
    flat = " ".join(text.split())
    assert "(default: 1024,4096,16384)" in flat and "(default: first,gap,temperature,hottest)" in flat
    assert "[64" not in flat and "['first'" not in flat


@pytest.mark.parametrize(
    "argv",
    [
        ["--nodes", "64,x"],
        ["--nodes", "1"],
        ["--strategies", "first,coolest"],
        ["--churn", "1"],
        ["--churn", "-0.1"],
        ["--turns", "0"],
        ["--known", "0"],
        ["--known", "1.5"],
        ["--runs", "0"],
        ["--saturation", "-1"],
        ["--lookups", "many"],
        ["--storage", "everywhere"],
    ],
)
def test_bad_options_are_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parser().parse_args(["sim", *argv])
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_lists_are_parsed_and_deduplicated() -> None:
    args = parser().parse_args(["sim", "--nodes", "256,64,64", "--strategies", "gap,first,gap"])
    assert args.nodes == [64, 256]
    assert args.strategies == ["gap", "first"]


def test_missing_java_is_one_clear_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java anywhere
    with pytest.raises(SparkUnavailable, match="Java not found"):
        find_java()
    args = parser().parse_args(["sim", "--out", str(tmp_path / "out"), "--no-progress"])
    with pytest.raises(CliError, match=r"^Java not found: Spark needs Java 17\+") as exc:
        args.func(args)
    assert "\n" not in str(exc.value)


def test_bad_java_home_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(SparkUnavailable, match="JAVA_HOME"):
        find_java()


def test_old_java_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text("#!/bin/sh\necho 'openjdk version \"1.8.0_392\"' >&2\n")
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(SparkUnavailable, match="Java 8; Spark needs Java 17"):
        find_java()


def test_out_must_be_a_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    args = parser().parse_args(["sim", "--out", str(tmp_path / "file")])
    with pytest.raises(CliError, match="not a directory"):
        args.func(args)


def test_progress_on_a_pipe_prints_lines() -> None:
    stream = io.StringIO()
    progress = Progress(stream, every=0.0)
    progress(0, 4)
    progress(2, 4)
    progress(2, 4)  # unchanged: nothing
    progress(4, 4)
    lines = stream.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "sim: 0/4 networks",
        "sim: 2/4 networks",
        "sim: 4/4 networks",
    ]
    assert "left" in lines[1] and "left" not in lines[0] + lines[2]  # an estimate while under way


def test_progress_estimates_the_time_left(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr("swarm.cli.sim_view.time.monotonic", lambda: clock[0])
    stream = io.StringIO()
    progress = Progress(stream, every=0.0)
    clock[0] = 130.0
    progress(3, 12)  # 3 networks in 30 s: 9 more take about 90 s
    assert stream.getvalue() == "sim: 3/12 networks, 30 s, about 1 m 30 s left\n"


def test_without_the_sim_extra_swarm_sim_says_what_to_install(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "sys.modules['pyspark'] = None  # as in a node-only install: `pip install .` brings no PySpark\n"
        "from swarm.cli.main import main\n"
        f"sys.exit(main(['sim', '--nodes', '64', '--runs', '1', '--out', {str(tmp_path / 'out')!r}]))\n"
    )
    command = [sys.executable, "-c", code]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'swarm-sync[sim]'" in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_a_node_only_install_brings_no_pyspark() -> None:
    import tomllib

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    project = tomllib.loads(pyproject.read_text())["project"]
    names = [dep.split(">")[0].split("[")[0].strip() for dep in project["dependencies"]]
    assert "pyspark" not in names and "matplotlib" not in names
    extras = project["optional-dependencies"]
    assert any(dep.startswith("pyspark") for dep in extras["sim"])
    assert "swarm-sync[sim]" in extras["dev"], "the README's install (.[dev]) still brings the simulations"


def test_help_shows_each_default_once_and_never_none(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["sim", "--help"])
    shown = capsys.readouterr().out
    assert "(default: None)" not in shown and "(default: False)" not in shown
    assert shown.count("discovery by gossip") == 1
    assert "(default: 2000)" in shown  # a default the help does not say itself is still added
