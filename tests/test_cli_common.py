"""The command line's shared argparse types: bounded integers, named in one line when refused."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from swarm.cli.common import int_in


@given(st.one_of(st.integers(-5, 80).map(str), st.text(max_size=4)))
@example("²")  # a digit to str.isdigit, not to int()
def test_int_in_takes_exactly_the_decimal_integers_in_range(text: str) -> None:
    parse = int_in("a number of paths", 1, 64)
    if text.isascii() and text.isdigit() and 1 <= int(text) <= 64:
        assert parse(text) == int(text)
    else:
        with pytest.raises(argparse.ArgumentTypeError, match=r"expected a number of paths, 1\.\.64, got"):
            parse(text)


def test_int_in_shows_a_bound_as_asked() -> None:
    parse = int_in("a feed index", 0, 2**64 - 1, "2**64-1")
    assert parse(str(2**64 - 1)) == 2**64 - 1
    with pytest.raises(argparse.ArgumentTypeError, match=r"expected a feed index, 0\.\.2\*\*64-1, got"):
        parse(str(2**64))


def test_building_the_command_line_imports_no_node_machinery() -> None:
    """Every `swarm` command builds the whole parser: it must not import trio, the wire protocol
    or the node's live service for its option defaults (that cost a third of a second on each
    command, `swarm --help` included)."""
    import subprocess
    import sys

    code = (
        "import sys; from swarm.cli.main import build_parser; build_parser(); "
        "print(sorted(m for m in ('trio', 'streamer.messages', 'swarm.live.config', 'swarm.node') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
