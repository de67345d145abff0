"""Batch pushes: one receipt for many chunks (pure), and the uploader's batches through nodes."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunks import Chunk
from pot import proximity
from streamer.identity import NodeIdentity
from streamer.messages import MAX_PUSH_BATCH, PushBatchReceipt
from streamer.push_receipts import BadReceipt, make_batch_receipt, verify_batch_receipt

NETWORK = 1
STORER = NodeIdentity.from_private_bytes(bytes(range(1, 33)))
OVERLAY = STORER.overlay(NETWORK)
ADDRESSES = [Chunk.from_payload(random.Random(7).randbytes(40) + bytes([i])).address for i in range(64)]


def receipt_for(named: list[bytes], radius: int = 0, network_id: int = NETWORK) -> PushBatchReceipt:
    return make_batch_receipt(STORER, network_id=network_id, request_id=3, addresses=named, radius=radius)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(ADDRESSES), min_size=1, max_size=MAX_PUSH_BATCH, unique=True),
    st.data(),
    st.integers(0, 3),
)
def test_a_batch_receipt_attests_exactly_what_it_names_within_the_radius(
    pushed: list[bytes], data: st.DataObject, radius: int
) -> None:
    named = data.draw(st.lists(st.sampled_from(pushed), unique=True))
    storer, covered = verify_batch_receipt(receipt_for(named, radius), network_id=NETWORK, pushed=pushed)
    assert storer == OVERLAY
    # the naive model: a chunk is attested iff the receipt names it and it lies within the radius
    assert set(covered) == {a for a in pushed if a in named and proximity(OVERLAY, a) >= radius}


def test_a_chunk_the_receipt_does_not_name_is_not_covered() -> None:
    pushed = ADDRESSES[:5]
    _, covered = verify_batch_receipt(receipt_for(pushed[:4]), network_id=NETWORK, pushed=pushed)
    assert covered == pushed[:4]
    assert pushed[4] not in covered


@pytest.mark.parametrize(
    "change",
    [
        {"addresses": tuple(ADDRESSES[:3])},  # one address dropped after signing
        {"addresses": tuple(reversed(ADDRESSES[:4]))},  # reordered: another hash
        {"radius": 1},
        {"public_key": NodeIdentity.generate().public_key},
        {"signature": bytes(64)},
    ],
)
def test_a_changed_batch_receipt_proves_nothing(change: dict[str, Any]) -> None:
    receipt = receipt_for(ADDRESSES[:4])
    with pytest.raises(BadReceipt, match="bad signature"):
        verify_batch_receipt(replace(receipt, **change), network_id=NETWORK, pushed=ADDRESSES[:8])
    with pytest.raises(BadReceipt, match="bad signature"):
        verify_batch_receipt(receipt, network_id=NETWORK + 1, pushed=ADDRESSES[:8])


def test_a_batch_receipt_naming_a_chunk_not_pushed_is_refused() -> None:
    receipt = receipt_for(ADDRESSES[:4])
    with pytest.raises(BadReceipt, match="which the batch did not hold"):
        verify_batch_receipt(receipt, network_id=NETWORK, pushed=ADDRESSES[1:4])
