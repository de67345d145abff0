"""Receipts and what provable streams keep: syncer/receipts.py and syncer/proof_store.py (pure),
and StateSigning's rule that a state is signed only over what the disk holds for sure."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from localstore.store import LocalStore
from streamer.errors import RemoteProtocolError
from streamer.identity import NodeIdentity
from streamer.messages import GoodbyeCode, Receipt
from streamer.states import StateSigner
from swarm.testing import random_chunks
from syncer.intervals import Intervals
from syncer.proof_store import ProofStore
from syncer.receipts import check_receipt, merge_receipt, take_over
from syncer.signing import StateSigning
from tests.test_session_proofs import BIN, EPOCH, OVERLAY, make_log, signed

DOWN = NodeIdentity.from_private_bytes(bytes(range(2, 34)))
DOWN_SIGNER = StateSigner(DOWN, DOWN.overlay(1))


class DictState:
    """The state namespace of a store, in a dict."""

    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}

    def get_state(self, key: bytes) -> bytes | None:
        return self.data.get(key)

    def put_state(self, key: bytes, value: bytes) -> None:
        self.data[key] = value

    def delete_state(self, key: bytes) -> None:
        self.data.pop(key, None)

    def iter_state(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        return iter(sorted((k, v) for k, v in self.data.items() if k.startswith(prefix)))

    def write_state_batch(self, puts: Mapping[bytes, bytes], deletes: Iterable[bytes] = ()) -> None:
        deletes = list(deletes)
        assert not set(puts) & set(deletes), "the store refuses a key both put and deleted"
        for key in deletes:
            self.data.pop(key, None)
        self.data.update(puts)


# -- what the downstream takes over -----------------------------------------------------------------


@given(
    st.lists(
        st.tuples(st.integers(1, 60), st.integers(0, 20), st.sets(st.integers(1, 80), max_size=4)),
        max_size=12,
    )
)
@settings(max_examples=200, deadline=None)
def test_take_over_against_a_set_model(batches: list[tuple[int, int, set[int]]]) -> None:
    """The taken-over set is every batch's IDs but their missing holes; a receipt starts at the
    first ID of the contiguous run that ends at the batch's end, and there is none if the end is
    missing."""
    taken, model = Intervals(1), set()
    for start, length, missing in batches:
        end = start + length
        missing = {m for m in missing if start <= m <= end}
        first = take_over(taken, start, end, missing)
        model |= set(range(start, end + 1)) - missing
        assert {n for s, e in taken.ranges for n in range(s, e + 1)} == model
        if end in missing:
            assert first is None
        else:
            assert first is not None and all(n in model for n in range(first, end + 1))
            assert first - 1 not in model


def bare(start: int, end: int) -> Receipt:
    return Receipt(BIN, EPOCH, start, end, bytes(32), bytes(64))


def test_a_receipt_replaces_the_kept_ones_it_covers_unless_one_covers_it() -> None:
    kept = bare(1, 100)
    assert merge_receipt([], kept) == (True, [])
    assert merge_receipt([kept], bare(1, 128)) == (True, [kept])
    assert merge_receipt([kept], bare(50, 100)) == (False, [])
    # a run after a gap (entries the downstream never got): both kept
    assert merge_receipt([kept], bare(102, 120)) == (True, [])
    # the gap filled: one receipt covers both runs again
    assert merge_receipt([kept, bare(102, 120)], bare(1, 130)) == (True, [kept, bare(102, 120)])
    # beyond the limit the lowest run goes, the new one too if it is the lowest
    assert merge_receipt([bare(10, 20), bare(30, 40)], bare(50, 60), limit=2) == (True, [bare(10, 20)])
    assert merge_receipt([bare(10, 20), bare(30, 40)], bare(1, 5), limit=2) == (False, [])


def ids(receipts: Iterable[Receipt]) -> set[int]:
    return {n for r in receipts for n in range(r.start, r.end + 1)}


@given(st.lists(st.tuples(st.integers(1, 60), st.integers(0, 30)), max_size=25), st.integers(1, 6))
@settings(max_examples=200, deadline=None)
def test_kept_receipts_against_a_model(ranges: list[tuple[int, int]], limit: int) -> None:
    """Without a limit the kept receipts cover every bin ID any receipt covered, and none covers
    another; with one, at most ``limit`` are kept, the highest runs."""
    received = [bare(start, start + length) for start, length in ranges]
    for cap in (1000, limit):
        kept: list[Receipt] = []
        for r in received:
            keep, drop = merge_receipt(kept, r, cap)
            assert all(any(d is k for k in kept) for d in drop), "drops only what is kept"
            kept = [k for k in kept if all(k is not d for d in drop)] + ([r] if keep else [])
            assert len(kept) <= cap
            assert not any(a is not b and a.start <= b.start and b.end <= a.end for a in kept for b in kept)
        if cap == 1000:
            assert ids(kept) == ids(received)
        else:
            assert ids(kept) <= ids(received)


# -- the upstream's check -------------------------------------------------------------------------


def receipt(start: int = 1, end: int = 200, *, epoch: int = EPOCH, root: bytes | None = None) -> Receipt:
    log = make_log()
    return DOWN_SIGNER.receipt(OVERLAY, BIN, epoch, start, end, root or log.root(BIN, end))


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (receipt(epoch=EPOCH + 1), "epoch"),
        (receipt(1, 301), "beyond our log"),
        (receipt(root=bytes(32)), "root our log does not have"),
        (Receipt(BIN, EPOCH, 1, 200, make_log().root(BIN, 200), bytes(64)), "bad signature"),
        (
            StateSigner(DOWN, OVERLAY).receipt(bytes(32), BIN, EPOCH, 1, 200, make_log().root(BIN, 200)),
            "bad signature",
        ),
    ],
    ids=["epoch", "beyond the log", "root", "signature", "for another upstream"],
)
def test_the_upstream_refuses_bad_receipts(bad: Receipt, match: str) -> None:
    log = make_log()
    check_receipt(log, OVERLAY, EPOCH, DOWN.public_key, receipt())
    with pytest.raises(RemoteProtocolError, match=match) as info:
        check_receipt(log, OVERLAY, EPOCH, DOWN.public_key, bad)
    assert info.value.code == GoodbyeCode.BAD_PROOF


# -- the proof store ------------------------------------------------------------------------------


def test_the_proof_store_keeps_one_value_per_peer_and_bin() -> None:
    state = DictState()
    store = ProofStore(state)
    log, fork = make_log(), make_log(forged_at=3)
    store.accept(OVERLAY, signed(log, 100))
    store.accept(OVERLAY, signed(log, 300))
    assert store.accepted(OVERLAY, EPOCH) == {BIN: signed(log, 300)}
    assert store.accepted(OVERLAY, EPOCH + 1) == {}, "another epoch: a wiped store, nothing held"
    taken = Intervals(1)
    taken.add(1, 50)
    store.put_taken(OVERLAY, EPOCH, BIN, taken)
    assert store.taken(OVERLAY, EPOCH, BIN) == taken and store.taken(OVERLAY, EPOCH + 1, BIN) == Intervals(1)
    down = DOWN.overlay(1)
    store.keep_receipt(down, DOWN.public_key, receipt(1, 100))
    store.keep_receipt(down, DOWN.public_key, receipt(1, 200), drop=[receipt(1, 100)])
    [kept] = store.receipts()
    assert (kept.downstream, kept.public_key, kept.receipt) == (down, DOWN.public_key, receipt(1, 200))
    store.keep_receipt(down, DOWN.public_key, receipt(210, 250))  # a run after a gap: kept apart
    assert [k.receipt for k in store.receipts_of(down, BIN)] == [receipt(1, 200), receipt(210, 250)]
    store.drop_receipts(down, [receipt(210, 250)])
    assert [k.receipt for k in store.receipts_of(down, BIN)] == [receipt(1, 200)]
    assert store.receipts_of(down, BIN + 1) == []
    store.record_equivocation(OVERLAY, b"k" * 32, signed(log, 300), signed(fork, 300))
    again = ProofStore(state)  # after a restart
    assert again.equivocations == 1
    [evidence] = again.recent_equivocations()
    assert (evidence.first, evidence.second) == (signed(log, 300), signed(fork, 300))
    assert len(state.data) == 5  # state, taken, receipt, evidence and its count: not per chunk


# -- signing only what the disk holds ---------------------------------------------------------------


async def test_a_state_is_signed_only_after_a_flush_covers_it(tmp_path: Path) -> None:
    identity = NodeIdentity.generate()
    overlay = identity.overlay(1)
    with LocalStore(tmp_path / "store", overlay) as store:
        flushed: list[list[int]] = []
        real = store.make_durable

        def spy() -> list[int]:
            cursors = real()
            flushed.append(cursors)
            return cursors

        store.make_durable = spy  # type: ignore[method-assign]
        signing = StateSigning(store, StateSigner(identity, overlay))
        store.put_many(random_chunks(200, seed=3))
        bin = max(range(32), key=store.cursor)
        size = store.cursor(bin)
        async with trio.open_nursery() as nursery:  # several waiters: one flush serves them all
            for _ in range(5):
                nursery.start_soon(signing.state, bin, size)
        assert len(flushed) == 1 and flushed[0][bin] >= size
        state = await signing.state(bin, size - 1)
        assert len(flushed) == 1, "below what was flushed: no new flush"
        assert state.root == store.logs.root(bin, size - 1)  # type: ignore[union-attr]
        store.put_many(random_chunks(50, seed=4))
        await signing.state(bin, store.cursor(bin))
        assert len(flushed) == 2 or store.cursor(bin) == size
