"""The receiving side of a TLS connection: CPU per 4 KiB of data, trio's SSLStream vs TlsStream.

Another process (blocking `ssl` sockets, so its work is not counted) sends ``--mib`` MiB over
loopback TLS 1.3 in writes of 256 KiB, as a node's connection writer coalesces them; this
process receives it with ``receive_some(256 KiB)`` (the read size of a `PeerConnection`) through
trio's `SSLStream` (which returns one TLS record, at most 16 KiB, a call) and through
`streamer.tls.TlsStream` (which returns every whole record that has arrived), alternated
``--runs`` times, and counts its own CPU time (``time.process_time``) from the handshake to the
last byte. It is the read path of a syncing node's connection without the decoding after it.

Prints one JSON line: ``{"mib", "runs", "sslstream_us_per_chunk", "tlsstream_us_per_chunk",
"sslstream_reads", "tlsstream_reads", "ratio"}``: medians; a chunk is 4,104 bytes of data (span and
payload), ``ratio`` = TlsStream / SSLStream.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import trio

from streamer.channel import TlsCredentials
from streamer.tls import TlsStream

CHUNK = 4104
READ = 256 * 1024

SENDER = r"""
import socket, ssl, sys
port, total = int(sys.argv[1]), int(sys.argv[2])
context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
stream = context.wrap_socket(socket.create_connection(("127.0.0.1", port)))
block, sent = bytes(256 * 1024), 0
while sent < total:
    stream.sendall(block)
    sent += len(block)
stream.recv(1)  # until the receiver has counted everything
"""


async def receive(kind: str, total: int, credentials: TlsCredentials) -> tuple[float, int]:
    """CPU seconds of this process to receive ``total`` bytes through ``kind``, and the reads it took."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    sender = subprocess.Popen([sys.executable, "-c", SENDER, str(port), str(total)])
    try:
        raw = await listeners[0].accept()
        stream: trio.SSLStream[trio.SocketStream] | TlsStream
        if kind == "sslstream":
            stream = trio.SSLStream(raw, credentials.server, server_side=True)
        else:
            stream = TlsStream(raw, credentials.server, server_side=True)
        await stream.do_handshake()
        got = reads = 0
        started = time.process_time()
        while got < total:
            data = await stream.receive_some(READ)
            if not data:
                raise RuntimeError(f"the sender stopped after {got} of {total} bytes")
            got += len(data)
            reads += 1
        cpu = time.process_time() - started
        await stream.send_all(b"k")
        await stream.aclose()
    finally:
        sender.wait()
        await listeners[0].aclose()
    return cpu, reads


async def measure(mib: int, runs: int) -> dict[str, object]:
    total = mib * 1024 * 1024
    credentials = TlsCredentials()
    cpu: dict[str, list[float]] = {"sslstream": [], "tlsstream": []}
    reads: dict[str, list[int]] = {"sslstream": [], "tlsstream": []}
    for _ in range(runs):
        for kind in cpu:
            seconds, count = await receive(kind, total, credentials)
            cpu[kind].append(seconds / (total / CHUNK) * 1e6)
            reads[kind].append(count)
    medians = {kind: statistics.median(values) for kind, values in cpu.items()}
    return {
        "mib": mib,
        "runs": runs,
        "sslstream_us_per_chunk": round(medians["sslstream"], 2),
        "tlsstream_us_per_chunk": round(medians["tlsstream"], 2),
        "sslstream_reads": int(statistics.median(reads["sslstream"])),
        "tlsstream_reads": int(statistics.median(reads["tlsstream"])),
        "ratio": round(medians["tlsstream"] / medians["sslstream"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--mib", type=int, default=80, help="MiB sent per run (default 80, what a 20,000-chunk sync reads)"
    )
    parser.add_argument("--runs", type=int, default=3, help="alternated runs of each stream (default 3)")
    args = parser.parse_args()
    print(json.dumps(trio.run(measure, args.mib, args.runs)))


if __name__ == "__main__":
    main()
