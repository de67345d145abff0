"""`swarm feed update`'s arguments: TOPIC [FILE], the older --topic spelling, and what is refused."""

from __future__ import annotations

import subprocess
import sys

import pytest

from chunks.feeds import topic_from_text
from swarm.cli.common import CliError
from swarm.cli.feed import update_target
from swarm.cli.main import build_parser

REF = "ab" * 32


def target(*words: str) -> tuple[bytes, str | None]:
    return update_target(build_parser().parse_args(["feed", "update", "--key", "k", *words]))


@pytest.mark.parametrize(
    "words, file",
    [
        (("pages", "page.html"), "page.html"),
        (("--topic", "pages", "page.html"), "page.html"),  # as earlier versions took it
        (("page.html", "--topic", "pages"), "page.html"),
        (("pages", "--ref", REF), None),
        (("--topic", "pages", "--ref", REF), None),
    ],
)
def test_the_topic_and_the_file_in_either_spelling(words: tuple[str, ...], file: str | None) -> None:
    assert target(*words) == (topic_from_text("pages"), file)


@pytest.mark.parametrize(
    "words, message",
    [
        ((), "give the feed's TOPIC"),
        (("pages",), "give a FILE to upload or --ref REF"),
        (("pages", "page.html", "--ref", REF), "give a FILE to upload or --ref REF"),
        (("--topic", "pages", "other", "page.html"), "the TOPIC is given twice"),
    ],
)
def test_what_is_refused_says_why(words: tuple[str, ...], message: str) -> None:
    with pytest.raises(CliError, match=message):
        target(*words)


def test_a_refused_update_is_one_line_and_a_non_zero_exit() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "swarm", "feed", "update", "--key", "k", "pages"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0 and "give a FILE to upload or --ref REF" in done.stderr
