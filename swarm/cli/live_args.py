"""The live-propagation commands' arguments: ``swarm feed follow|publish`` (among the other
``swarm feed`` commands, `swarm.cli.feed`), ``swarm topic publish|subscribe`` and ``swarm loss``;
the commands themselves are in `swarm.cli.live`."""

from __future__ import annotations

from typing import Any

from swarm.cli.common import add_target_options, int_in
from swarm.cli.live import cmd_feed_follow, cmd_feed_publish, cmd_loss, cmd_topic_publish, cmd_topic_subscribe

__all__ = ["add_feed_live_commands", "add_live_parsers"]


_index_arg = int_in("a feed index", 0, 2**64 - 1, "2**64-1")


def add_feed_live_commands(feed_sub: Any) -> None:
    """Register ``follow`` and ``publish`` among the ``swarm feed`` commands (`swarm.cli.feed`)."""
    _add_follow(feed_sub)
    _add_feed_publish(feed_sub)


def add_live_parsers(sub: Any) -> None:
    """Register ``topic`` and ``loss`` on the ``swarm`` parser's subcommands."""
    topic = sub.add_parser("topic", help="publish or subscribe to ephemeral topic messages")
    topic_sub = topic.add_subparsers(dest="topic_command", metavar="COMMAND", required=True)
    _add_topic_commands(topic_sub)
    _add_loss(sub)


def _add_follow(feed_sub: Any) -> None:
    p = feed_sub.add_parser(
        "follow",
        help="print a feed's updates as they arrive, in order, each once",
        description="Print each update of the feed (OWNER, TOPIC) as it arrives: index, time (the update's "
        "own for v1 updates, else when it arrived) and reference or payload, in index order, each once. "
        "Missing updates are retrieved from the swarm before later ones are shown; one that cannot be "
        "found in time is reported as lost and skipped (light mode) or waited for (full mode). Runs until "
        "Ctrl-C, reconnecting to the node if it goes away.",
    )
    p.add_argument("owner", metavar="OWNER", help="the feed owner's address (40 hex characters)")
    p.add_argument("topic", metavar="TOPIC", help="64 hex characters, or text (hashed as bee-js does)")
    p.add_argument(
        "--from",
        dest="start",
        type=_index_arg,
        metavar="INDEX",
        help="start at this update (default: the next one)",
    )
    p.add_argument(
        "--mode",
        choices=["light", "full"],
        default="light",
        help="give up a missing update after 5 tries (light, default) or keep trying (full)",
    )
    p.add_argument("--json", action="store_true", help="one JSON document per event")
    p.add_argument(
        "--once", action="store_true", help="end when the node closes the stream (no reconnecting)"
    )
    add_target_options(p)
    p.set_defaults(func=cmd_feed_follow)


def _add_feed_publish(feed_sub: Any) -> None:
    p = feed_sub.add_parser(
        "publish",
        help="sign and publish the next update of your feed",
        description="Sign MESSAGE (UTF-8, at most 4096 bytes) as an update of the feed (your key's owner, "
        "TOPIC), at the next index unless --index, store it at the node and push it to followers.",
    )
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("message", metavar="MESSAGE")
    p.add_argument("--key", required=True, metavar="FILE", help="your key file (swarm feed key new)")
    p.add_argument(
        "--index", type=_index_arg, metavar="INDEX", help="the update's index (default: after the latest)"
    )
    p.add_argument("--json", action="store_true")
    add_target_options(p)
    p.set_defaults(func=cmd_feed_publish)


def _add_topic_commands(topic_sub: Any) -> None:
    p = topic_sub.add_parser(
        "publish",
        help="publish a message on a topic",
        description="Sign MESSAGE with the node's key (DIR/eth.key), number it (raims' time-framed sequence "
        "numbers) and push it to the topic's subscribers. Not stored.",
    )
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("message", metavar="MESSAGE")
    p.add_argument("--json", action="store_true")
    add_target_options(p)
    p.set_defaults(func=cmd_topic_publish)
    p = topic_sub.add_parser(
        "subscribe",
        help="print a topic's messages as they arrive",
        description="Print each message on TOPIC with its publisher, sequence number and verdict: next, "
        "skip (messages lost, how many), cycle (the publisher restarted), loss-unknown, first. Runs until "
        "Ctrl-C.",
    )
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--json", action="store_true", help="one JSON document per event")
    p.add_argument(
        "--once", action="store_true", help="end when the node closes the stream (no reconnecting)"
    )
    add_target_options(p)
    p.set_defaults(func=cmd_topic_subscribe)


def _add_loss(sub: Any) -> None:
    p = sub.add_parser(
        "loss",
        help="the live loss table: per peer, each counter with its last change",
        description="Per peer (and 'local': this node's followers and gap filling): repeat, not subscribed, "
        "message loss, inbox loss (failed retrievals), restarts, gaps open, gaps filled, invalid, "
        "equivocations, each with the time it last changed. With --all: one line per node of the local "
        "swarm.",
    )
    add_target_options(p, allow_all=True)
    p.add_argument("--json", action="store_true", help="print the /loss JSON instead of a table")
    p.set_defaults(func=cmd_loss)
