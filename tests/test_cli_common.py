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


def test_the_node_reaches_its_first_dial_without_the_api_or_the_metrics() -> None:
    """`swarm node` imports `swarm.node` and dials its peers before anything else: that import must
    not bring the HTTP API (imported later, in a thread, once the sync has begun), the features
    built after the first dial (spaces, ACT, postage), the statistics
    snapshot, prometheus_client (only /metrics needs it) or cryptography's X.509 (the TLS
    certificate is made at the first inbound connection). Together about 0.2 s of CPU
    (docs/performance.md, "Start-up")."""
    import subprocess
    import sys

    late = (
        "swarm.api.app",
        "swarm.spaces.service",
        "swarm.spaces.ordering",
        "swarm.act.service",
        "swarm.postage.book",
        "hypercorn",
        "starlette",
        "swarm.statistics",
        "prometheus_client",
        "cryptography.x509",
    )
    code = f"import sys, swarm.node; print(sorted(m for m in {late!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_api_imports_prometheus_client_only_for_metrics() -> None:
    """The API's modules are imported while the node's first sync runs: /metrics, the only route
    that needs prometheus_client, imports it when first asked."""
    import subprocess
    import sys

    code = "import sys, swarm.api.app; print('prometheus_client' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_tls_credentials_make_their_certificate_once_when_first_needed() -> None:
    """The certificate is made lazily but once: the binding is the hash of the certificate the
    server context shows, the same on every look."""
    from chunks.bmt import keccak256
    from streamer.channel import TlsCredentials

    credentials = TlsCredentials()
    assert "_made" not in vars(credentials)  # nothing made yet: a dialling node needs no certificate
    credentials.prepare()
    assert "_made" in vars(credentials)
    server = credentials.server
    assert credentials.server is server
    assert credentials.binding == keccak256(credentials.certificate)
    assert credentials.certificate == credentials.certificate and len(credentials.binding) == 32


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["node", "--data-dir", "d"], "node"),
        (["--log-level", "INFO", "node"], "node"),
        (["--log-level=DEBUG", "up", "--nodes", "2"], "up"),
        (["-h", "node"], None),
        (["--version-typo", "node"], None),
        ([], None),
    ],
)
def test_the_command_is_named_only_after_the_log_level(argv: list[str], named: str | None) -> None:
    from swarm.cli.main import command_named

    assert command_named(argv) == named


def test_the_node_only_parser_reads_a_node_command_as_the_whole_parser_does() -> None:
    """`swarm node` parses with a parser of that command alone (it starts sooner): the options it
    hands the node must be exactly those of the whole parser."""
    from swarm.cli.main import build_parser

    argv = ["--log-level", "INFO", "node", "--data-dir", "d", "--peer", "127.0.0.1:1634", "--port", "0"]
    argv += ["--channel", "plain", "--verify-workers", "2", "--live-eager", "3", "--no-gossip"]
    assert vars(build_parser("node").parse_args(argv)) == vars(build_parser().parse_args(argv))
