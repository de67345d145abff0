"""Upload and download through a node's HTTP API: `POST /bytes` and `GET /bytes/{reference}`.

Starts one `swarm node` process, uploads ``--mib`` MiB of random bytes in one streamed request
(the node splits them into a chunk tree and stores every chunk), downloads them back (every chunk
verified on the way out) and checks they are the same bytes. Then (unless ``--no-remote``) starts
a second node connected to the first, with a reserve of ``--remote-capacity`` chunks so that it
keeps few of the file's chunks by pull syncing, and downloads the file there too: every chunk it
does not hold is retrieved from the first node. Prints one JSON line: {"mib", "chunks",
"upload_mib_per_s", "upload_chunks_per_s", "download_mib_per_s", "node_cpu_s",
"remote_download_mib_per_s", "remote_held_chunks" (what the second node held when its download
began), "remote_ratio" (remote / local download rate), "remote_cpu_s"}.
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
from swarm.testing import NodeProcess, poll

PIECE = 1 << 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--mib", type=int, default=32, help="size of the upload in MiB (default 32)")
    parser.add_argument("--no-remote", action="store_true", help="leave out the download at a second node")
    parser.add_argument(
        "--remote-capacity", type=int, default=256, help="the second node's reserve in chunks (default 256)"
    )
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
            result = {
                "mib": args.mib,
                "chunks": doc["chunks"],
                "upload_mib_per_s": round(args.mib / upload_s, 1),
                "upload_chunks_per_s": round(doc["chunks"] / upload_s),
                "download_mib_per_s": round(args.mib / download_s, 1),
                "node_cpu_s": round(cpu_s, 2),
            }
            if not args.no_remote:
                remote_s, held, remote_cpu = remote_download(
                    tmp / "remote", node, doc["reference"], data, args
                )
                result |= {
                    "remote_download_mib_per_s": round(args.mib / remote_s, 1),
                    "remote_held_chunks": held,
                    "remote_ratio": round(download_s / remote_s, 3),
                    "remote_cpu_s": round(remote_cpu, 2),
                }
        print(json.dumps(result))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def remote_download(
    data_dir: Path, holder: NodeProcess, reference: str, data: bytes, args: argparse.Namespace
) -> tuple[float, int, float]:
    """Seconds to download ``reference`` at a new node next to ``holder`` that keeps at most
    ``--remote-capacity`` chunks; the chunks it held when it began; its CPU seconds meanwhile."""
    extra = ["--capacity", str(args.remote_capacity)]
    with NodeProcess(data_dir, peers=[holder.p2p], extra=extra) as node:
        poll(lambda: bool(node.get("/sync").json()["fully_synced"]), timeout=120, interval=0.1)
        held = node.get("/sync").json()["chunks"]
        cpu_before = cpu_seconds(pid_of(node))
        started = time.perf_counter()
        downloaded = httpx.get(f"{node.api}/bytes/{reference}", timeout=600).content
        remote_s = time.perf_counter() - started
        assert downloaded == data, "the download at the second node differs from the upload"
        return remote_s, held, cpu_seconds(pid_of(node)) - cpu_before


if __name__ == "__main__":
    main()
