"""What an upstream sends in provable streams (docs/protocol.md section 8.6), built from a log.

Pure: the log is anything with the few reads of `Log` (the store's `localstore.binlog.BinLogs`,
or an in-memory list in the tests' lying upstreams), states are signed by a `StateSigner`, and the
caller decides which states may be signed (the upstream signs only what the disk holds for sure:
syncer/upstream.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from streamer.errors import RemoteProtocolError
from streamer.messages import (
    HOLES_SIZE,
    MAX_BATCH_SIZE,
    ProvenOffer,
    SignedState,
    SkippedOffer,
    StateReply,
    StateRequest,
)
from streamer.states import StateSigner

__all__ = ["Log", "check_state_request", "hole_mask", "proven_offer", "skipped_offer", "state_reply"]


class Log(Protocol):
    """The reads of a node's bin logs that proofs need (localstore.binlog.BinLogs has them)."""

    def size(self, bin: int) -> int: ...

    def root(self, bin: int, size: int | None = None) -> bytes: ...

    def frontier(self, bin: int, size: int) -> list[bytes]: ...

    def range(self, bin: int, begin: int, end: int) -> list[bytes]: ...

    def consistency(self, bin: int, a: int, b: int) -> list[bytes]: ...


def check_state_request(log: Log, msg: StateRequest) -> None:
    """A downstream may ask for a state and name a known state only within the log."""
    size = log.size(msg.bin)
    if msg.size > size or msg.known > size:
        raise RemoteProtocolError(
            f"state request for bin {msg.bin} at {msg.size} from {msg.known}: the log has {size} leaves"
        )


def state_reply(log: Log, msg: StateRequest, state: SignedState) -> StateReply:
    """The answer to ``msg``: ``state`` (signed at ``msg.size``) and its consistency proof."""
    return StateReply(state, msg.known, tuple(log.consistency(msg.bin, msg.size, msg.known)))


def hole_mask(holes: Sequence[int]) -> bytes:
    """The hole bitvector of a proven offer: bit ``i`` for each index (as in a want vector)."""
    mask = bytearray(HOLES_SIZE)
    for i in holes:
        if not 0 <= i < MAX_BATCH_SIZE:
            raise ValueError(f"hole index {i} is outside 0..{MAX_BATCH_SIZE - 1}")
        mask[i >> 3] |= 1 << (i & 7)
    return bytes(mask)


def proven_offer(
    log: Log,
    bin: int,
    start: int,
    end: int,
    addresses: Sequence[bytes],
    holes: Sequence[int],
    *,
    live_state: SignedState | None = None,
    anchor: int = 0,
    first: bool = False,
) -> ProvenOffer:
    """The offer of bin IDs ``[start, end]`` (``addresses``: every entry, holes included).

    Live: ``live_state`` is the signed state at ``end``. Historical: proven against the state at
    ``anchor`` (the subscription's end), with the frontier before it if it is the ``first``
    offer of its subscription.
    """
    mask = hole_mask(holes)
    if live_state is not None:
        return ProvenOffer(bin, True, start, end, tuple(addresses), mask, live_state)
    left = tuple(log.frontier(bin, start - 1)) if first else ()
    right = tuple(log.range(bin, end, anchor))
    return ProvenOffer(bin, False, start, end, tuple(addresses), mask, None, left, right)


def skipped_offer(log: Log, bin: int, start: int, end: int, state: SignedState) -> SkippedOffer:
    """The live offer of bin IDs ``[start, end]`` that skips them all (chunks the downstream gave
    us): ``state`` (signed at ``end``) and the compact range of the entries."""
    proof = tuple(log.range(bin, start - 1, end))
    return SkippedOffer(bin, start, end, state.epoch, state.root, state.signature, proof)


def sign_state(log: Log, signer: StateSigner, bin: int, epoch: int, size: int) -> SignedState:
    """Our signed state of ``bin`` at ``size`` leaves."""
    return signer.state(bin, epoch, size, log.root(bin, size))
