"""Provable streams from an upstream at capacity (issues 16 and 17), two `swarm node` processes.

The reserve evicts by punching holes in the pull index that keep their addresses, so an
evicted chunk's leaf stays in its bin's log and every signed state stays valid. Here:

1. the upstream holds A (300 chunks); a verifying downstream syncs all of it and sends receipts;
   both stop;
2. B (600 chunks) is added to the upstream's store, which then starts alone with a capacity of
   330: it evicts 570 chunks, the oldest of its farthest bins first (all of bin 0, most of bin
   1): chunks of A the downstream holds, and chunks of B it never got, some before chunks of B
   it keeps;
3. the downstream comes back and pulls the rest. Every offer of a range with holes must verify
   (no violation; the downstream's latest verified state of each bin is the upstream's log at its
   cursor), and what the downstream records as taken over, and every receipt the upstream keeps,
   must be exactly the entries whose chunks the downstream stored: a hole of B is never covered.

The upstream keeps a receipt for each run of entries the downstream took over, so every chunk
of A it evicted is still covered by one: its `/proofs` document verifies offline and shows the
downstream's receipt; one of B the downstream never got verifies too, and no receipt covers it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from localstore.pullindex import ENTRY_SIZE, pull_file_name
from localstore.store import LocalStore
from localstore.storefiles import BINS
from swarm.proofs.document import parse_proof, verify_proof
from swarm.testing import NodeProcess, poll, preload, random_chunks
from syncer.proof_store import ProofStore

pytestmark = pytest.mark.process

A = random_chunks(300, seed=1601)
B = random_chunks(600, seed=1602)
CAPACITY = 330
PLAIN = ["--channel", "plain", "--verify-workers", "0"]
UP_ARGS = [*PLAIN, "--capacity", str(CAPACITY)]


def log_entries(store: LocalStore) -> dict[int, list[tuple[bytes, bool]]]:
    """Every entry (address, hole) of every bin's log."""
    logs = store.logs
    assert logs is not None
    return {b: logs.entries(b, 1, store.cursor(b)) for b in range(BINS) if store.cursor(b)}


def named(data_dir: Path, overlay: bytes) -> set[bytes]:
    """Every address a stopped node's pull index names: each chunk it ever stored."""
    found: set[bytes] = set()
    with LocalStore(data_dir / "localstore", overlay) as store:
        for b in range(BINS):
            path = data_dir / "localstore" / pull_file_name(b)
            raw = path.read_bytes()[: store.cursor(b) * ENTRY_SIZE] if path.exists() else b""
            found |= {raw[at : at + 32] for at in range(0, len(raw), ENTRY_SIZE)}
    return found


def receipts_for(up: NodeProcess, downstream: str) -> dict[int, tuple[int, int]]:
    for peer in up.sync()["peers"]:
        if peer["overlay"] == downstream:
            return {r["bin"]: (r["start"], r["end"]) for r in peer["serving"]["receipts"]}
    return {}


def settled_receipts(up: NodeProcess, downstream: str) -> dict[int, tuple[int, int]]:
    """The receipts once no new one came for a while (a bin's go out at most once a second)."""
    last: list[dict[int, tuple[int, int]]] = [{}]

    def still() -> bool:
        now = receipts_for(up, downstream)
        same, last[0] = now == last[0], now
        return same

    poll(still, timeout=30, interval=1.5)
    return last[0]


def verified_states(down: NodeProcess, upstream: str) -> dict[int, tuple[int, str]]:
    for peer in down.sync()["peers"]:
        if peer["overlay"] == upstream:
            return {
                b["bin"]: (b["state"]["size"], b["state"]["signature"]) for b in peer["bins"] if b["state"]
            }
    return {}


