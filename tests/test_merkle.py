"""The bin log's Merkle tree (chunks/merkle.py) against RFC 6962's definitions, written naively.

The model is section 2.1 of RFC 6962 read literally: ``MTH`` splits at the largest power of two
below the size, ``PATH`` recurses the same way. Every shape and proof of the module is checked
against it over random sizes, and every proof must fail once any of its bytes, or the leaves it
covers, change.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunks.bmt import keccak256
from chunks.merkle import (
    EMPTY_ROOT,
    Frontier,
    InvalidProof,
    audit_path_ranges,
    consistency_proof_size,
    fold,
    leaf_hash,
    leaf_hashes,
    node_hash,
    range_nodes,
    root_from_range,
    verify_consistency,
    verify_inclusion,
)

# -- the naive model: RFC 6962 section 2.1, recursively -----------------------------------------


def mth(leaves: list[bytes]) -> bytes:
    n = len(leaves)
    if n == 0:
        return keccak256(b"")
    if n == 1:
        return leaves[0]
    k = 1 << (n - 1).bit_length() - 1
    return node_hash(mth(leaves[:k]), mth(leaves[k:]))


def path(m: int, leaves: list[bytes]) -> list[bytes]:
    n = len(leaves)
    if n == 1:
        return []
    k = 1 << (n - 1).bit_length() - 1
    if m < k:
        return [*path(m, leaves[:k]), mth(leaves[k:])]
    return [*path(m - k, leaves[k:]), mth(leaves[:k])]


def make_leaves(n: int, salt: int = 0) -> list[bytes]:
    return [leaf_hash(i + 1, keccak256(b"%d-%d" % (salt, i))) for i in range(n)]


def naive_node(leaves: list[bytes]) -> Callable[[int, int], bytes]:
    return lambda level, index: mth(leaves[index << level : (index + 1) << level])


def flip(data: bytes, bit: int) -> bytes:
    return data[: bit // 8] + bytes([data[bit // 8] ^ 1 << bit % 8]) + data[bit // 8 + 1 :]


sizes = st.integers(0, 300)


# -- hashes -------------------------------------------------------------------------------------


def test_leaf_and_node_hashes_are_domain_separated() -> None:
    address = bytes(range(32))
    assert leaf_hash(7, address) == keccak256(b"\x00" + (7).to_bytes(8, "big") + address)
    assert node_hash(address, address) == keccak256(b"\x01" + address + address)
    assert EMPTY_ROOT == keccak256(b"") == Frontier().root() == fold([])
    # the same address at another bin ID is another leaf
    assert leaf_hash(7, address) != leaf_hash(8, address)


# -- frontier and root --------------------------------------------------------------------------


@given(sizes, st.integers(0, 3))
@settings(max_examples=150, deadline=None)
def test_frontier_root_is_rfc6962_mth(n: int, salt: int) -> None:
    leaves = make_leaves(n, salt)
    completed: list[tuple[int, int, bytes]] = []
    frontier = Frontier(on_node=lambda level, index, h: completed.append((level, index, h)))
    for leaf in leaves:
        frontier.append_leaf(leaf)
    assert frontier.size == n
    assert frontier.root() == mth(leaves)
    assert len(frontier.hashes) == n.bit_count()
    # every subtree it reports complete is the MTH of its leaves, each once, in post-order
    node = naive_node(leaves)
    assert all(h == node(level, index) for level, index, h in completed)
    assert len(completed) == 2 * n - n.bit_count()
    ends = [(index + 1) << level for level, index, _ in completed]
    assert ends == sorted(ends)
    # the bulk path appends the same tree and reports the same subtrees from a level up
    bulk_reported: list[tuple[int, int, bytes]] = []
    bulk = Frontier(on_node=lambda level, index, h: bulk_reported.append((level, index, h)), report_from=2)
    bulk.append_leaves(leaves[: n // 2])
    bulk.append_leaves(leaves[n // 2 :])
    assert (bulk.size, bulk.hashes) == (frontier.size, frontier.hashes)
    assert bulk_reported == [c for c in completed if c[0] >= 2]
    assert leaf_hashes(5, [bytes(32), b"\x01" * 32]) == [leaf_hash(5, bytes(32)), leaf_hash(6, b"\x01" * 32)]


def test_frontier_refuses_a_misaligned_subtree_and_bad_sizes() -> None:
    frontier = Frontier(3, make_leaves(2))
    with pytest.raises(InvalidProof, match="cannot start at leaf 3"):
        frontier.append_node(1, bytes(32))
    with pytest.raises(InvalidProof, match="has 2 hashes"):
        Frontier(3, make_leaves(3))
    with pytest.raises(InvalidProof, match="32 bytes"):
        Frontier(0).append_leaf(bytes(31))


# -- compact ranges -----------------------------------------------------------------------------


@given(st.integers(0, 600), st.integers(0, 600))
@settings(max_examples=300, deadline=None)
def test_range_nodes_tile_the_range_with_aligned_perfect_subtrees(a: int, b: int) -> None:
    begin, end = min(a, b), max(a, b)
    nodes = range_nodes(begin, end)
    position = begin
    for level, index in nodes:
        assert index << level == position, "consecutive and aligned"
        position += 1 << level
    assert position == end
    levels = [level for level, _ in nodes]
    peak = levels.index(max(levels)) if levels else 0
    assert levels[:peak] == sorted(levels[:peak]) and levels[peak:] == sorted(levels[peak:], reverse=True)
    assert all(levels.count(level) <= 2 for level in set(levels))
    assert len(nodes) <= 2 * max(end.bit_length(), 1)


@given(sizes, st.data())
@settings(max_examples=150, deadline=None)
def test_consistency_proofs_between_random_sizes(n: int, data: st.DataObject) -> None:
    leaves = make_leaves(n)
    a = data.draw(st.integers(0, n))
    node = naive_node(leaves)
    proof = [node(*x) for x in range_nodes(0, a)] + [node(*x) for x in range_nodes(a, n)]
    assert len(proof) == consistency_proof_size(a, n) == consistency_proof_size(n, a)
    frontier = verify_consistency(a, mth(leaves[:a]), n, mth(leaves), proof)
    assert frontier is not None and frontier.size == n and frontier.root() == mth(leaves)
    # any flipped bit, a missing or an extra hash, or other leaves before `a`: refused
    if proof:
        i = data.draw(st.integers(0, len(proof) - 1))
        bad = [*proof]
        bad[i] = flip(bad[i], data.draw(st.integers(0, 255)))
        assert verify_consistency(a, mth(leaves[:a]), n, mth(leaves), bad) is None
        assert verify_consistency(a, mth(leaves[:a]), n, mth(leaves), proof[:-1]) is None
    assert verify_consistency(a, mth(leaves[:a]), n, mth(leaves), [*proof, bytes(32)]) is None
    if a:
        other = make_leaves(n, salt=1)
        assert verify_consistency(a, mth(other[:a]), n, mth(leaves), proof) is None
        assert verify_consistency(a, mth(leaves[:a]), n, mth(other), proof) is None


@given(sizes, st.data())
@settings(max_examples=150, deadline=None)
def test_a_range_of_leaves_rebuilds_the_root_with_its_range_proof(n: int, data: st.DataObject) -> None:
    """What a downstream checks of an offer: the frontier before it, the offered leaves, and the
    compact range after it give the signed root; a changed, missing or swapped leaf does not."""
    leaves = make_leaves(n)
    start = data.draw(st.integers(0, n))
    end = data.draw(st.integers(start, n))
    node = naive_node(leaves)

    left = [node(*x) for x in range_nodes(0, start)]
    right = [node(*x) for x in range_nodes(end, n)]

    def root_with(offered: list[bytes]) -> bytes | None:
        frontier = Frontier(start, left)
        for leaf in offered:
            frontier.append_leaf(leaf)
        try:
            frontier.append_range(n, right)
        except InvalidProof:
            return None
        return frontier.root()

    assert root_with(leaves[start:end]) == mth(leaves)
    if end - start >= 2:
        i = data.draw(st.integers(start, end - 2))
        swapped = [*leaves[start:end]]
        swapped[i - start], swapped[i - start + 1] = swapped[i - start + 1], swapped[i - start]
        assert root_with(swapped) != mth(leaves)
    if end > start:
        foreign = [*leaves[start:end]]
        foreign[-1] = leaf_hash(end, bytes(32))
        assert root_with(foreign) != mth(leaves)
        assert root_with(leaves[start : end - 1]) != mth(leaves)  # one left out


# -- inclusion proofs (RFC 6962 audit paths) ----------------------------------------------------


@given(st.integers(1, 300), st.data())
@settings(max_examples=150, deadline=None)
def test_audit_paths_match_rfc6962_path_and_verify(n: int, data: st.DataObject) -> None:
    leaves = make_leaves(n)
    m = data.draw(st.integers(0, n - 1))
    node = naive_node(leaves)
    proof = [root_from_range(begin, end, node) for begin, end in audit_path_ranges(m, n)]
    assert proof == path(m, leaves)
    root = mth(leaves)
    assert verify_inclusion(leaves[m], m, n, proof, root)
    assert not verify_inclusion(leaf_hash(m + 1, bytes(32)), m, n, proof, root)
    if n > 1:
        assert not verify_inclusion(leaves[m], (m + 1) % n, n, proof, root)
        i = data.draw(st.integers(0, len(proof) - 1))
        bad = [*proof]
        bad[i] = flip(bad[i], data.draw(st.integers(0, 255)))
        assert not verify_inclusion(leaves[m], m, n, bad, root)
        assert not verify_inclusion(leaves[m], m, n, proof[:-1], root)


def test_root_from_range_refuses_a_range_that_is_not_a_subtree() -> None:
    with pytest.raises(ValueError, match="not aligned"):
        root_from_range(3, 7, lambda level, index: bytes(32))
