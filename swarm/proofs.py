"""The node's provable streams (issue 16), composed in one place: `--provable-sync off|sign|verify`.

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

from dataclasses import dataclass

from localstore import LocalStore
from streamer.identity import NodeIdentity
from streamer.states import StateSigner
from syncer.proof_store import KeptReceipt, ProofStore, StateEquivocation
from syncer.provable import ProvenLogs
from syncer.pullsync import Verifying
from syncer.signing import StateSigning
from syncer.upstream import Provable

__all__ = ["MODES", "NodeProofs", "ProofsSnapshot"]

MODES = ("off", "sign", "verify")


@dataclass(frozen=True)
class ProofsSnapshot:
    mode: str
    states_signed: int
    flushes: int
    equivocations: int
    recent_equivocations: tuple[StateEquivocation, ...]
    receipts: tuple[KeptReceipt, ...]  # the latest receipt of each downstream and bin


class NodeProofs:
    def __init__(self, mode: str, identity: NodeIdentity, overlay: bytes, store: LocalStore) -> None:
        if mode not in MODES:
            raise ValueError(f"provable sync must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        self.overlay = overlay
        self.store = ProofStore(store)
        self.signer = StateSigner(identity, overlay)
        self.signing = StateSigning(store, self.signer) if mode != "off" else None

    @staticmethod
    def keeps_logs(mode: str) -> bool:
        return mode != "off"

    def provable(self) -> Provable | None:
        """What this node's upstream side serves provable streams with (None: plain only)."""
        if self.signing is None:
            return None
        return Provable(self.signing, self.store, self.overlay)

    def verifying(self, upstream: bytes, public_key: bytes, epoch: int) -> Verifying | None:
        """What a client pulling from ``upstream`` checks its streams with (None: no checks)."""
        if self.mode != "verify":
            return None
        logs = ProvenLogs(upstream, public_key, epoch, self.store.accepted(upstream, epoch))
        return Verifying(logs, self.signer, self.store)

    def snapshot(self) -> ProofsSnapshot:
        signing = self.signing
        return ProofsSnapshot(
            mode=self.mode,
            states_signed=signing.signed if signing else 0,
            flushes=signing.flushes if signing else 0,
            equivocations=self.store.equivocations,
            recent_equivocations=tuple(self.store.recent_equivocations()[:16]),
            receipts=tuple(self.store.receipts()),
        )
