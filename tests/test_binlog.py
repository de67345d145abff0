"""BinLogs (localstore/binlog.py): each bin's pull index as a Merkle log on disk.

A property test drives appends, holes and reopenings (clean, rebuilt, extended after running
without logs) against a naive model, RFC 6962's MTH over plain lists, and checks every root,
frontier, compact range, consistency and inclusion proof the logs give at random sizes. The
store-level tests check the hooks: put_many appends, a dropped chunk keeps its leaf, a store not
closed cleanly (SIGKILL) rebuilds its logs, and a store opened without logs catches up later.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunks import Chunk
from chunks.bmt import keccak256
from chunks.merkle import (
    Frontier,
    fold,
    leaf_hash,
    range_nodes,
    verify_consistency,
    verify_inclusion,
)
from localstore.binlog import TREE_LEVEL, BinLogs, node_position, stored_nodes, tree_file_name
from localstore.pullindex import PullIndex, encode_entry
from localstore.store import LocalStore
from tests.test_merkle import make_leaves, mth

BINS = 3


def address(bin: int, n: int) -> bytes:
    return keccak256(b"%d/%d" % (bin, n))


def naive_leaves(addresses: list[bytes]) -> list[bytes]:
    return [leaf_hash(i + 1, a) for i, a in enumerate(addresses)]


def test_node_positions_are_the_post_order_of_completion() -> None:
    """Appending block after block writes each stored subtree at the position node_position says."""
    written: list[tuple[int, int]] = []
    frontier = Frontier(
        on_node=lambda level, index, h: written.append((level, index)) if level >= TREE_LEVEL else None
    )
    for leaf in make_leaves(40 << TREE_LEVEL):
        frontier.append_leaf(leaf)
    assert [node_position(level, index) for level, index in written] == list(range(len(written)))
    assert stored_nodes(40) == len(written)


@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.integers(0, BINS - 1), st.integers(1, 70)),
            st.tuples(st.just("punch"), st.integers(0, BINS - 1), st.integers(1, 400)),
            st.tuples(st.just("reopen"), st.sampled_from(["clean", "rebuild", "without logs"])),
        ),
        max_size=25,
    ),
    st.data(),
)
@settings(max_examples=60, deadline=None)
def test_property_logs_match_the_naive_tree(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[Any, ...]], data: st.DataObject
) -> None:
    directory = str(tmp_path_factory.mktemp("logs"))
    model: list[list[bytes]] = [[] for _ in range(BINS)]
    index = PullIndex(directory, [0] * BINS)
    logs: BinLogs | None = BinLogs(directory, index, [0] * BINS, rebuild=False)
    try:
        for op in ops:
            if op[0] == "append":
                _, bin, count = op
                first = len(model[bin]) + 1
                new = [address(bin, first + i) for i in range(count)]
                index.append(bin, first, [encode_entry(a, 0, 10) for a in new])
                model[bin].extend(new)
                if logs is not None:
                    logs.append(bin, first, new)
            elif op[0] == "punch" and op[2] <= len(model[op[1]]):
                index.punch(op[1], op[2])  # the address stays: so does the leaf
            elif op[0] == "reopen":
                if logs is not None:
                    logs.close()
                index.close()
                cursors = [len(m) for m in model]
                index = PullIndex(directory, cursors)
                rebuild = op[1] == "rebuild"
                logs = (
                    None if op[1] == "without logs" else BinLogs(directory, index, cursors, rebuild=rebuild)
                )
        if logs is None:  # catch up: the tree files are extended from the pull index
            logs = BinLogs(directory, index, [len(m) for m in model], rebuild=False)
        for bin in range(BINS):
            check_bin(logs, bin, naive_leaves(model[bin]), data)
    finally:
        if logs is not None:
            logs.close()
        index.close()


def check_bin(logs: BinLogs, bin: int, leaves: list[bytes], data: st.DataObject) -> None:
    n = len(leaves)
    assert logs.size(bin) == n
    assert logs.root(bin) == mth(leaves)
    a = data.draw(st.integers(0, n), label=f"size in bin {bin}")
    b = data.draw(st.integers(a, n), label=f"larger size in bin {bin}")
    assert logs.root(bin, a) == mth(leaves[:a])
    assert fold(logs.frontier(bin, a)) == mth(leaves[:a])
    node = {x: mth(leaves[x[1] << x[0] : (x[1] + 1) << x[0]]) for x in range_nodes(a, b)}
    assert logs.range(bin, a, b) == [node[x] for x in range_nodes(a, b)]
    proof = logs.consistency(bin, b, a)
    assert logs.consistency(bin, a, b) == proof
    assert verify_consistency(a, mth(leaves[:a]), b, mth(leaves[:b]), proof) is not None
    if b:
        m = data.draw(st.integers(0, b - 1), label=f"leaf in bin {bin}")
        assert verify_inclusion(leaves[m], m, b, logs.audit_path(bin, m, b), mth(leaves[:b]))


# -- the store ------------------------------------------------------------------------------------

OVERLAY = bytes(32)


def chunks(count: int, seed: int = 0) -> list[Chunk]:
    return [Chunk.from_payload(b"%d-%d" % (seed, i)) for i in range(count)]


def bin_leaves(store: LocalStore, bin: int) -> list[bytes]:
    """The leaves of a bin as the naive model has them: every bin ID's address, holes included."""
    if not store.cursor(bin):
        return []
    raw = (Path(store.path) / f"PULL-{bin:02d}").read_bytes()[: store.cursor(bin) * 40]
    return [leaf_hash(i + 1, raw[i * 40 : i * 40 + 32]) for i in range(store.cursor(bin))]


