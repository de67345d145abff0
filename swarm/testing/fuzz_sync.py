"""Fuzz drivers of issue 30's sync cases (`benches/fuzz.py`, `tests/test_fuzz_sync.py`).

Each takes a seeded `random.Random` and a `Counter` of outcomes, feeds one pure core one random
case and returns how many inputs it fed. An outcome outside what the core may answer raises
(`AssertionError` for a broken bound, the unexpected exception itself otherwise): a bug found.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from typing import Any

from chunks.merkle import leaf_hash
from pot import MAX_PO, proximity
from streamer.identity import NodeIdentity
from streamer.messages import CursorsReply, OfferedHashes
from streamer.states import StateSigner
from swarm.proofs.document import InclusionProof, InvalidProofDocument, parse_proof, proof_json, verify_proof
from swarm.spaces.messages import Kind
from swarm.spaces.spacelog import LogRecord, SpaceLog
from swarm.spaces.timeframe import OrderKey
from swarm.testing.fuzz import feed_session
from syncer.interval_store import _upstream_bins

__all__ = ["cursor_claims", "heartbeats", "lost_chunks", "proof_docs"]

_NODE = NodeIdentity.from_private_bytes(bytes(range(32)))
_OVERLAY = _NODE.overlay(1)
_ADDRESS = b"\xaa" * 32
_STATE = StateSigner(_NODE, _OVERLAY).state(3, 5, 1, leaf_hash(1, _ADDRESS))
_PROOF = proof_json(InclusionProof(1, _OVERLAY, _NODE.public_key, _ADDRESS, 1, _STATE, (), ()))
_JUNK: list[Any] = [-1, 0, 2**64, 2**64 - 1, 10**30, "zz", "", [], {}, None, True, 1.5, [[[[]]]], "ab" * 40]


def proof_docs(rng: random.Random, outcomes: Counter[str]) -> int:
    """A valid proof document with one to three fields replaced by junk, or removed."""
    doc = copy.deepcopy(_PROOF)
    for _ in range(rng.randrange(1, 4)):
        parent, key = _pick_field(rng, doc)
        if rng.random() < 0.2:
            del parent[key]
        else:
            parent[key] = copy.deepcopy(rng.choice(_JUNK))
    try:
        verify_proof(parse_proof(doc))
        outcomes["valid"] += 1
    except InvalidProofDocument:
        outcomes["InvalidProofDocument"] += 1
    return 1


def _pick_field(rng: random.Random, doc: dict[str, Any]) -> tuple[dict[str, Any], str]:
    parent = doc
    while True:
        key = rng.choice(sorted(parent))
        child = parent[key]
        if isinstance(child, dict) and child and rng.random() < 0.6:
            parent = child
            continue
        return parent, key


def heartbeats(rng: random.Random, outcomes: Counter[str]) -> int:
    """Up to 8 members heartbeating around a few messages: one heartbeat per member kept."""
    members = rng.randrange(1, 9)
    log = SpaceLog()
    count = rng.randrange(1, 2000)
    for seq in range(count):
        member = rng.randrange(members)
        kind = Kind.SAY if rng.random() < 0.01 else Kind.HEARTBEAT
        log.append(LogRecord(member, OrderKey(seq + 1, bytes([member]) * 20, seq), (seq,), kind, 0))
    kept = sum(record.kind is Kind.HEARTBEAT for record in log)
    assert kept <= members, (kept, members)
    assert len(log._slots) <= 2 * len(log) + 1
    assert log.end == count
    outcomes["bounded"] += 1
    return count


def lost_chunks(rng: random.Random, outcomes: Counter[str]) -> int:
    """A chunk lost at a power cut: the bins reset for a peer include the one it came in."""
    own, peer, chunk = rng.randbytes(32), rng.randbytes(32), rng.randbytes(32)
    if rng.random() < 0.5:  # near each other, where the bins are hard to tell
        peer = own[: rng.randrange(4)] + peer[rng.randrange(4) :][: 32 - len(own[:4])]
        peer = (peer + bytes(32))[:32]
    ours = min(proximity(chunk, own), MAX_PO)
    theirs = min(proximity(chunk, peer), MAX_PO)
    known = rng.random() < 0.5
    reset = _upstream_bins(own, peer, ours, chunk if known else None)
    assert theirs in reset, (own.hex(), peer.hex(), chunk.hex())
    outcomes["exact" if len(reset) == 1 else "widened"] += 1
    return 1


def cursor_claims(rng: random.Random, outcomes: Counter[str]) -> int:
    """Cursors near 2^64 (the largest bin ID, one past it, absurd ones) and offers near them."""
    huge = [2**64 - 1, 2**64 - 2, 2**64 - 3, 2**63, rng.randrange(2**64)]
    cursors = tuple(rng.choice([0, 5, *huge]) for _ in range(rng.randrange(1, 33)))
    msgs: list[Any] = [CursorsReply(7, cursors)]
    for _ in range(rng.randrange(4)):
        start = rng.choice([1, 2**64 - 3, 2**64 - 2])
        end = min(2**64 - 1, start + rng.randrange(2))
        msgs.append(OfferedHashes(0, rng.random() < 0.5, start, end, (bytes(32),) * (end - start + 1)))
    feed_session(msgs, outcomes)
    return len(msgs)
