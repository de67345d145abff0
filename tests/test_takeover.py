"""Takeover (syncer/takeover.py): a verifying downstream's receipts cover only what it holds.

A `DownstreamSession` verifies offers of an in-memory upstream log (as in
tests/test_session_proofs.py); the `Takeover` is told of each verified offer and of its completed
batch, with a `has` that leaves some entries out: holes the upstream marked, and chunks this node
did not want because they are outside its storage radius (the reserve's radius can rise while a
stream runs). Whatever it is not holding when the batch completes is neither recorded as taken
over nor covered by the receipt it signs, against a set model; what it holds is, and the receipt
checks out at the upstream (syncer/receipts.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from streamer.messages import Message, Receipt, Subscribe, WantedHashes
from streamer.outbox import Priority
from syncer.batches import CompletedBatch
from syncer.proof_store import ProofStore
from syncer.proving import proven_offer
from syncer.receipts import check_receipt
from syncer.session_events import OfferReceived
from syncer.takeover import Takeover, Verifying
from tests.test_receipts import DOWN, DOWN_SIGNER, DictState
from tests.test_session_proofs import BIN, EPOCH, OVERLAY, anchor, entries, make_log, session

SIZE = 300
OFFERS = ((1, 128), (129, 256), (257, 300))


class Connection:
    """What the takeover sends through: the receipts, in order."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self.nursery = nursery
        self.sent: list[Receipt] = []

    async def send(self, msg: Message, priority: Priority = Priority.HISTORICAL) -> None:
        assert isinstance(msg, Receipt)
        self.sent.append(msg)

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        self.nursery.start_soon(fn, *args)


def taken_over(
    holes: set[int], outside: set[int], held_holes: set[int], *, interval: float = 0.0
) -> tuple[set[int], list[Receipt], ProofStore]:
    """Sync a 300-entry bin in three verified offers; ``holes`` (bin IDs) are marked as such by
    the upstream, ``outside`` were not wanted; of the holes, ``held_holes`` are held here anyway.
    Returns the bin IDs recorded as taken over, the receipts sent and the proof store."""
    log = make_log(SIZE)
    s = session(SIZE)
    anchor(s, log, SIZE)
    s.send(Subscribe(BIN, False, 1, SIZE))
    proofs = ProofStore(DictState())
    assert s.logs is not None
    not_held = {log.bins[BIN][i - 1] for i in (holes - held_holes) | outside}
    received: list[Receipt] = []

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            conn = Connection(nursery)
            takeover = Takeover(
                Verifying(s.logs, DOWN_SIGNER, proofs),  # type: ignore[arg-type]
                s,
                conn,
                lambda address: address not in not_held,
                upstream=OVERLAY,
                epoch=EPOCH,
                interval=interval,
            )
            for start, end in OFFERS:
                marked = [i - start for i in sorted(holes) if start <= i <= end]
                offer = proven_offer(
                    log, BIN, start, end, entries(log, start, end), marked, anchor=SIZE, first=start == 1
                )
                event = s.receive(offer)
                assert isinstance(event, OfferReceived) and event.root == log.root(BIN, end)
                takeover.offer_verified(event)
                wanted = [i - start for i in range(start, end + 1) if i not in holes | outside]
                s.send(WantedHashes.from_indices(BIN, False, start, end, wanted))
                takeover.batch_completed(CompletedBatch(OVERLAY, BIN, False, start, end))
                await trio.testing.wait_all_tasks_blocked()
            await trio.sleep(2 * interval)  # the receipts held back meanwhile
            received.extend(conn.sent)

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))
    taken = proofs.taken(OVERLAY, EPOCH, BIN)
    for receipt in received:  # every receipt checks out at the upstream
        check_receipt(log, OVERLAY, EPOCH, DOWN.public_key, receipt)
    return {n for s_, e in taken.ranges for n in range(s_, e + 1)}, received, proofs


bin_ids = st.sets(st.integers(1, SIZE), max_size=6)


@given(bin_ids, bin_ids, bin_ids)
@settings(max_examples=40, deadline=None)
def test_receipts_cover_only_what_is_held_against_a_set_model(
    holes: set[int], outside: set[int], held: set[int]
) -> None:
    outside -= holes
    held &= holes
    not_held = (holes - held) | outside
    taken, receipts, _ = taken_over(holes, outside, held)
    assert taken == set(range(1, SIZE + 1)) - not_held
    ends = [end for _, end in OFFERS if end not in not_held]
    assert [r.end for r in receipts] == ends, "one receipt per batch whose end is held"
    for r in receipts:
        covered = set(range(r.start, r.end + 1))
        assert not covered & not_held, f"receipt [{r.start}, {r.end}] claims an entry not held"
        assert r.start == 1 or r.start - 1 in not_held, "it starts where the held run starts"


def test_a_chunk_not_wanted_for_the_radius_splits_the_receipt() -> None:
    """Entry 200 was outside the radius (not wanted, not stored): the receipt for the second
    batch starts after it, the third's too, and nothing records 200 as taken over."""
    taken, receipts, proofs = taken_over(holes=set(), outside={200}, held_holes=set())
    assert 200 not in taken and len(taken) == SIZE - 1
    assert [(r.start, r.end) for r in receipts] == [(1, 128), (201, 256), (201, 300)]
    assert proofs.taken(OVERLAY, EPOCH, BIN).ranges == [(1, 199), (201, 300)]


def test_receipts_held_back_keep_one_per_run() -> None:
    """Receipts of a bin go out at most once per interval, the latest of a run replacing the
    earlier ones; a run after an entry not held keeps its own: [129, 256] is not lost."""
    _, receipts, _ = taken_over(holes=set(), outside={260}, held_holes=set(), interval=1.0)
    assert [(r.start, r.end) for r in receipts] == [(1, 128), (1, 256), (261, 300)]
    _, receipts, _ = taken_over(holes=set(), outside=set(), held_holes=set(), interval=1.0)
    assert [(r.start, r.end) for r in receipts] == [(1, 128), (1, 300)]