def assert_logs_match(store: LocalStore) -> None:
    logs = store.logs
    assert logs is not None
    for bin in range(32):
        assert logs.root(bin) == mth(bin_leaves(store, bin)), f"bin {bin}"


def test_put_many_appends_to_the_logs_and_they_survive_a_clean_reopen(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with LocalStore(path, OVERLAY) as store:
        store.put_many(chunks(500))
        for chunk in chunks(40, seed=1):
            store.put(chunk)
        assert_logs_match(store)
        roots = [store.logs.root(b) for b in range(32)]  # type: ignore[union-attr]
    with LocalStore(path, OVERLAY) as store:
        assert store.logs is not None and store.logs.rebuilt == 0
        assert [store.logs.root(b) for b in range(32)] == roots
        store.put_many(chunks(100, seed=2))
        assert_logs_match(store)


def test_a_dropped_chunk_keeps_its_leaf(tmp_path: Path) -> None:
    with LocalStore(tmp_path / "store", OVERLAY) as store:
        store.put_many(chunks(64))
        bin = max(range(32), key=store.cursor)
        before = store.logs.root(bin)  # type: ignore[union-attr]
        victim = next(a for _, a in store.iter_bin(bin, 1))
        store._forget(victim, 1)  # what a damaged read does
        assert not store.has(victim)
        assert victim not in [a for _, a in store.iter_bin(bin, 1)]
        assert store.logs.leaf(bin, 1) == (victim, True)  # type: ignore[union-attr]
        assert store.logs.root(bin) == before == mth(bin_leaves(store, bin))  # type: ignore[union-attr]


def test_a_store_without_logs_catches_up_when_opened_with_them(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with LocalStore(path, OVERLAY) as store:
        store.put_many(chunks(300))
    with LocalStore(path, OVERLAY, logs=False) as store:
        assert store.logs is None
        store.put_many(chunks(300, seed=1))
    with LocalStore(path, OVERLAY) as store:
        assert store.logs is not None and store.logs.rebuilt > 0
        assert_logs_match(store)


def test_a_damaged_tree_file_is_rebuilt_after_an_unclean_stop(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with LocalStore(path, OVERLAY) as store:
        store.put_many(chunks(2000))
        bin = max(range(32), key=store.cursor)
    tree = path / tree_file_name(bin)
    tree.write_bytes(bytes(tree.stat().st_size))  # garbage of the right length
    (path / "ADDRESSES").write_bytes(b"")  # what an unclean stop leaves: an index to rebuild
    with LocalStore(path, OVERLAY) as store:
        assert store.logs is not None and store.logs.rebuilt > 0
        assert_logs_match(store)


WRITER = """
import os, sys, time
from chunks import Chunk
from localstore.store import LocalStore
path, seed = sys.argv[1], int(sys.argv[2])
store = LocalStore(path, bytes(32))
os.write(1, b"r")
i = 0
while True:
    store.put_many([Chunk.from_payload(b"%d-%d-%d" % (seed, i, j)) for j in range(1 + i % 7)])
    i += 1
"""


def test_logs_are_rebuilt_after_sigkill_mid_write(tmp_path: Path) -> None:
    path = tmp_path / "store"
    for seed in range(4):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(seed)], stdout=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdout.read(1) == b"r"
        time.sleep(0.05 + seed * 0.03)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    with LocalStore(path, OVERLAY) as store:
        assert len(store) > 100
        assert store.logs is not None and store.logs.rebuilt > 0
        assert_logs_match(store)


def test_logs_follow_a_pull_index_a_power_cut_tore(tmp_path: Path) -> None:
    """A power cut that loses the last entries of a PULL-nn file (the store fills their bin IDs
    with holes of unknown address): the logs are rebuilt over what the pull index now says.
    (Those entries were never signed over: states are signed only once the disk holds them.)"""
    path = tmp_path / "store"
    with LocalStore(path, OVERLAY) as store:
        store.put_many(chunks(600))
        bin = max(range(32), key=store.cursor)
        cursor = store.cursor(bin)
    pull = path / f"PULL-{bin:02d}"
    os.truncate(pull, pull.stat().st_size - 3 * 40 - 7)
    with LocalStore(path, OVERLAY) as store:
        assert store.cursor(bin) == cursor, "the bin keeps its cursor"
        assert store.logs is not None and store.logs.rebuilt > 0
        assert store.logs.entries(bin, cursor - 3, cursor) == [(bytes(32), True)] * 4
        assert_logs_match(store)
