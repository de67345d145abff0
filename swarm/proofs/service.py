"""The node's provable streams, composed in one place: `--provable-sync off|sign|verify`.

- ``off``: the store keeps no bin logs; this node serves and pulls plain streams only (a peer
  that verifies cannot pull from it). For measuring what the rest costs.
- ``sign``: the store keeps its bin logs; as an upstream this node serves provable streams
  (signed states, proven offers) and keeps its downstreams' receipts; as a downstream it pulls
  without checking proofs (and sends no receipts).
- ``verify`` (the default): ``sign``, and as a downstream it checks every proof and state, keeps
  the latest state accepted per peer and bin, and signs receipts.

The node builds one `NodeProofs` and asks it, per connection, for the upstream's `Provable` and
the client's `Verifying`; the `/sync` document reads `snapshot()`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from localstore.store import LocalStore
from streamer.identity import NodeIdentity
from streamer.messages import SignedState
from streamer.states import StateSigner
from swarm.proofs.document import InclusionProof, ReceiptProof
from syncer.proof_store import KeptReceipt, ProofStore, StateEquivocation
from syncer.provable import ProvenLogs
from syncer.proven_upstream import Provable
from syncer.pullsync import Verifying
from syncer.signing import StateSigning

__all__ = ["MODES", "NodeProofs", "NotInLog", "ProofsSnapshot"]

MODES = ("off", "sign", "verify")

log = logging.getLogger(__name__)


class NotInLog(LookupError):
    """No entry of this node's logs names the address (or it keeps no logs)."""


@dataclass(frozen=True)
class ProofsSnapshot:
    mode: str
    states_signed: int
    flushes: int
    equivocations: int
    epoch_renewals: int  # a peer proved our store went back: a new epoch was taken
    recent_equivocations: tuple[StateEquivocation, ...]
    receipts: tuple[KeptReceipt, ...]  # the latest of each downstream, bin and taken-over run


class NodeProofs:
    def __init__(
        self, mode: str, identity: NodeIdentity, overlay: bytes, store: LocalStore, *, network_id: int = 1
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"provable sync must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        self.overlay = overlay
        self.network_id = network_id
        self.public_key = identity.public_key
        self.local = store
        self.store = ProofStore(store)
        self.signer = StateSigner(identity, overlay)
        self.signing = StateSigning(store, self.signer) if mode != "off" else None
        self.renewals = 0  # store epochs taken because a peer proved the store went back
        self.after_renewal: Callable[[], None] = lambda: None  # the node: reconnect every peer

    @staticmethod
    def keeps_logs(mode: str) -> bool:
        return mode != "off"

    def provable(self) -> Provable | None:
        """What this node's upstream side serves provable streams with (None: plain only)."""
        if self.signing is None:
            return None
        return Provable(self.signing, self.store, self.overlay, self.rolled_back)

    def rolled_back(self, state: SignedState, cursor: int) -> None:
        """A downstream showed ``state``, signed by us in this epoch, which our log no longer
        holds (``cursor`` entries now): the store was restored from an older copy and would
        sign other roots for the same sizes. Take a new epoch and reconnect every peer, so each
        syncs us afresh instead of refusing us for good."""
        if state.epoch != self.local.epoch:
            return  # renewed already, on another peer's word
        epoch = self.local.renew_epoch()
        if self.signing is not None:
            self.signing.renew(epoch)
        self.renewals += 1
        log.warning(
            "a peer holds our signed state of bin %d at %d entries, our log has %d: the store went "
            "back (restored from an older copy?); new store epoch %d, peers sync it afresh",
            state.bin,
            state.size,
            cursor,
            epoch,
        )
        self.after_renewal()

    def verifying(self, upstream: bytes, public_key: bytes, epoch: int) -> Verifying | None:
        """What a client pulling from ``upstream`` checks its streams with (None: no checks)."""
        if self.mode != "verify":
            return None
        logs = ProvenLogs(upstream, public_key, epoch, self.store.accepted(upstream, epoch))
        return Verifying(logs, self.signer, self.store)

    async def prove(self, address: bytes) -> InclusionProof:
        """The inclusion proof of ``address`` in this node's log: its entry, our signed state of
        the bin at its current size, the audit path, and the receipts that cover the entry."""
        signing, logs = self.signing, self.local.logs
        if signing is None or logs is None:
            raise NotInLog("this node keeps no bin logs (--provable-sync off)")
        bin = self.local.bin_of(address)
        bin_id = self.local.bin_id_of(address) or logs.find(bin, address)
        if bin_id is None:
            raise NotInLog(f"no entry of bin {bin}'s log names {address.hex()}")
        size = logs.size(bin)
        state = await signing.state(bin, size)
        receipts = tuple(
            ReceiptProof(
                k.downstream, k.public_key, k.receipt, tuple(logs.audit_path(bin, bin_id - 1, k.receipt.end))
            )
            for k in self.store.receipts()
            if k.receipt.bin == bin
            and k.receipt.epoch == state.epoch
            and k.receipt.start <= bin_id <= k.receipt.end <= size
        )
        return InclusionProof(
            network_id=self.network_id,
            overlay=self.overlay,
            public_key=self.public_key,
            address=address,
            bin_id=bin_id,
            state=state,
            path=tuple(logs.audit_path(bin, bin_id - 1, size)),
            receipts=receipts,
        )

    def snapshot(self) -> ProofsSnapshot:
        signing = self.signing
        return ProofsSnapshot(
            mode=self.mode,
            states_signed=signing.signed if signing else 0,
            flushes=signing.flushes if signing else 0,
            equivocations=self.store.equivocations,
            epoch_renewals=self.renewals,
            recent_equivocations=tuple(self.store.recent_equivocations()[:16]),
            receipts=tuple(self.store.receipts()),
        )
