"""BatchTracker: the downstream's node-wide want/complete bookkeeping."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syncer.batches import (
    BatchTracker,
    CompletedBatch,
    Rerequest,
    UnexpectedOffer,
)

A, B, C = b"A" * 32, b"B" * 32, b"C" * 32


def h(i: int) -> bytes:
    return i.to_bytes(32, "big")


def nothing_stored(_: bytes) -> bool:
    return False


def test_wants_only_what_is_not_stored_and_completes_when_all_are_stored() -> None:
    stored = {h(1)}
    t = BatchTracker()
    d = t.offer(A, 3, False, 10, 12, [h(0), h(1), h(2)], stored.__contains__)
    assert d.wanted == [0, 2]
    assert d.completed is None
    assert t.stored(h(0)) == []
    assert t.incomplete(A, 3, False) == 1
    assert t.stored(h(2)) == [CompletedBatch(A, 3, False, 10, 12)]
    assert t.incomplete(A, 3, False) == 0
    assert len(t) == 0


def test_offer_of_stored_chunks_is_complete_at_once() -> None:
    t = BatchTracker()
    d = t.offer(A, 0, True, 5, 6, [h(5), h(6)], lambda _: True)
    assert d.wanted == []
    assert d.completed == CompletedBatch(A, 0, True, 5, 6)
    assert len(t) == 0


def test_a_chunk_offered_by_two_peers_is_wanted_once_and_completes_both() -> None:
    t = BatchTracker()
    assert t.offer(A, 1, False, 1, 1, [h(7)], nothing_stored).wanted == [0]
    assert t.offer(B, 2, False, 1, 1, [h(7)], nothing_stored).wanted == []
    done = t.stored(h(7))
    assert sorted(done) == sorted([CompletedBatch(A, 1, False, 1, 1), CompletedBatch(B, 2, False, 1, 1)])


def test_peer_gone_rerequests_from_another_offerer() -> None:
    t = BatchTracker()
    t.offer(A, 1, False, 1, 2, [h(7), h(8)], nothing_stored)
    t.offer(B, 1, False, 1, 1, [h(7)], nothing_stored)
    assert t.peer_gone(A) == [Rerequest(address=h(7), peer=B)]
    assert t.open_batches(A) == 0
    assert t.requested_from(h(7)) == B
    # B's batch completes when the re-requested chunk arrives (by a direct request)
    assert t.stored(h(7)) == [CompletedBatch(B, 1, False, 1, 1)]


def test_a_delivered_but_invalid_chunk_is_asked_of_another_offerer_when_the_peer_is_dropped() -> None:
    t = BatchTracker()
    t.offer(A, 1, False, 1, 1, [h(7)], nothing_stored)
    t.offer(B, 1, False, 1, 1, [h(7)], nothing_stored)
    # A's data arrives and fails verification: A is dropped, nothing was stored
    assert t.peer_gone(A) == [Rerequest(address=h(7), peer=B)]
    assert t.stored(h(7)) == [CompletedBatch(B, 1, False, 1, 1)]


def test_repeated_or_empty_offer_is_a_violation() -> None:
    t = BatchTracker()
    t.offer(A, 1, False, 1, 1, [h(1)], nothing_stored)
    with pytest.raises(UnexpectedOffer, match="repeats"):
        t.offer(A, 1, False, 1, 1, [h(1)], nothing_stored)
    with pytest.raises(UnexpectedOffer, match="empty"):
        t.offer(A, 1, False, 5, 4, [], nothing_stored)


def test_a_batch_completed_by_an_upload_is_forgotten() -> None:
    t = BatchTracker()
    t.offer(A, 1, False, 1, 1, [h(1)], nothing_stored)
    assert t.stored(h(1)) == [CompletedBatch(A, 1, False, 1, 1)]  # e.g. uploaded locally meanwhile
    assert len(t) == 0 and t.requested_from(h(1)) is None


def test_request_failed_moves_to_another_offerer_or_gives_up() -> None:
    t = BatchTracker()
    t.offer(A, 1, False, 1, 1, [h(1)], nothing_stored)
    t.offer(B, 1, False, 1, 1, [h(1)], nothing_stored)
    assert t.request_failed(h(1), A) == Rerequest(h(1), B)
    assert t.request_failed(h(1), B) == Rerequest(h(1), A)
    t2 = BatchTracker()
    t2.offer(A, 1, False, 1, 1, [h(1)], nothing_stored)
    assert t2.request_failed(h(1), A) is None


# -- model-based -----------------------------------------------------------------------------

PEERS = [A, B, C]
ops = st.lists(
    st.one_of(
        st.tuples(st.just("offer"), st.sampled_from(PEERS), st.lists(st.integers(0, 15), max_size=6)),
        st.tuples(st.just("deliver"), st.sampled_from(PEERS), st.integers(0, 50)),
        st.tuples(st.just("store"), st.integers(0, 15)),
        st.tuples(st.just("gone"), st.sampled_from(PEERS)),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_model(operations: list[tuple]) -> None:
    t = BatchTracker()
    stored: set[bytes] = set()
    # model: open batches by key -> (hashes, peer) ; wanted per key
    batches: dict[tuple[bytes, int], list[bytes]] = {}
    completed: set[tuple[bytes, int]] = set()
    next_start = {p: 1 for p in PEERS}
    for op in operations:
        if op[0] == "offer":
            _, peer, ids = op
            start = next_start[peer]
            next_start[peer] += max(1, len(ids))
            hashes = [h(i) for i in ids]
            d = t.offer(peer, 0, False, start, start + max(0, len(ids) - 1), hashes, stored.__contains__)
            # never want what is stored, never want the same address twice in one offer
            wanted_addrs = [hashes[i] for i in d.wanted]
            assert not set(wanted_addrs) & stored
            assert len(set(wanted_addrs)) == len(wanted_addrs)
            batches[(peer, start)] = hashes
            if d.completed is not None:
                completed.add((peer, start))
        elif op[0] == "deliver":
            _, peer, n = op
            # the peer delivers the n-th (mod) chunk requested from it, if any
            candidates = sorted(
                {a for hashes in batches.values() for a in hashes if t.requested_from(a) == peer}
            )
            if not candidates:
                continue
            address = candidates[n % len(candidates)]
            stored.add(address)
            for done in t.stored(address):
                completed.add((done.peer, done.start))
        elif op[0] == "store":
            address = h(op[1])
            stored.add(address)
            for done in t.stored(address):
                completed.add((done.peer, done.start))
        else:
            peer = op[1]
            t.peer_gone(peer)
            for key in [k for k in batches if k[0] == peer]:
                del batches[key]
                completed.discard(key)
        # a batch is complete exactly when every chunk it offered is stored
        for key, hashes in batches.items():
            assert (key in completed) == set(hashes).issubset(stored), key
        # liveness: every chunk an incomplete batch waits for is requested from a connected offerer
        for key, hashes in batches.items():
            if key in completed:
                continue
            for address in set(hashes) - stored:
                asked = t.requested_from(address)
                assert asked is not None, (key, address)
                assert any(k[0] == asked and address in hs for k, hs in batches.items())
