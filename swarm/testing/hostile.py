"""What an attacker sends, made to order: shared by the tests and `benches/fuzz.py`.

`tree_bomb` is the chunk tree of issue 30 item 1: a handful of valid chunks whose intermediate
chunks repeat one reference 128 times, so that `levels + 1` distinct chunks claim a file of
4096 * 128**levels bytes. Every chunk is valid and every span consistent: only the size is absurd.
"""

from __future__ import annotations

import socket
import time

from chunks import CHUNK_SIZE, Chunk
from chunks.ethkey import Secp256k1Key
from chunks.feeds import make_update_v1, topic_from_text
from chunks.soc import Soc, make_soc
from swarm.files.chunker import BRANCHES

__all__ = ["bomb_feed_update", "bomb_soc", "get_and_hang_up", "tree_bomb"]


def tree_bomb(levels: int, *, leaf: bytes = b"\xbb" * CHUNK_SIZE) -> tuple[Chunk, list[Chunk]]:
    """(root, every chunk, leaf first) of a tree of `levels` intermediate levels above one data
    chunk, each intermediate chunk holding 128 copies of the address of the one below."""
    chunks = [Chunk.from_payload(leaf)]
    for _ in range(levels):
        below = chunks[-1]
        chunks.append(Chunk.from_payload(below.address * BRANCHES, span=below.span * BRANCHES))
    return chunks[-1], chunks


def bomb_soc(key: Secp256k1Key, id: bytes, root: Chunk) -> Soc:
    """A single-owner chunk wrapping `root` (so `GET /soc/OWNER/ID` reads the tree under it)."""
    return make_soc(key, id, root.payload, span=root.span)


def bomb_feed_update(key: Secp256k1Key, topic: str, root: Chunk) -> Soc:
    """Update 0 of `key`'s feed `topic`, a v1 update pointing at `root`."""
    return make_update_v1(key, topic_from_text(topic), 0, root.address, 0)


def get_and_hang_up(port: int, path: str, seconds: float) -> tuple[bytes, int]:
    """GET `path`, read for `seconds`, hang up: (status line, body bytes read)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        head, got = b"", 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            piece = sock.recv(1 << 16)
            if not piece:
                break
            if b"\r\n\r\n" not in head:
                head += piece
                got = len(head.partition(b"\r\n\r\n")[2])
            else:
                got += len(piece)
    return head.split(b"\r\n", 1)[0], got
