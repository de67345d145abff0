"""Receipts (takeover): what a downstream signs for, and what an upstream accepts and keeps. Pure.

After the chunks it wanted of a batch are stored, the downstream signs a `Receipt` for the range
of the upstream's log it has taken over, ending with the batch: the bin IDs from the start of
its contiguous taken-over interval to the batch's end, and the upstream's state at that end. A
range is taken over once every entry in it is stored here when its batch completes, holes
included: an entry this node does not hold then is *not* taken over, whether the upstream marked
it as a hole (it could not deliver it) or this node did not want it (outside its storage radius),
so a receipt never covers a chunk this node never got. A receipt says the chunks were stored
here, not that they still are: the reserve may evict them later, when the radius rises. Once
history is synced with nothing missing, the interval is ``[1, latest]`` and each receipt
replaces the last: one receipt per peer and bin.

The upstream checks a receipt (its signature under the downstream's key, its epoch, the root its
own log has at the receipt's end) and keeps, per downstream and bin, one receipt per run the
downstream took over (`merge_receipt`): a new receipt replaces the kept ones it covers, and is
not kept if a kept one covers it (receipts for disjoint ranges arrive in any order while history
and live sync run side by side). Runs stay apart only where the downstream lacks an entry's
chunk (a hole it never got: the upstream evicted the chunk first): without them, a receipt for
the run after such a gap would replace the one before it, and the upstream could no longer show
that the chunks before the gap were taken over. At most `MAX_RUNS` are kept (the lowest go).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from streamer.errors import RemoteProtocolError
from streamer.messages import GoodbyeCode, Receipt
from streamer.states import verify_receipt
from syncer.intervals import Intervals
from syncer.proving import Log

__all__ = ["MAX_RUNS", "check_receipt", "merge_receipt", "take_over"]

MAX_RUNS = 16
"""Receipts kept per downstream and bin: one per taken-over run, the highest runs."""


def take_over(taken: Intervals, start: int, end: int, missing: Iterable[int]) -> int | None:
    """Add bin IDs ``[start, end]`` but ``missing`` to ``taken``; the first bin ID of the taken
    interval that ends at ``end``, or None if ``end`` itself is missing (no receipt then)."""
    missing = sorted(set(missing))
    first = start
    for hole in missing:
        if first < hole:
            taken.add(first, hole - 1)
        first = hole + 1
    if first <= end:
        taken.add(first, end)
    if end in missing:
        return None
    return next(s for s, e in taken.ranges if s <= end <= e)


def check_receipt(log: Log, upstream: bytes, epoch: int, public_key: bytes, receipt: Receipt) -> None:
    """Raise `RemoteProtocolError` (BAD_PROOF) unless ``receipt`` is one of our log's ranges,
    signed by ``public_key``."""
    where = f"receipt for bin {receipt.bin} [{receipt.start}, {receipt.end}]"
    if receipt.epoch != epoch:
        raise RemoteProtocolError(
            f"{where} names epoch {receipt.epoch}, ours is {epoch}", GoodbyeCode.BAD_PROOF
        )
    if receipt.end > log.size(receipt.bin):
        raise RemoteProtocolError(
            f"{where} goes beyond our log's {log.size(receipt.bin)} entries", GoodbyeCode.BAD_PROOF
        )
    if receipt.root != log.root(receipt.bin, receipt.end):
        raise RemoteProtocolError(
            f"{where} names a root our log does not have at {receipt.end}", GoodbyeCode.BAD_PROOF
        )
    if not verify_receipt(public_key, upstream, receipt):
        raise RemoteProtocolError(f"{where}: bad signature", GoodbyeCode.BAD_PROOF)


def merge_receipt(kept: Sequence[Receipt], new: Receipt, limit: int = MAX_RUNS) -> tuple[bool, list[Receipt]]:
    """Whether to keep ``new`` beside ``kept`` (one downstream's receipts of one bin), and which
    of ``kept`` to drop: those ``new`` covers, and then the lowest beyond ``limit``. Nothing
    changes if a kept receipt covers ``new``."""
    if any(_covers(k, new) for k in kept):
        return False, []
    drop = [k for k in kept if _covers(new, k)]
    candidates = sorted([k for k in kept if not _covers(new, k)] + [new], key=lambda k: (k.start, k.end))
    gone = candidates[: max(0, len(candidates) - limit)]
    return all(k is not new for k in gone), drop + [k for k in gone if k is not new]


def _covers(a: Receipt, b: Receipt) -> bool:
    return a.start <= b.start and b.end <= a.end
