"""What serving provable streams adds to an upstream (docs/protocol.md 8.6).

For one downstream: offers become `ProvenOffer`s of every entry of their range, holes marked,
with the signed state at their end (live) or the proof against the subscription's end
(historical); state requests are answered with signed states and consistency proofs; the
downstream's receipts are checked and the latest per bin (and taken-over run) kept. Counts the
bytes all this adds to the connection (benches/sync).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from streamer.connection import PeerConnection
from streamer.errors import RemoteProtocolError
from streamer.messages import (
    FRAME_HEADER_SIZE,
    HASH_SIZE,
    HOLES_SIZE,
    SIGNATURE_SIZE,
    GoodbyeCode,
    ProvenOffer,
    Receipt,
    RolledBack,
    SignedState,
    SkippedOffer,
    StateRequest,
)
from streamer.outbox import Priority
from streamer.states import verify_state
from syncer.offers import StreamOffers
from syncer.proof_store import ProofStore
from syncer.proving import check_state_request, proven_offer, skipped_offer, state_reply
from syncer.receipts import check_receipt, merge_receipt
from syncer.signing import StateSigning

__all__ = ["PROOF_BYTE_KINDS", "Provable", "ProvenServing", "RollBack"]

log = logging.getLogger(__name__)

#: What the node does when a downstream proves our store went back: (the state we had signed,
#: our cursor of its bin now). It takes a new store epoch.
RollBack = Callable[[SignedState, int], None]

FRAME_OVERHEAD = FRAME_HEADER_SIZE + 1  # length and type
#: what `ProvenServing.proof_bytes` counts: the proven offers' extra over plain ones, state
#: replies sent, state requests and receipts received
PROOF_BYTE_KINDS = ("offers", "states", "requests", "receipts")


@dataclass(frozen=True)
class Provable:
    """What serving provable streams needs, node-wide: signed states of our logs, and where the
    downstreams' receipts are kept."""

    signing: StateSigning
    proofs: ProofStore
    overlay: bytes
    rolled_back: RollBack = field(default=lambda state, cursor: None)


class ProvenServing:
    """The provable part of serving one downstream on one connection."""

    def __init__(
        self,
        provable: Provable,
        conn: PeerConnection,
        epoch: int,
    ) -> None:
        self.provable = provable
        self.conn = conn
        self.epoch = epoch  # our store's, which receipts must name
        self._stating: set[int] = set()  # bins whose state reply is not queued yet
        self.receipts = 0
        self.proof_bytes = dict.fromkeys(PROOF_BYTE_KINDS, 0)

    def on_state_request(self, msg: StateRequest) -> None:
        signing = self.provable.signing
        check_state_request(signing.logs, msg)
        if msg.bin in self._stating:
            raise RemoteProtocolError(
                f"second state request for bin {msg.bin} before the first was answered",
                GoodbyeCode.OVERLOADED,
            )
        self._stating.add(msg.bin)
        self.proof_bytes["requests"] += FRAME_OVERHEAD + 17
        self.conn.start_soon(self._answer_state, msg)

    async def _answer_state(self, msg: StateRequest) -> None:
        signing = self.provable.signing
        try:
            state = await signing.state(msg.bin, msg.size)
            reply = state_reply(signing.logs, msg, state)
            self.proof_bytes["states"] += FRAME_OVERHEAD + 121 + HASH_SIZE * len(reply.proof)
            await self.conn.send(reply, Priority.RETRIEVAL)
        finally:
            self._stating.discard(msg.bin)

    def on_receipt(self, msg: Receipt) -> None:
        """Check a downstream's receipt and keep the latest of each bin and taken-over run."""
        provable = self.provable
        peer, public_key = self.conn.overlay, self.conn.remote.public_key
        check_receipt(provable.signing.logs, provable.overlay, self.epoch, public_key, msg)
        kept = [k.receipt for k in provable.proofs.receipts_of(peer, msg.bin)]
        keep, drop = merge_receipt(kept, msg)
        if keep:
            provable.proofs.keep_receipt(peer, public_key, msg, drop)
        elif drop:
            provable.proofs.drop_receipts(peer, drop)
        self.receipts += 1
        self.proof_bytes["receipts"] += FRAME_OVERHEAD + 121

    def on_rolled_back(self, msg: RolledBack) -> None:
        """A downstream shows a state we signed in this epoch that our log contradicts (its size
        beyond our cursor, or another root at that size): our store went back, restored from an
        older copy. Anything else is a false claim."""
        signing, state = self.provable.signing, msg.state
        if state.epoch != self.epoch:  # a late word about an epoch we have left: nothing to do
            log.info("a RolledBack of epoch %d, ours is %d: ignored", state.epoch, self.epoch)
            return
        if not verify_state(signing.signer.public_key, self.provable.overlay, state):
            raise RemoteProtocolError("RolledBack: the state is not signed by us", GoodbyeCode.BAD_PROOF)
        cursor = signing.logs.size(state.bin)
        if state.size <= cursor and signing.logs.root(state.bin, state.size) == state.root:
            raise RemoteProtocolError(
                f"RolledBack: our log of bin {state.bin} holds the state at {state.size} it shows"
            )
        self.provable.rolled_back(state, cursor)

    async def offer(
        self,
        offers: StreamOffers,
        start: int,
        end: int,
        offerable: Callable[[int, int, int], list[tuple[bytes, bool]]],
    ) -> ProvenOffer:
        """Every entry of ``[start, end]``, its holes (and damaged chunks) marked, with its proof;
        ``offerable(bin, start, end)`` gives ``(address, hole)`` of each entry, a chunk that
        cannot be served (evicted, damaged) a hole.
        """
        signing = self.provable.signing
        bin = offers.bin
        entries = offerable(bin, start, end)
        addresses: Sequence[bytes] = [address for address, _ in entries]
        holes = [i for i, (_, hole) in enumerate(entries) if hole]
        state = await signing.state(bin, end) if offers.live else None
        msg = proven_offer(
            signing.logs,
            bin,
            start,
            end,
            addresses,
            holes,
            live_state=state,
            anchor=offers.end,
            first=offers.first(start),
        )
        offers.offered(start, end, addresses, holes)
        # what a plain offer of the same entries would not carry: the hole mask and the holes'
        # addresses, a live offer's epoch, root and signature, a historical one's proof
        extra = HOLES_SIZE + HASH_SIZE * len(holes)
        extra += 8 + HASH_SIZE + SIGNATURE_SIZE if state else 1 + HASH_SIZE * (len(msg.left) + len(msg.right))
        self.proof_bytes["offers"] += extra
        return msg

    async def skip(self, offers: StreamOffers, start: int, end: int) -> SkippedOffer:
        """A live offer of ``[start, end]``, every entry a chunk the downstream gave us: the
        signed state at ``end`` and the compact range of the entries, no hashes."""
        signing = self.provable.signing
        msg = skipped_offer(signing.logs, offers.bin, start, end, await signing.state(offers.bin, end))
        offers.offered(start, end, ())
        # a skipped offer is all proof: its range, state, signature and range hashes
        extra = 25 + 8 + HASH_SIZE + SIGNATURE_SIZE + HASH_SIZE * len(msg.proof)
        self.proof_bytes["offers"] += FRAME_OVERHEAD + extra
        return msg