def test_a_verifying_downstream_pulls_from_an_upstream_at_capacity(tmp_path: Path) -> None:
    up_dir, down_dir = tmp_path / "up", tmp_path / "down"
    up_overlay = preload(up_dir, A)

    # 1. the downstream takes A over
    with NodeProcess(up_dir, extra=UP_ARGS) as up, NodeProcess(down_dir, peers=[up.p2p], extra=PLAIN) as down:
        poll(lambda: down.sync()["chunks"] == len(A) and down.sync()["fully_synced"], timeout=60)
        cursors = {b["bin"]: b["cursor"] for b in down.sync()["peers"][0]["bins"] if b["cursor"]}
        poll(lambda: receipts_for(up, down.overlay) == {b: (1, c) for b, c in cursors.items()}, timeout=30)
        down_overlay = bytes.fromhex(down.overlay)
        assert up.stop() == 0 and down.stop() == 0

    # 2. more than the capacity: the upstream, alone, evicts
    preload(up_dir, B)
    up = NodeProcess(up_dir, extra=UP_ARGS).start()
    try:
        poll(lambda: up.sync()["reserve"]["size"] <= CAPACITY, timeout=60)
        assert up.sync()["reserve"]["evicted"] >= len(A) + len(B) - CAPACITY

        # 3. the downstream pulls the rest, holes and all
        with NodeProcess(down_dir, peers=[up.p2p], extra=PLAIN) as down:

            def synced() -> bool:
                doc = down.sync()
                bins = {b["bin"]: b["cursor"] for p in doc["peers"] for b in p["bins"] if b["cursor"]}
                states = verified_states(down, up.overlay)
                return (
                    doc["fully_synced"]
                    and bool(bins)
                    and states == {b: (c, "ok") for b, c in bins.items()}
                    and receipts_for(up, down.overlay).keys() >= {b for b in bins if b in states}
                )

            poll(synced, timeout=90)
            assert down.sync()["totals"]["violations"] == 0, "every offer with holes verified"
            kept = settled_receipts(up, down.overlay)
            chunks = up.sync()["chunks"]
            proofs = {c.address: up.get(f"/proofs/{c.address.hex()}").json() for c in (*A, *B)}
            assert down.stop() == 0
        assert up.stop() == 0
    finally:
        up.kill()

    assert chunks <= CAPACITY
    stored_down = named(down_dir, down_overlay)
    with LocalStore(up_dir / "localstore", up_overlay) as store:
        epoch = store.epoch
        entries = log_entries(store)
    never_got = [
        (b, i)
        for b, bin_entries in entries.items()
        for i, (address, hole) in enumerate(bin_entries, 1)
        if address not in stored_down
    ]
    assert never_got, "some chunks were evicted before the downstream could take them over"
    assert all(entries[b][i - 1][1] for b, i in never_got), "only holes go untaken"
    assert any(hole and address in stored_down for e in entries.values() for address, hole in e), (
        "some chunks the downstream took over were evicted since"
    )

    # what the downstream recorded as taken over: exactly the entries it stored
    with LocalStore(down_dir / "localstore", down_overlay) as store:
        taken = {b: ProofStore(store).taken(up_overlay, epoch, b) for b in entries}
    for b, bin_entries in entries.items():
        ids = {n for s, e in taken[b].ranges for n in range(s, e + 1)}
        held = {i for i, (address, _) in enumerate(bin_entries, 1) if address in stored_down}
        assert ids == held, f"bin {b}: taken over {sorted(ids ^ held)[:5]}... differs from what is stored"

    # every receipt the upstream keeps covers only entries the downstream stored
    assert kept
    for b, (start, end) in kept.items():
        covered = entries[b][start - 1 : end]
        assert all(address in stored_down for address, _ in covered), (b, start, end)
        assert start == 1 or entries[b][start - 2][0] not in stored_down

    # proofs of evicted chunks: valid anywhere; a receipt for each the downstream took over
    present = {address for e in entries.values() for address, hole in e if not hole}
    lost = [c.address for c in B if c.address not in stored_down]
    taken_then_evicted = [c.address for c in A if c.address not in present]
    assert lost and taken_then_evicted
    for address in [*lost[:20], *taken_then_evicted]:
        document = parse_proof(proofs[address])
        assert verify_proof(document)
        took_over = int(address in stored_down)
        assert len(document.receipts) == took_over, f"{address.hex()}: {len(document.receipts)} receipts"
