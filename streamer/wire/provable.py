"""Provable streams (docs/protocol.md, section 8.6): signed states of a bin's log, the offers that
prove their entries against them, and the receipts that take a range over.

A state reply and a proven offer carry a signed state and proof hashes whose presence depends
on the offer, so they write and read their bodies themselves (``_write``, ``_read``).
"""

from __future__ import annotations

import struct
from typing import Annotated

from streamer.errors import MessageError
from streamer.wire import body
from streamer.wire.body import BodyReader
from streamer.wire.compound import HashList, Nested, split
from streamer.wire.declare import Message, message, record
from streamer.wire.fields import U64, Bin, BitVector, Bool, Hash, Signature, UInt
from streamer.wire.limits import HASH_SIZE, SIGNATURE_SIZE
from streamer.wire.pullsync import MAX_BATCH_SIZE, WANT_SIZE, check_range

HOLES_SIZE = WANT_SIZE
"""Bytes of a proven offer's hole mask: one bit per offered entry, as in a want vector."""
MAX_PROOF_HASHES = 192
"""Most hashes in a proof: a frontier (at most 64) and a compact range (at most 2 per level)."""

_STREAM = struct.Struct(">BBQQ")  # bin, live, start, end
_STATE_FIXED = struct.Struct(f">BQQ{HASH_SIZE}s{SIGNATURE_SIZE}sQ")  # bin, epoch, size, root, sig, known
_LIVE_STATE = struct.Struct(f">Q{HASH_SIZE}s{SIGNATURE_SIZE}s")  # epoch, root, signature
_PROOF = HashList(MAX_PROOF_HASHES)
_RIGHT = HashList(MAX_PROOF_HASHES - 64)


@record
class SignedState:
    """A state of one bin's log, signed by the upstream: its ``size`` first leaves have ``root``.

    Not a message by itself: carried by :class:`StateReply` and by live :class:`ProvenOffer`. The
    signature covers the upstream's overlay too (streamer/states.py), which the wire leaves out.
    """

    bin: Bin
    epoch: U64
    size: U64
    root: Hash
    signature: Signature


@message(0x18)
class StateRequest(Message):
    """Downstream asks for the signed state of ``bin`` at ``size`` leaves, with the proof that it
    and the state of ``known`` leaves it accepted before (0: none) are one log."""

    bin: Bin
    size: Annotated[int, UInt(64, lo=1)]
    known: U64


@message(0x19)
class StateReply(Message):
    """The state asked for and its consistency proof with the state of ``known`` leaves: the
    frontier at the smaller size, then the compact range up to the larger (chunks/merkle.py)."""

    state: Annotated[SignedState, Nested(SignedState)]
    known: U64
    proof: Annotated[tuple[bytes, ...], _PROOF]

    def _write(self) -> bytes:
        st = self.state
        return _STATE_FIXED.pack(st.bin, st.epoch, st.size, st.root, st.signature, self.known) + b"".join(
            self.proof
        )

    @classmethod
    def _read(cls, r: BodyReader) -> StateReply:
        bin_, epoch, size, root, signature, known = r.fixed(_STATE_FIXED, "bin..known")
        return cls(SignedState(bin_, epoch, size, root, signature), known, _PROOF.read(r, "proof"))

    def __repr__(self) -> str:
        st = self.state
        return (
            f"StateReply(bin={st.bin}, epoch={st.epoch}, size={st.size}, root={st.root.hex()[:12]}, "
            f"known={self.known}, proof=<{len(self.proof)} hashes>)"
        )


