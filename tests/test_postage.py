"""Postage batches without a chain: the pure accounting against a naive model, and the book in LevelDB.

The naive model of a batch keeps, per bucket, the distinct chunks in the order they were first
stamped: an immutable batch takes a bucket's first ``capacity`` chunks and refuses the rest, a
mutable one gives the k-th chunk index ``k mod capacity``; a chunk stamped again keeps its index.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from localstore.store import LocalStore
from swarm.postage.batches import Batch, BatchFull, InvalidBatch, Issuer, bucket_of
from swarm.postage.book import BatchBook, UnknownBatch

OWNER = bytes(range(20))


def batch(depth: int = 17, *, immutable: bool = True, amount: int = 1000) -> Batch:
    return Batch(b"\x01" * 32, OWNER, depth, amount, immutable)


def address(bucket: int, tail: int) -> bytes:
    return bucket.to_bytes(2, "big") + tail.to_bytes(30, "big")


def test_a_chunk_s_bucket_is_the_first_16_bits_of_its_address() -> None:
    assert bucket_of(bytes.fromhex("abcd") + b"\xff" * 30) == 0xABCD
    assert bucket_of(b"\x80" + bytes(31), 1) == 1
    assert batch(17).bucket_capacity == 2 and batch(20).bucket_capacity == 16


def test_a_full_immutable_batch_refuses_and_stamps_nothing_of_the_refused_call() -> None:
    issuer = Issuer(batch(17))
    issuer.stamp_all([address(7, 1), address(7, 2)])
    with pytest.raises(BatchFull, match="batch is overissued: bucket 7"):
        issuer.stamp_all([address(9, 1), address(7, 3)])
    assert address(9, 1) not in issuer.stamped and issuer.buckets == {7: 2}
    # stamping an already stamped chunk again is free, even in a full bucket
    assert [s.index for s in issuer.stamp_all([address(7, 2), address(7, 1)])] == [1, 0]


def test_a_full_mutable_batch_wraps_to_index_zero() -> None:
    issuer = Issuer(batch(17, immutable=False))
    stamps = issuer.stamp_all([address(3, t) for t in range(5)])
    assert [s.index for s in stamps] == [0, 1, 0, 1, 0]
    assert issuer.utilization == 2 and issuer.buckets == {3: 1}


def test_top_up_and_dilute_change_the_batch_as_the_contract_does() -> None:
    issuer = Issuer(batch(17, amount=1000))
    issuer.stamp_all([address(1, 1), address(1, 2)])
    issuer.top_up(24)
    assert issuer.batch.amount == 1024
    issuer.dilute(19)  # two levels deeper: four times the room, a quarter of the balance per chunk
    assert (issuer.batch.depth, issuer.batch.amount, issuer.batch.bucket_capacity) == (19, 256, 8)
    assert [s.index for s in issuer.stamp_all([address(1, 3)])] == [2]  # stamps already issued stay
    with pytest.raises(InvalidBatch, match="above 19"):
        issuer.dilute(19)
    with pytest.raises(InvalidBatch, match="at least 1"):
        issuer.top_up(0)
    with pytest.raises(InvalidBatch, match="invalid depth 16"):
        batch(16)


class NaiveBatch:
    def __init__(self, capacity: int, immutable: bool) -> None:
        self.capacity, self.immutable = capacity, immutable
        self.order: dict[int, list[bytes]] = {}

    def stamp_all(self, addresses: list[bytes]) -> list[int] | None:
        new = [a for a in dict.fromkeys(addresses) if a not in self.index_map()]
        if self.immutable:
            for bucket in {bucket_of(a) for a in new}:
                if len(self.order.get(bucket, [])) + sum(bucket_of(a) == bucket for a in new) > self.capacity:
                    return None
        for a in new:
            self.order.setdefault(bucket_of(a), []).append(a)
        return [self.index_map()[a] for a in addresses]

    def index_map(self) -> dict[bytes, int]:
        return {a: k % self.capacity for chunks in self.order.values() for k, a in enumerate(chunks)}

    def utilization(self) -> int:
        return max((min(len(c), self.capacity) for c in self.order.values()), default=0)


calls = st.lists(
    st.lists(st.builds(address, st.integers(0, 3), st.integers(0, 9)), min_size=1, max_size=6), max_size=12
)


@given(calls=calls, immutable=st.booleans(), depth=st.integers(17, 19))
def test_the_issuer_agrees_with_the_naive_model(
    calls: list[list[bytes]], immutable: bool, depth: int
) -> None:
    issuer = Issuer(batch(depth, immutable=immutable))
    model = NaiveBatch(1 << (depth - 16), immutable)
    for call in calls:
        expected = model.stamp_all(call)
        if expected is None:
            before = dict(issuer.stamped)
            with pytest.raises(BatchFull):
                issuer.stamp_all(call)
            assert issuer.stamped == before
        else:
            assert [s.index for s in issuer.stamp_all(call)] == expected
        assert issuer.stamped == model.index_map()
        assert issuer.utilization == model.utilization()
        counts = issuer.bucket_counts()
        for bucket, chunks in model.order.items():
            full = len(chunks) % model.capacity or model.capacity
            assert counts[bucket] == (len(chunks) if immutable else full)


def test_the_book_keeps_batches_and_their_stamps_across_a_restart(tmp_path: Path) -> None:
    with LocalStore(tmp_path / "store", bytes(32)) as store:
        book = BatchBook(store, OWNER)
        kept = book.create(10_000, 17, label="site")
        mutable = book.create(5, 18, immutable=False)
        book.stamp(kept.id, [address(4, 1), address(4, 2)])
        book.stamp(mutable.id, [address(4, 1)])
        book.top_up(mutable.id, 5)
        book.dilute(mutable.id, 19)
        assert kept.owner == OWNER and kept.id != mutable.id
    with LocalStore(tmp_path / "store", bytes(32)) as store:
        book = BatchBook(store, OWNER)
        assert [i.batch.id for i in book.issuers()] == [kept.id, mutable.id]
        again = book.issuer(kept.id)
        assert again.batch.label == "site" and again.utilization == 2 and again.buckets == {4: 2}
        with pytest.raises(BatchFull):
            book.stamp(kept.id, [address(4, 3)])
        assert (
            book.issuer(mutable.id).batch.depth == 19 and book.issuer(mutable.id).batch.amount == 5
        )  # (5 + 5) / 2
        assert [s.index for s in book.stamp(kept.id, [address(4, 2)])] == [1]
        with pytest.raises(UnknownBatch):
            book.stamp(b"\x09" * 32, [address(4, 1)])
