"""The live-propagation commands: ``swarm feed follow|publish`` (registered among the other
``swarm feed`` commands of `swarm.cli.feed`), ``swarm topic publish|subscribe``, ``swarm loss``
(their arguments: `swarm.cli.live_args`). They talk to a node's HTTP API (`swarm.api.live`); the
streams are server-sent events, read here line by line. A follower that loses its node (it
stopped, or restarted on another port) reconnects and resumes after the last update it printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from swarm.cli.common import (
    CliError,
    all_apis,
    api_get,
    feed_update_line,
    print_json,
    response_message,
    target_api,
)

__all__ = [
    "cmd_feed_follow",
    "cmd_feed_publish",
    "cmd_loss",
    "cmd_topic_publish",
    "cmd_topic_subscribe",
    "sse_events",
]

RECONNECT_MAX = 10.0


# -- server-sent events -------------------------------------------------------------------------


def sse_events(lines: Iterator[str]) -> Iterator[tuple[str, str | None, dict[str, Any]]]:
    """``(event, id, data)`` from the lines of a text/event-stream (comments skipped)."""
    name, ident = "message", None
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield name, ident, json.loads("\n".join(data))
            name, data = "message", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
        elif field == "id":
            ident = value


def _stream(
    url: str, params: dict[str, str], on_event: Callable[[str, str | None, dict[str, Any]], None]
) -> None:
    import httpx

    with httpx.stream("GET", url, params=params, timeout=httpx.Timeout(10.0, read=None)) as response:
        if response.status_code != 200:
            response.read()
            raise CliError(f"{url} answered {response.status_code}: {response_message(response)}")
        for name, ident, data in sse_events(response.iter_lines()):
            on_event(name, ident, data)


def _out(text: str) -> None:
    print(text, flush=True)


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _clock(ts: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts))


def _advisory_line(doc: dict[str, Any]) -> str:
    parts = []
    for s in doc["streams"]:
        ranges = ",".join(f"{a}-{b}" if a != b else str(a) for a, b in s["ranges"])
        text = f"{s['stream']}: {s['lost']} lost" + (f" [{ranges}]" if ranges else "")
        if s["restarts"]:
            text += f", {s['restarts']} restart{'s' * (s['restarts'] > 1)}"
        parts.append(text)
    more = doc["stream_count"] - len(doc["streams"])
    tail = f" (+{more} more streams)" if more > 0 else ""
    return (
        f"! loss advisory ({doc['description']}): {doc['lost']} lost, {doc['restarts']} restarts: "
        + "; ".join(parts)
        + tail
    )


# -- swarm feed follow ----------------------------------------------------------------------------


def _update_line(doc: dict[str, Any]) -> str:
    when = doc["timestamp"] if doc["timestamp"] is not None else doc["at"]
    if doc["reference"] is not None:
        what = f"ref {doc['reference']}"
    elif doc["text"] is not None:
        what = doc["text"]
    else:
        what = f"0x{doc['payload']}"
    return f"{doc['index']:>6}  {_clock(when)}  {what}"


def cmd_feed_follow(args: argparse.Namespace) -> int:
    import httpx

    owner = _hex_arg(args.owner, 20, "OWNER")
    topic = _topic_arg(args.topic)
    next_index: int | None = args.start
    delay = 1.0

    def on_event(name: str, ident: str | None, doc: dict[str, Any]) -> None:
        nonlocal next_index
        if args.json:
            _out(json.dumps({"event": name, **doc}, sort_keys=True))
        elif name == "update":
            _out(_update_line(doc))
        elif name == "loss":
            _out(f"# lost {doc['start']}..{doc['end']} ({doc['reason']})")
        elif name == "advisory":
            _err(_advisory_line(doc))
        elif name == "start":
            latest = "none yet" if doc["latest"] is None else doc["latest"]
            _err(f"following {doc['stream']} from index {doc['next_index']} (latest {latest}, {doc['mode']})")
        if name == "update":
            next_index = doc["index"] + 1
        elif name == "loss" and doc["end"] is not None:
            next_index = doc["end"] + 1

    while True:
        url = target_api(args)
        params = {"mode": args.mode}
        if next_index is not None:
            params["from"] = str(next_index)
        try:
            _stream(f"{url}/live/feeds/{owner}/{topic}", params, on_event)
            delay = 1.0
        except (httpx.HTTPError, CliError) as exc:
            if args.once:
                raise CliError(f"following failed: {exc}") from None
            _err(f"# node unreachable ({exc}); retrying in {delay:g}s")
        if args.once:
            return 0
        time.sleep(delay)
        delay = min(delay * 2, RECONNECT_MAX)


# -- swarm feed publish ---------------------------------------------------------------------------


def cmd_feed_publish(args: argparse.Namespace) -> int:
    import httpx

    from chunks.ethkey import KeyFileError, load_key_file
    from chunks.feeds import make_update_v2

    try:
        key = load_key_file(Path(args.key))
    except (KeyFileError, OSError) as exc:
        raise CliError(f"{exc} (make one with `swarm feed key new`)") from None
    topic = _topic_arg(args.topic)
    payload = args.message.encode("utf-8")
    if len(payload) > 4096:
        raise CliError(f"a feed update holds at most 4096 bytes, the message has {len(payload)}")
    url = target_api(args)
    index = args.index
    if index is None:
        index = api_get(url, f"/live/feeds/{key.owner.hex()}/{topic}/next")["next"]
    soc = make_update_v2(key, bytes.fromhex(topic), index, payload)
    try:
        response = httpx.post(
            f"{url}/live/feeds/{key.owner.hex()}/{topic}/{index}", content=soc.data, timeout=30
        )
    except httpx.HTTPError as exc:
        raise CliError(f"cannot reach the node API at {url}: {exc}") from None
    if response.status_code != 201:
        raise CliError(f"publishing failed with {response.status_code}: {response_message(response)}")
    doc = response.json()
    if args.json:
        print_json({**doc, "owner": key.owner.hex(), "topic": topic})
    else:
        pushed = f"pushed to {doc['pushed']} peers"
        _out(feed_update_line(index, key.owner.hex(), topic, doc["reference"], pushed))
    return 0


# -- swarm topic publish / subscribe ------------------------------------------------------------


def cmd_topic_publish(args: argparse.Namespace) -> int:
    import httpx

    topic = _topic_arg(args.topic)
    url = target_api(args)
    try:
        response = httpx.post(f"{url}/live/topics/{topic}", content=args.message.encode("utf-8"), timeout=30)
    except httpx.HTTPError as exc:
        raise CliError(f"cannot reach the node API at {url}: {exc}") from None
    if response.status_code != 201:
        raise CliError(f"publishing failed with {response.status_code}: {response_message(response)}")
    doc = response.json()
    if args.json:
        print_json(doc)
    else:
        _out(f"{doc['seq']} on topic {topic[:16]} from {doc['publisher']} (pushed to {doc['pushed']} peers)")
    return 0


def _message_line(doc: dict[str, Any]) -> str:
    status = doc["status"]
    note = {
        "skip": f" (lost {doc['lost']})",
        "loss-unknown": " (lost: how many unknown)",
        "cycle": " (restarted)",
    }
    what = doc["text"] if doc["text"] is not None else f"0x{doc['payload']}"
    verdict = status + note.get(status, "")
    return f"{_clock(doc['time'] / 1e9)}  {doc['publisher'][:8]}  {doc['seq']}  {verdict}  {what}"


def cmd_topic_subscribe(args: argparse.Namespace) -> int:
    import httpx

    topic = _topic_arg(args.topic)

    def on_event(name: str, ident: str | None, doc: dict[str, Any]) -> None:
        if args.json:
            _out(json.dumps({"event": name, **doc}, sort_keys=True))
        elif name == "message":
            _out(_message_line(doc))
        elif name == "loss":
            _out(f"# lost {doc['lost']} ({doc['reason']})")
        elif name == "advisory":
            _err(_advisory_line(doc))

    delay = 1.0
    while True:
        url = target_api(args)
        try:
            _stream(f"{url}/live/topics/{topic}", {}, on_event)
            delay = 1.0
        except (httpx.HTTPError, CliError) as exc:
            if args.once:
                raise CliError(f"subscribing failed: {exc}") from None
            _err(f"# node unreachable ({exc}); retrying in {delay:g}s")
        if args.once:
            return 0
        time.sleep(delay)
        delay = min(delay * 2, RECONNECT_MAX)


# -- swarm loss -------------------------------------------------------------------------------------


def cmd_loss(args: argparse.Namespace) -> int:
    from swarm.live.loss import COUNTERS
    from swarm.live.report import SHORT_NAMES, loss_summary_row, loss_text
    from swarm.render import table

    if not getattr(args, "all", False):
        doc = api_get(target_api(args), "/loss")
        if args.json:
            print_json(doc)
        else:
            _out(loss_text(doc))
        return 0
    rows: list[list[object]] = []
    docs = []
    for index, url, note in all_apis(args):
        if url is None:
            rows.append([index, "down", *([None] * (len(COUNTERS) + 1))])
            docs.append({"node": index, "error": note})
            continue
        doc = api_get(url, "/loss")
        docs.append({"node": index, **doc})
        rows.append(loss_summary_row(index, doc))
    if args.json:
        print_json(docs)
    else:
        _out(table(["node", "overlay", *(SHORT_NAMES[n] for n in COUNTERS), "received/new"], rows))
    return 0


# -- arguments --------------------------------------------------------------------------------------


def _hex_arg(text: str, size: int, what: str) -> str:
    raw = text.removeprefix("0x").lower()
    if len(raw) != 2 * size or any(c not in "0123456789abcdef" for c in raw):
        raise CliError(f"{what} must be {2 * size} hex characters, got {text!r}")
    return raw


def _topic_arg(text: str) -> str:
    from chunks.feeds import topic_from_text

    return topic_from_text(text).hex()