@message(0x1A)
class ProvenOffer(Message):
    """An offer of a provable stream: every leaf of bin IDs ``[start, end]`` and the proof that
    they are exactly those leaves of the upstream's log.

    ``hashes`` holds one address per bin ID, holes included; bit ``i`` of ``holes`` (as in a want
    vector) marks an entry the upstream cannot deliver (a dropped chunk): it must not be wanted.
    A live offer carries the signed state at ``end`` (``state``), which the entries must extend
    the stream's last state to. A historical offer carries the frontier at ``start - 1`` (``left``,
    first offer of a subscription only) and the compact range from ``end`` to the subscription's
    end (``right``): with them the entries rebuild the state the downstream asked for there.
    """

    bin: Bin
    live: Bool
    start: U64
    end: U64
    hashes: Annotated[tuple[bytes, ...], HashList(MAX_BATCH_SIZE)]
    holes: Annotated[bytes, BitVector(HOLES_SIZE)] = bytes(HOLES_SIZE)
    state: SignedState | None = None
    left: Annotated[tuple[bytes, ...], HashList(64)] = ()
    right: Annotated[tuple[bytes, ...], _RIGHT] = ()

    def _check(self) -> None:
        n = "ProvenOffer"
        check_range(self)
        count = len(self.hashes)
        if count != self.end - self.start + 1:
            raise MessageError(
                f"{n}.hashes holds {count} hashes, the range [{self.start}, {self.end}] "
                f"has {self.end - self.start + 1} bin IDs"
            )
        if any(self.holes[i >> 3] >> (i & 7) & 1 for i in range(count, MAX_BATCH_SIZE)):
            raise MessageError(f"{n}.holes marks entries beyond the {count} offered")
        if self.live:
            if not isinstance(self.state, SignedState):
                raise MessageError(f"{n}: a live offer carries the signed state at its end")
            if self.state.bin != self.bin or self.state.size != self.end:
                raise MessageError(f"{n}.state must be of bin {self.bin} at size {self.end}")
            if self.left or self.right:
                raise MessageError(f"{n}: a live offer carries no proof hashes")
        elif self.state is not None:
            raise MessageError(f"{n}: a historical offer carries no signed state")

    def _write(self) -> bytes:
        head = _STREAM.pack(self.bin, self.live, self.start, self.end) + self.holes + b"".join(self.hashes)
        if self.state is not None:
            return head + _LIVE_STATE.pack(self.state.epoch, self.state.root, self.state.signature)
        return head + body.U8.pack(len(self.left)) + b"".join(self.left) + b"".join(self.right)

    @classmethod
    def _read(cls, r: BodyReader) -> ProvenOffer:
        bin_, live, start, end = r.fixed(_STREAM, "bin/live/start/end")
        live = r.boolean(live, "live")
        holes = r.raw(HOLES_SIZE, "holes")
        if not 1 <= start <= end < start + MAX_BATCH_SIZE:
            raise r.error(f"range [{start}, {end}] is not 1..{MAX_BATCH_SIZE} bin IDs from 1 on")
        hashes = split(r.raw(HASH_SIZE * (end - start + 1), f"hashes ({end - start + 1} x 32)"), HASH_SIZE)
        if live:
            epoch, root, signature = r.fixed(_LIVE_STATE, "epoch/root/signature")
            return cls(bin_, live, start, end, hashes, holes, SignedState(bin_, epoch, end, root, signature))
        count = r.u8("left count")
        left = split(r.raw(HASH_SIZE * count, f"left ({count} x 32)"), HASH_SIZE)
        return cls(bin_, live, start, end, hashes, holes, None, left, _RIGHT.read(r, "right"))

    def hole_indices(self) -> list[int]:
        """Indices of the entries marked as holes, ascending."""
        return [i for i in range(len(self.hashes)) if self.holes[i >> 3] >> (i & 7) & 1]

    def __repr__(self) -> str:
        return (
            f"ProvenOffer(bin={self.bin}, live={self.live}, start={self.start}, end={self.end}, "
            f"hashes=<{len(self.hashes)}>, holes={self.hole_indices()}, "
            f"state={'yes' if self.state else 'no'}, left=<{len(self.left)}>, right=<{len(self.right)}>)"
        )


@message(0x1D)
class SkippedOffer(Message):
    """A live offer of a provable stream whose every entry, bin IDs ``[start, end]``, is a chunk
    the downstream delivered to the upstream: nothing in it is offered, so the hashes are left
    out. It carries the signed state at ``end`` and the compact range of the entries
    (``proof``), which extends the stream's last state to it as the entries of a live
    `ProvenOffer` would. It is answered with an empty want, like any offer."""

    bin: Bin
    start: U64
    end: U64
    epoch: U64
    root: Hash
    signature: Signature
    proof: Annotated[tuple[bytes, ...], _RIGHT]

    _check = check_range

    @property
    def live(self) -> bool:
        """Only a live stream skips."""
        return True

    @property
    def hashes(self) -> tuple[bytes, ...]:
        """No entry is offered."""
        return ()

    @property
    def state(self) -> SignedState:
        return SignedState(self.bin, self.epoch, self.end, self.root, self.signature)

    def __repr__(self) -> str:
        return (
            f"SkippedOffer(bin={self.bin}, start={self.start}, end={self.end}, epoch={self.epoch}, "
            f"root={self.root.hex()[:12]}, proof=<{len(self.proof)} hashes>)"
        )


@message(0x1B)
class Receipt(Message):
    """The downstream's signed word that it took over bin IDs ``[start, end]`` of the upstream's
    log, whose state at ``end`` has ``root``: it stored every chunk of the range it wanted."""

    bin: Bin
    epoch: U64
    start: U64
    end: U64
    root: Hash
    signature: Signature

    _check = check_range


@message(0x1C)
class RolledBack(Message):
    """Downstream to upstream, just before its ``Goodbye(INCONSISTENT_STATE)``: a state the
    upstream signed in its current epoch whose size its cursors now fall short of. Its store went
    back (restored from an older copy) and reuses bin IDs it signed: the upstream checks its own
    signature and takes a new store epoch, so every downstream syncs it afresh."""

    bin: Bin
    epoch: U64
    size: U64
    root: Hash
    signature: Signature

    @classmethod
    def of(cls, state: SignedState) -> RolledBack:
        return cls(state.bin, state.epoch, state.size, state.root, state.signature)

    @property
    def state(self) -> SignedState:
        return SignedState(self.bin, self.epoch, self.size, self.root, self.signature)
