"""Relay memory with many publishers: does it stay flat however many pass through?

Each configuration runs in its own process: a node's relay (`swarm.live.relay.Relay` with the
node's default window: generations of at most 8 MiB or 40,000 chains, rotated at least 10 s
apart, at most 60 s) that relays one topic, fed ``--messages`` valid, signed topic messages from
``--small`` and then ``--large`` distinct publishers (message ``m`` is publisher ``m % P``'s
``m // P``-th), at ``--rate`` messages per second of simulated time (the relay is given the
clock; nothing sleeps). Every message goes through the whole judgement: the repeat check, the
signature recovery, the detector marked. Keys are derived from the publisher's number and
messages made as they are judged, so the process holds nothing but the relay.

Reported per configuration: the process's resident memory after warming up (``rss_base_mb``),
its peak during the run above that (``rss_peak_mb``, from the kernel's VmHWM), the chains the
window holds at the end and its estimate of their bytes, rotations, and seconds. A third run,
``unbounded``, gives the large configuration a window that never rotates: what the relay would
hold without raims' generations. Headline: ``ratio`` = large peak / small peak (flat: near 1).

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from typing import Any

from chunks.ethkey import Secp256k1Key
from swarm.live.config import LiveConfig
from swarm.live.interest import InterestTable
from swarm.live.loss import LossTable
from swarm.live.messages import Stream, make_topic_push
from swarm.live.relay import Outcome, Relay, detector_bytes
from swarm.live.seqno import seqno_init

TOPIC = b"\x6d" * 32
PEER = b"\x01" * 32
T0 = 1_700_000_000.0


def rss_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def child(publishers: int, messages: int, rate: float, unbounded: bool) -> dict[str, Any]:
    config = LiveConfig()
    if unbounded:
        config = LiveConfig(window_bytes=1 << 62, window_count=1 << 62, window_max=1e12)
    interest = InterestTable()
    interest.add_peer(PEER)
    interest.follow(Stream.topic_of(TOPIC))
    relay = Relay(interest, LossTable(), window=config.window(detector_bytes, T0))
    frame_start = seqno_init(int(T0 * 1e9))

    def judge(m: int) -> None:
        now = T0 + m / rate
        publisher, count = m % publishers, m // publishers
        key = Secp256k1Key((publisher + 1).to_bytes(32, "big"))
        msg = make_topic_push(key, TOPIC, frame_start + count + 1, 0, int(now * 1e9), b"x" * 32)
        outcome = relay.judge(msg, PEER, "peer", now).outcome
        if outcome is not Outcome.NEW:
            raise RuntimeError(f"message {m} judged {outcome}")

    for m in range(min(1000, messages)):  # warm up: imports, caches, the first chains
        judge(m)
    base = rss_kb("VmRSS")
    started = time.perf_counter()
    for m in range(1000, messages):
        judge(m)
        if m % 1000 == 0:
            relay.rotate(T0 + m / rate)  # the node's timer
    elapsed = time.perf_counter() - started
    peak = rss_kb("VmHWM")
    stats = relay.detectors.statistics()
    return {
        "publishers": publishers,
        "messages": messages,
        "simulated_s": round(messages / rate, 1),
        "rss_base_mb": round(base / 1024, 1),
        "rss_peak_mb": round(peak / 1024, 1),
        "rss_growth_mb": round((peak - base) / 1024, 1),
        "chains_held": stats.entries,
        "estimated_mb": round(stats.bytes / 2**20, 2),
        "rotations": stats.rotations,
        "seconds": round(elapsed, 1),
        "maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def run(publishers: int, args: argparse.Namespace, unbounded: bool = False) -> dict[str, Any]:
    command = [sys.executable, "-m", "benches.live_memory", "--child", str(publishers)]
    command += ["--messages", str(args.messages), "--rate", str(args.rate)]
    if unbounded:
        command.append("--unbounded")
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=_sizes, default=[100, 100_000, 300_000], help="publishers per run")
    parser.add_argument("--messages", type=int, default=300_000, help="messages per run")
    parser.add_argument("--rate", type=float, default=1000.0, help="messages per simulated second")
    parser.add_argument("--no-unbounded", action="store_true", help="skip the run without rotation")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--unbounded", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.messages, args.rate, args.unbounded)))
        return
    runs = {str(size): run(size, args) for size in args.sizes}
    result: dict[str, Any] = {"runs": runs}
    peaks = {int(size): r["rss_peak_mb"] for size, r in runs.items()}
    if 100 in peaks and 100_000 in peaks:
        result["ratio"] = round(peaks[100_000] / peaks[100], 3)
    if 100_000 in peaks and 300_000 in peaks:
        result["ratio_beyond"] = round(peaks[300_000] / peaks[100_000], 3)
    if not args.no_unbounded:
        largest = max(args.sizes)
        result["unbounded"] = run(largest, args, unbounded=True)
        result["ratio_unbounded"] = round(result["unbounded"]["rss_peak_mb"] / peaks[largest], 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
