"""Handshake time: TCP connect, TLS 1.3 (or none), Hello and signed Handshake both ways.

Two sides in this process on loopback, each with its own identity and TLS credentials, as two
nodes would have: ``--count`` sequential connections per channel (``tls`` and ``plain``), each
timed from the dial to both sides holding an established `PeerConnection`. Prints one JSON line
with the median and 95th percentile per channel, in milliseconds, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from functools import partial
from typing import Any

import trio

from streamer.channel import TlsCredentials
from streamer.connection import PeerConnection
from streamer.handshake import handshake
from streamer.identity import NodeIdentity, make_handshake
from streamer.messages import PROTOCOL_VERSION, Handshake

NETWORK = 1


def signer(identity: NodeIdentity, port: int) -> Any:
    def make(challenge: bytes, binding: bytes) -> Handshake:
        return make_handshake(
            identity,
            version=PROTOCOL_VERSION,
            network_id=NETWORK,
            epoch=1,
            host="127.0.0.1",
            port=port,
            challenge=challenge,
            binding=binding,
        )

    return make


async def measure(count: int, credentials: tuple[TlsCredentials, TlsCredentials] | None) -> list[float]:
    listener_id, dialler_id = NodeIdentity.generate(), NodeIdentity.generate()
    accepted: trio.MemorySendChannel[PeerConnection]
    accepted, arrivals = trio.open_memory_channel[PeerConnection](count)

    async def serve(stream: trio.SocketStream) -> None:
        conn = await handshake(
            stream,
            signer(listener_id, 1),
            network_id=NETWORK,
            outbound=False,
            credentials=credentials[0] if credentials else None,
        )
        await accepted.send(conn)
        await trio.sleep_forever()  # hold the connection until the bench is done

    samples = []
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, serve, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        for _ in range(count):
            started = time.perf_counter()
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            conn = await handshake(
                stream,
                signer(dialler_id, 2),
                network_id=NETWORK,
                outbound=True,
                credentials=credentials[1] if credentials else None,
            )
            await arrivals.receive()
            samples.append(time.perf_counter() - started)
            del conn
        nursery.cancel_scope.cancel()
    return samples


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--count", type=int, default=200, help="handshakes per channel (default 200)")
    args = parser.parse_args()
    tls = trio.run(measure, args.count, (TlsCredentials(), TlsCredentials()))
    plain = trio.run(measure, args.count, None)
    print(
        json.dumps(
            {
                "bench": "handshake",
                "count": args.count,
                "tls": summary(tls),
                "plain": summary(plain),
                "loadavg": os.getloadavg(),
            }
        )
    )


if __name__ == "__main__":
    main()
