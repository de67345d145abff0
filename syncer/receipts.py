"""Receipts (takeover): what a downstream signs for, and what an upstream accepts and keeps. Pure.

After the chunks it wanted of a batch are stored, the downstream signs a `Receipt` for the range
of the upstream's log it has taken over, ending with the batch: the bin IDs from the start of
its contiguous taken-over interval to the batch's end, and the upstream's state at that end. A
range is taken over once every entry in it is stored here when its batch completes, holes
included: an entry this node does not hold then is *not* taken over, whether the upstream marked
it as a hole (it could not deliver it) or this node did not want it (outside its storage radius),
so a receipt never covers a chunk this node never got. A receipt says the chunks were stored
here, not that they still are: the reserve may evict them later, when the radius rises. Once
history is synced, the interval is ``[1, latest]`` and each receipt replaces the last: one
receipt per peer and bin.

The upstream checks a receipt (its signature under the downstream's key, its epoch, the root its
own log has at the receipt's end) and keeps the latest per downstream and bin, unless the new one
covers nothing the kept one does not (receipts for disjoint ranges arrive in any order while
history and live sync run side by side).
"""

from __future__ import annotations

from collections.abc import Iterable

from streamer.errors import RemoteProtocolError
from streamer.messages import GoodbyeCode, Receipt
from streamer.states import verify_receipt
from syncer.intervals import Intervals
from syncer.proving import Log

__all__ = ["check_receipt", "replaces", "take_over"]


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


def replaces(kept: Receipt | None, new: Receipt) -> bool:
    """Whether ``new`` is kept instead of ``kept``: unless it covers only what ``kept`` covers."""
    return kept is None or not (kept.start <= new.start and new.end <= kept.end)
