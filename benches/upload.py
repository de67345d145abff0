"""Upload and download through a node's HTTP API: `POST /bytes` and `GET /bytes/{reference}`.

Starts one `swarm node` process, uploads ``--mib`` MiB of random bytes in one streamed request
(the node splits them into a chunk tree and stores every chunk), downloads them back (every chunk
verified on the way out) and checks they are the same bytes. Prints one JSON line: {"mib",
"chunks", "upload_mib_per_s", "upload_chunks_per_s", "download_mib_per_s", "node_cpu_s"}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from benches.sync import cpu_seconds, pid_of
from swarm.testing import NodeProcess

PIECE = 1 << 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--mib", type=int, default=32, help="size of the upload in MiB (default 32)")
    args = parser.parse_args()
    data = os.urandom(args.mib << 20)
    tmp = Path(tempfile.mkdtemp(prefix="bench-upload-"))
    try:
        with NodeProcess(tmp / "node") as node, httpx.Client(base_url=node.api, timeout=600) as client:
            cpu_before = cpu_seconds(pid_of(node))

            def pieces() -> Iterator[bytes]:
                for i in range(0, len(data), PIECE):
                    yield data[i : i + PIECE]

            started = time.perf_counter()
            response = client.post("/bytes", content=pieces())
            upload_s = time.perf_counter() - started
            response.raise_for_status()
            doc = response.json()
            started = time.perf_counter()
            downloaded = client.get(f"/bytes/{doc['reference']}").content
            download_s = time.perf_counter() - started
            assert downloaded == data, "the download differs from the upload"
            cpu_s = cpu_seconds(pid_of(node)) - cpu_before
        print(
            json.dumps(
                {
                    "mib": args.mib,
                    "chunks": doc["chunks"],
                    "upload_mib_per_s": round(args.mib / upload_s, 1),
                    "upload_chunks_per_s": round(doc["chunks"] / upload_s),
                    "download_mib_per_s": round(args.mib / download_s, 1),
                    "node_cpu_s": round(cpu_s, 2),
                }
            )
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
