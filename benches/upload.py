"""Upload and download through a node's HTTP API: `POST /bytes` and `GET /bytes/{reference}`.

Starts one `swarm node` process, uploads ``--mib`` MiB of random bytes in one streamed request
(the node splits them into a chunk tree and stores every chunk), downloads them back (every chunk
verified on the way out) and checks they are the same bytes. Then (unless ``--no-remote``) starts
a second node connected to the first, with a reserve of ``--remote-capacity`` chunks so that it
keeps few of the file's chunks by pull syncing, and downloads the file there too: every chunk it
does not hold is retrieved from the first node. Prints one JSON line: {"mib", "chunks",
"upload_mib_per_s", "upload_chunks_per_s", "download_mib_per_s", "node_cpu_s",
"remote_download_mib_per_s", "remote_held_chunks" (what the second node held when its download
began), "remote_ratio" (remote / local download rate), "remote_cpu_s", "remote_worker_cpu_s" (its
verifier workers', which check the chunks it retrieves), "holder_cpu_s" (the first node's while it
served them), "load" (the 1-minute load average at the end)}. ``--py-spy FILE`` profiles the
second node (FILE.remote) and the first (FILE.holder) during the remote download (``--native``:
native frames too); read them with ``python -m benches.profile_shares``.
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

from benches.sync import cpu_seconds, load_average, pid_of, py_spy
from swarm.testing import NodeProcess, poll

PIECE = 1 << 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--mib", type=int, default=32, help="size of the upload in MiB (default 32)")
    parser.add_argument("--no-remote", action="store_true", help="leave out the download at a second node")
    parser.add_argument(
        "--remote-capacity", type=int, default=256, help="the second node's reserve in chunks (default 256)"
    )
    parser.add_argument(
        "--remote-verify-workers",
        type=int,
        help="the second node's --verify-workers (default: the node's own default)",
    )
    parser.add_argument("--py-spy", metavar="FILE", help="profile both nodes during the remote download")
    parser.add_argument("--native", action="store_true", help="with --py-spy: native frames too")
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
                remote_s, held, remote_cpu, worker_cpu, holder_cpu = remote_download(
                    tmp / "remote", node, doc["reference"], data, args
                )
                result |= {
                    "remote_download_mib_per_s": round(args.mib / remote_s, 1),
                    "remote_held_chunks": held,
                    "remote_ratio": round(download_s / remote_s, 3),
                    "remote_cpu_s": round(remote_cpu, 2),
                    "remote_worker_cpu_s": round(worker_cpu, 2),
                    "holder_cpu_s": round(holder_cpu, 2),
                }
            result["load"] = load_average()
        print(json.dumps(result))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def remote_download(
    data_dir: Path, holder: NodeProcess, reference: str, data: bytes, args: argparse.Namespace
) -> tuple[float, int, float, float, float]:
    """Seconds to download ``reference`` at a new node next to ``holder`` that keeps at most
    ``--remote-capacity`` chunks; the chunks it held when it began; the CPU seconds meanwhile of
    it, of its verifier workers and of the holder."""
    extra = ["--capacity", str(args.remote_capacity)]
    if args.remote_verify_workers is not None:
        extra += ["--verify-workers", str(args.remote_verify_workers)]
    with NodeProcess(data_dir, peers=[holder.p2p], extra=extra) as node:
        poll(lambda: bool(node.get("/sync").json()["fully_synced"]), timeout=120, interval=0.1)
        held = node.get("/sync").json()["chunks"]
        workers = node.verify_worker_pids()
        cpu_before, holder_before = cpu_seconds(pid_of(node)), cpu_seconds(pid_of(holder))
        workers_before = sum(map(cpu_seconds, workers))
        spy = args.py_spy
        with (
            py_spy(pid_of(node), spy and spy + ".remote", native=args.native),
            py_spy(pid_of(holder), spy and spy + ".holder", native=args.native),
        ):
            started = time.perf_counter()
            downloaded = httpx.get(f"{node.api}/bytes/{reference}", timeout=600).content
            remote_s = time.perf_counter() - started
            cpu = (
                cpu_seconds(pid_of(node)) - cpu_before,
                sum(map(cpu_seconds, workers)) - workers_before,
                cpu_seconds(pid_of(holder)) - holder_before,
            )
        assert downloaded == data, "the download at the second node differs from the upload"
        return remote_s, held, *cpu


if __name__ == "__main__":
    main()
