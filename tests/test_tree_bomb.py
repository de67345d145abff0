"""Issue 30 item 1: a tree bomb (a few valid chunks whose intermediate chunks repeat one
reference) must not exhaust a node. The check of the intermediates costs the distinct chunks,
the stream holds a bounded window and ends with its client, and a tree claiming more than
MAX_FILE_SIZE is refused before anything under its root is fetched.

The process test is the attack as it was reported: a real `swarm node`, the chunks uploaded over
HTTP, a GET whose client hangs up after a second, the node's RSS and CPU time read from /proc.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import trio

from benches.sync import cpu_seconds, proc_status_kb
from chunks import Chunk
from chunks.ethkey import Secp256k1Key
from swarm.api.downloads import MAX_FILE_SIZE
from swarm.files.chunker import split_bytes
from swarm.files.transfer import fetch_intermediates, read_file
from swarm.testing import NodeProcess
from swarm.testing.hostile import bomb_feed_update, bomb_soc, get_and_hang_up, tree_bomb


class Counting:
    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = {c.address: c for c in chunks}
        self.asked = 0

    async def fetch(self, address: bytes) -> Chunk:
        self.asked += 1
        await trio.lowlevel.checkpoint()
        return self.chunks[address]


async def test_the_intermediates_of_a_bomb_are_checked_once_each() -> None:
    root, chunks = tree_bomb(7)  # 2**61 bytes claimed, 8 chunks
    counting = Counting(chunks)
    with trio.fail_after(10):
        held = await fetch_intermediates(root, counting.fetch, 0, root.span)
    assert counting.asked == 6  # I6 .. I1: each distinct intermediate once, no data chunk
    assert set(held) == {c.address for c in chunks[1:-1]}


async def test_a_file_of_zeros_reads_as_before() -> None:
    """Repeated references are what a file of zeros is made of: they are not refused."""
    data = bytes(3 * 128 * 4096 + 5)
    reference, chunks = split_bytes(data)
    counting = Counting(chunks)
    with trio.fail_after(10):
        assert await read_file(reference, counting.fetch) == data
        counting.asked = 0
        held = await fetch_intermediates(counting.chunks[reference], counting.fetch, 0, len(data))
    # root -> [I1, I1, I1, the last 5 bytes]: the intermediate of 128 zero chunks, checked once
    assert len(held) == 1 and counting.asked == 1


async def test_a_repeated_subtree_with_a_wrong_span_is_still_refused() -> None:
    from swarm.files.chunker import CorruptTree

    _, chunks = tree_bomb(2)
    leaf, i1 = chunks[0], chunks[1]
    # a root of span 128*4096 + 4096*2 whose last child repeats I1 where 2 data chunks fit
    root = Chunk.from_payload(i1.address + i1.address, span=i1.span + 2 * 4096)
    with pytest.raises(CorruptTree, match="its parent implies 8192"), trio.fail_after(10):
        await fetch_intermediates(root, Counting([leaf, i1, root]).fetch, 0, root.span)


# -- across processes ---------------------------------------------------------------------------


def rss_mb(pid: int) -> float:
    return proc_status_kb(pid, "VmRSS") / 1024


def post(node: NodeProcess, path: str, body: bytes) -> None:
    import httpx

    answer = httpx.post(node.api + path, content=body, headers={"swarm-deferred-upload": "true"}, timeout=10)
    assert answer.status_code == 201, answer.text


@pytest.mark.process
def test_a_tree_bomb_is_bounded_and_ends_with_its_client(tmp_path: Path) -> None:
    key = Secp256k1Key.generate()
    root, chunks = tree_bomb(4)  # 1 TiB claimed by 5 chunks: within MAX_FILE_SIZE, so streamed
    assert root.span == MAX_FILE_SIZE
    too_big, big_chunks = tree_bomb(7)
    with NodeProcess(tmp_path / "n") as node:
        for chunk in chunks + big_chunks:
            post(node, "/chunks", chunk.data)
        soc = bomb_soc(key, bytes(32), root)
        post(node, f"/soc/{key.owner.hex()}/{soc.id.hex()}?sig={soc.signature.hex()}", soc.wrapped)
        update = bomb_feed_update(key, "bomb", root)
        post(node, f"/soc/{key.owner.hex()}/{update.id.hex()}?sig={update.signature.hex()}", update.wrapped)
        refused = node.get(f"/bytes/{too_big.address.hex()}")
        assert refused.status_code == 413 and refused.json()["code"] == 413
        assert str(too_big.span) in refused.json()["message"]

        assert node.proc is not None
        pid, port = node.proc.pid, int(node.info["api_port"])  # type: ignore[call-overload]
        before = rss_mb(pid)
        owner = key.owner.hex()
        paths = [
            f"/bytes/{root.address.hex()}",
            f"/soc/{owner}/{bytes(32).hex()}",
            f"/feeds/{owner}/{_topic_hex('bomb')}",
        ]
        for path in paths:
            status, got = get_and_hang_up(port, path, 1.0)
            assert status.startswith(b"HTTP/1.1 200"), (path, status)
            assert got > 1_000_000, path  # it did stream
            idle_since = cpu_seconds(pid)
            time.sleep(1.5)
            assert cpu_seconds(pid) - idle_since < 0.5, path  # the work ended with the client
        settled = rss_mb(pid)
        time.sleep(1.5)
        assert rss_mb(pid) - settled < 5  # no longer growing
        assert rss_mb(pid) - before < 100


def _topic_hex(text: str) -> str:
    from chunks.feeds import topic_from_text

    return topic_from_text(text).hex()


async def test_a_whole_tree_walk_fetches_each_distinct_chunk_once() -> None:
    """Stewardship walks every chunk: a bomb's repeats cost one fetch each, a tree past the
    limit is refused instead of held."""
    from swarm.files.transfer import TreeTooLarge, fetch_tree

    root, chunks = tree_bomb(7)
    counting = Counting(chunks)
    with trio.fail_after(10):
        tree = await fetch_tree(root.address, counting.fetch)
    assert counting.asked == len(chunks) == len(tree)
    with pytest.raises(TreeTooLarge, match="more than 4 distinct"), trio.fail_after(10):
        await fetch_tree(root.address, Counting(chunks).fetch, limit=4)
