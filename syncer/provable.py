"""ProvenLogs: what a downstream knows of one upstream's bin logs, and the checks of provable
streams (docs/protocol.md section 8.6). Pure: part of the `DownstreamSession`.

Per bin it keeps the states of the upstream's log it *accepted*: each one signed by the
upstream, of the epoch its handshake signed, and proven to be a prefix of, or to extend, the
others. The largest is ``latest``; the invariant is that every accepted state is a prefix of it,
so the upstream has shown this node one log per bin, never two. It keeps the frontier of
``latest`` (what a live stream appends to) and the roots of the states historical streams are
proven against. Every check failure raises `RemoteProtocolError` naming what the upstream did,
with the Goodbye code `BAD_PROOF` (a proof or a signature that does not check out: an entry
left out, reordered or foreign) or `INCONSISTENT_STATE` (a state that contradicts one accepted
before, or claims another epoch); the session accepts nothing of a range whose check failed.

How states are accepted:

- a `StateReply` answers our `StateRequest(bin, size, known)` with the signed state at ``size``
  and a consistency proof with the accepted state of ``known`` leaves (``latest`` when asked);
- a live `ProvenOffer` carries the signed state at its end: its entries, appended to the
  stream's frontier (the state at the subscription's ``start - 1``, which must be ``latest``),
  must give that root. So a live stream extends ``latest`` offer by offer (the seed's
  continuity check), with no proof hashes at all;
- a historical `ProvenOffer` is proven against the accepted state at the subscription's end:
  the frontier before it (first offer only; then the stream's own), its entries, and the
  compact range after it must fold to that state's root. It accepts no new state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from chunks.merkle import (
    EMPTY_ROOT,
    Frontier,
    InvalidProof,
    consistency_proof_size,
    leaf_hashes,
    range_nodes,
    verify_consistency,
)
from streamer.errors import LocalProtocolError, RemoteProtocolError
from streamer.messages import GoodbyeCode, ProvenOffer, SignedState, SkippedOffer, StateReply, StateRequest
from streamer.states import verify_state
from syncer.session_events import OfferProven, StateAccepted, StateSuperseded

__all__ = ["Equivocation", "ProvenLogs"]

BAD_PROOF = GoodbyeCode.BAD_PROOF
INCONSISTENT = GoodbyeCode.INCONSISTENT_STATE


@dataclass(frozen=True, slots=True)
class Equivocation:
    """Two states of one bin and size with different roots, both signed by the upstream: proof,
    to anyone who has its public key, that it showed two logs."""

    upstream: bytes
    first: SignedState
    second: SignedState


@dataclass
class _Stream:
    anchor: int  # live: the state it extends (start - 1); historical: the state it is proven against
    frontier: Frontier | None  # the log up to the last offer (None: first offer not in yet)


@dataclass
class _Bin:
    latest: SignedState | None = None
    frontier: Frontier | None = None  # of latest, once known in this connection
    roots: dict[int, SignedState] = field(default_factory=dict)  # accepted states still needed
    asked: StateRequest | None = None
    asked_root: bytes = EMPTY_ROOT  # the root at `asked.known`


class ProvenLogs:
    """One upstream's logs as this downstream knows them, on one connection."""

    def __init__(
        self,
        upstream: bytes,
        public_key: bytes,
        epoch: int,
        accepted: Mapping[int, SignedState] | None = None,
    ) -> None:
        """``accepted``: the latest state of each bin accepted on earlier connections (same epoch)."""
        self.upstream = upstream
        self.public_key = public_key
        self.epoch = epoch
        self._bins: dict[int, _Bin] = {}
        for bin, state in (accepted or {}).items():
            if state.epoch == epoch and state.bin == bin:
                self._bin(bin).latest = state
        self._streams: dict[tuple[int, bool], _Stream] = {}
        self.equivocations: list[Equivocation] = []

    def _bin(self, bin: int) -> _Bin:
        entry = self._bins.get(bin)
        if entry is None:
            entry = self._bins[bin] = _Bin()
        return entry

    # -- what the client may ask ----------------------------------------------------------------

    def latest(self, bin: int) -> SignedState | None:
        entry = self._bins.get(bin)
        return entry.latest if entry else None

    def latest_size(self, bin: int) -> int:
        latest = self.latest(bin)
        return latest.size if latest else 0

    def holds(self, bin: int, size: int, *, frontier: bool) -> bool:
        """Whether a stream can be anchored at ``size``: an accepted state there (and, for a live
        one, its frontier, which only ``latest``'s is kept)."""
        if size == 0:
            return True
        entry = self._bins.get(bin)
        if entry is None:
            return False
        if frontier:
            return entry.latest is not None and entry.latest.size == size and entry.frontier is not None
        return size in entry.roots or (entry.latest is not None and entry.latest.size == size)

    def asking(self, bin: int) -> bool:
        entry = self._bins.get(bin)
        return entry is not None and entry.asked is not None

    # -- states ---------------------------------------------------------------------------------

    def request(self, bin: int, size: int) -> StateRequest:
        """The request for the state at ``size``; at most one per bin waits for its reply."""
        entry = self._bin(bin)
        if entry.asked is not None:
            raise LocalProtocolError(f"a state request for bin {bin} is already waiting for its reply")
        if (bin, True) in self._streams and size > self.latest_size(bin):
            raise LocalProtocolError(f"bin {bin}'s live stream advances its state: ask none beyond it")
        known = entry.latest.size if entry.latest else 0
        entry.asked = StateRequest(bin, size, known)
        entry.asked_root = entry.latest.root if entry.latest else EMPTY_ROOT
        return entry.asked

    def on_reply(self, msg: StateReply) -> StateAccepted | StateSuperseded:
        state = msg.state
        entry = self._bins.get(state.bin)
        asked = entry.asked if entry else None
        if entry is None or asked is None:
            raise RemoteProtocolError(f"state of bin {state.bin} nobody asked for")
        where = f"state of bin {state.bin} at {state.size}"
        if state.size != asked.size or msg.known != asked.known:
            stale = " (stale)" if state.size < asked.size else ""
            raise RemoteProtocolError(
                f"{where}{stale} with a proof from {msg.known} answers a request for the state at "
                f"{asked.size} with a proof from {asked.known}",
                INCONSISTENT,
            )
        entry.asked = None
        self._check_signed(state)
        low, high = sorted((state.size, msg.known))
        root_low, root_high = (
            (state.root, entry.asked_root) if state.size <= msg.known else (entry.asked_root, state.root)
        )
        if len(msg.proof) != consistency_proof_size(low, high):
            raise RemoteProtocolError(
                f"{where}: its consistency proof from {msg.known} has the wrong size", BAD_PROOF
            )
        frontier = verify_consistency(low, root_low, high, root_high, msg.proof)
        if frontier is None:
            self._equivocation(entry, state)
            raise RemoteProtocolError(
                f"{where} is not consistent with the state at {msg.known} it signed before", INCONSISTENT
            )
        if state.size > msg.known and (entry.latest is not None and entry.latest.size != msg.known):
            return StateSuperseded(state)  # `latest` moved on meanwhile: nothing proves the two agree
        if state.size < msg.known:  # the frontier at the state's size is the proof's first part
            frontier = Frontier(state.size, msg.proof[: state.size.bit_count()])
        newest = entry.latest is None or state.size > entry.latest.size
        if newest:
            entry.latest, entry.frontier = state, frontier
        elif entry.latest is not None and state.size == entry.latest.size:
            entry.frontier = frontier
        entry.roots[state.size] = state
        return StateAccepted(state, newest)

    def _check_signed(self, state: SignedState) -> None:
        where = f"state of bin {state.bin} at {state.size}"
        if state.epoch != self.epoch:
            raise RemoteProtocolError(
                f"{where} is of epoch {state.epoch}, the handshake signed {self.epoch}", INCONSISTENT
            )
        if not verify_state(self.public_key, self.upstream, state):
            raise RemoteProtocolError(f"{where}: bad signature", BAD_PROOF)

    def _equivocation(self, entry: _Bin, state: SignedState) -> None:
        """Keep the evidence if ``state`` contradicts a signed state of the same size we hold."""
        same = entry.roots.get(state.size)
        if same is None and entry.latest is not None and entry.latest.size == state.size:
            same = entry.latest
        if same is not None and same.root != state.root:
            self.equivocations.append(Equivocation(self.upstream, same, state))

    # -- streams --------------------------------------------------------------------------------

    def subscribe(self, bin: int, live: bool, start: int, end: int) -> None:
        """A subscription is about to be sent: its anchor state must be held."""
        anchor = start - 1 if live else end
        if live and anchor != self.latest_size(bin):
            raise LocalProtocolError(
                f"live stream of bin {bin} from {start}: it must extend the latest state, at "
                f"{self.latest_size(bin)}"
            )
        if not self.holds(bin, anchor, frontier=live):
            raise LocalProtocolError(
                f"{'live' if live else 'historical'} stream of bin {bin}: no state at {anchor}"
            )
        if live and anchor:
            frontier: Frontier | None = self._bins[bin].frontier
            assert frontier is not None
            frontier = frontier.copy()
        else:
            frontier = Frontier() if live else None
        self._streams[(bin, live)] = _Stream(anchor, frontier)

    def unsubscribe(self, bin: int, live: bool) -> None:
        """The stream is over (or being stopped): its anchor state is not needed any more."""
        stream = self._streams.pop((bin, live), None)
        entry = self._bins.get(bin)
        if stream is None or entry is None or live:
            return
        if entry.latest is None or entry.latest.size != stream.anchor:
            entry.roots.pop(stream.anchor, None)

    def check_offer(self, msg: ProvenOffer | SkippedOffer) -> OfferProven:
        """Check a proven (or skipped) offer that the stream rules already accepted (subscribed,
        continuous)."""
        stream = self._streams.get((msg.bin, msg.live))
        if stream is None:
            raise LocalProtocolError(
                f"proven offer of bin {msg.bin} on a stream we did not subscribe with proofs"
            )
        if isinstance(msg, SkippedOffer):
            return self._check_live(msg, stream, msg.proof)
        leaves = leaf_hashes(msg.start, msg.hashes)
        return (
            self._check_live(msg, stream, leaves) if msg.live else self._check_historical(msg, stream, leaves)
        )

    def _check_live(
        self, msg: ProvenOffer | SkippedOffer, stream: _Stream, appended: Sequence[bytes]
    ) -> OfferProven:
        """``appended``: the offer's leaves, or a skipped offer's compact range of them."""
        state = msg.state
        assert state is not None and stream.frontier is not None  # a live offer carries one
        skipped = isinstance(msg, SkippedOffer)
        where = f"{'skipped' if skipped else 'live'} offer [{msg.start}, {msg.end}] of bin {msg.bin}"
        entry = self._bin(msg.bin)
        if entry.latest is not None and stream.frontier.size != entry.latest.size:
            raise LocalProtocolError(f"{where}: the stream no longer extends the latest state")
        self._check_signed(state)
        frontier = stream.frontier.copy()
        try:
            if skipped:
                frontier.append_range(msg.end, appended)
            else:
                frontier.append_leaves(appended)
        except InvalidProof as exc:
            raise RemoteProtocolError(f"{where}: malformed proof: {exc}", BAD_PROOF) from None
        if frontier.root() != state.root:
            raise RemoteProtocolError(
                f"{where}: its {'proof' if skipped else 'entries'} do not extend the state at "
                f"{msg.start - 1} to the signed state at {msg.end} (an entry left out, reordered or "
                "not in the log, or a state that does not extend the previous one)",
                BAD_PROOF,
            )
        stream.frontier = frontier
        entry.latest, entry.frontier = state, frontier.copy()
        return OfferProven(state.root)

    def _check_historical(self, msg: ProvenOffer, stream: _Stream, leaves: list[bytes]) -> OfferProven:
        where = f"historical offer [{msg.start}, {msg.end}] of bin {msg.bin}"
        anchor = self._anchor_state(msg.bin, stream.anchor)
        try:
            if stream.frontier is None:
                frontier = Frontier(msg.start - 1, msg.left)
            elif msg.left:
                raise InvalidProof("only the first offer of a stream carries the frontier before it")
            else:
                frontier = stream.frontier.copy()
            frontier.append_leaves(leaves)
            root_at_end = frontier.root()
            after = frontier.copy()
            if len(msg.right) != len(range_nodes(msg.end, stream.anchor)):
                raise InvalidProof(f"the range after it up to {stream.anchor} needs other hashes")
            after.append_range(stream.anchor, msg.right)
        except InvalidProof as exc:
            raise RemoteProtocolError(f"{where}: malformed proof: {exc}", BAD_PROOF) from None
        if after.root() != anchor.root:
            raise RemoteProtocolError(
                f"{where}: its entries and proof do not give the signed state at {stream.anchor} (an "
                "entry left out, reordered or not in the log)",
                BAD_PROOF,
            )
        stream.frontier = frontier
        return OfferProven(root_at_end)

    def _anchor_state(self, bin: int, size: int) -> SignedState:
        entry = self._bin(bin)
        state = entry.roots.get(size)
        if state is None and entry.latest is not None and entry.latest.size == size:
            state = entry.latest
        if state is None:
            raise LocalProtocolError(
                f"historical stream of bin {bin} proven against {size}: no such state held"
            )
        return state
