"""Lying upstreams against a real `swarm node` process that verifies provable streams.

The target pulls from an honest upstream process (history, then live chunks posted while the
liars are at work) and from one lying upstream at a time: a `HostilePeer` (tests/test_hostile_peer.py)
that plays a provable upstream from its own in-memory log and signs with its own key. Each lie
must get it dropped with the Goodbye code and reason docs/protocol.md 8.6 names, and nothing of
the range it lied about may be recorded (no interval, no chunk), while the honest sync completes.

1. it leaves an entry out of a historical offer, proving the rest against its state at the end;
2. after an honest history it leaves an entry out of a live offer whose state it signed over the
   full log;
3. after an honest history it signs a live state over a log that does not extend the state it
   signed before (an earlier entry rewritten);
4. it comes back (a new connection) and signs another root for the size of the state the target
   accepted last time: two signed states of one size, kept and shown as evidence.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import trio

from chunks import Chunk
from localstore.store import LocalStore
from pot import MAX_PO, proximity
from streamer.identity import NodeIdentity
from streamer.messages import (
    BIN_COUNT,
    ChunkDelivery,
    CursorsReply,
    CursorsRequest,
    Goodbye,
    GoodbyeCode,
    Receipt,
    Subscribe,
)
from streamer.states import verify_receipt
from swarm.cli.tables import sync_status_text
from swarm.testing import NodeProcess, poll, preload, random_chunks
from syncer.interval_store import IntervalStore
from syncer.proving import proven_offer
from tests.test_hostile_peer import (
    FORGED_BIN,
    HOSTILE_EPOCH,
    PLAIN,
    STEP_TIMEOUT,
    HostilePeer,
    play_upstream_until_subscribed,
    receive_want,
    sync_doc,
)

pytestmark = pytest.mark.process

HISTORY = random_chunks(600, seed=161)
LIVE = random_chunks(40, seed=162)


@dataclass
class Lie:
    liar: HostilePeer  # the connection the target must drop
    code: GoodbyeCode
    reason: str
    synced: list[tuple[int, int]]  # what the target may record of the liar's bin: the honest part
    stored: tuple[Chunk, ...]  # the honest part's chunks
    absent: tuple[Chunk, ...]  # the chunks of the range lied about: never stored


async def honest_history(h: HostilePeer) -> None:
    """Be an honest upstream of the peer's first five chunks (offered, wanted, delivered) until
    the target's receipt for them, checked: signed by the target's key, our log's root at 5."""
    await play_upstream_until_subscribed(h, 5)
    await h.send(h.offer(FORGED_BIN, False, 1, 5, anchor=5))
    want = await receive_want(h)
    assert want.wanted_indices() == [0, 1, 2, 3, 4]
    for i in range(5):
        await h.send(ChunkDelivery(FORGED_BIN, False, 1, i, h.chunks[i].data))
    receipt = await h.receive_until(lambda m: isinstance(m, Receipt))
    assert isinstance(receipt, Receipt) and (receipt.start, receipt.end) == (1, 5)
    assert h.target is not None and receipt.root == h.log.root(FORGED_BIN, 5)
    assert verify_receipt(h.target.public_key, h.overlay, receipt)
    if not any(isinstance(m, Subscribe) and m.live for m in h.seen):
        await h.receive_until(lambda m: isinstance(m, Subscribe) and m.live)


async def omits_from_history(h: HostilePeer, port: int) -> Lie:
    await play_upstream_until_subscribed(h, 5)
    log = h.log.bins[FORGED_BIN]
    shifted = [log[0], log[1], log[3], log[4]]  # entry 3 left out, the rest shifted into [1, 4]
    await h.send(proven_offer(h.log, FORGED_BIN, 1, 4, shifted, [], anchor=5, first=True))
    return Lie(h, GoodbyeCode.BAD_PROOF, "left out", [], (), tuple(h.chunks[:5]))


async def omits_from_live(h: HostilePeer, port: int) -> Lie:
    await honest_history(h)
    h.log.append(FORGED_BIN, *(c.address for c in h.chunks[5:8]))
    state = h.signer.state(FORGED_BIN, HOSTILE_EPOCH, 7, h.log.root(FORGED_BIN, 7))  # over 6 and 7
    entries = [h.chunks[5].address, h.chunks[7].address]  # 7 left out, 8 in its place
    await h.send(proven_offer(h.log, FORGED_BIN, 6, 7, entries, [], live_state=state))
    return Lie(h, GoodbyeCode.BAD_PROOF, "left out", [(1, 5)], tuple(h.chunks[:5]), tuple(h.chunks[5:8]))


async def rewrites_history(h: HostilePeer, port: int) -> Lie:
    await honest_history(h)
    h.log.bins[FORGED_BIN][1] = h.chunks[8].address  # entry 2 rewritten: the state at 5 is gone
    h.log.append(FORGED_BIN, h.chunks[5].address)
    await h.send(h.offer(FORGED_BIN, True, 6, 6))
    absent = (h.chunks[5], h.chunks[8])
    return Lie(h, GoodbyeCode.BAD_PROOF, "does not extend", [(1, 5)], tuple(h.chunks[:5]), absent)


async def equivocates_when_back(h: HostilePeer, port: int) -> Lie:
    await honest_history(h)
    await h.aclose()
    again = await HostilePeer.connect(port, h.identity)  # the same node, a new connection
    again.log.bins[FORGED_BIN] = [c.address for c in h.chunks[:5]]
    again.log.bins[FORGED_BIN][0] = h.chunks[8].address  # another log of the same size
    await again.handshake()
    await again.receive_until(lambda m: isinstance(m, CursorsRequest))
    cursors = [0] * BIN_COUNT
    cursors[FORGED_BIN] = 5
    await again.send(CursorsReply(HOSTILE_EPOCH, tuple(cursors)))
    request = await again.answer_state_request()
    assert (request.size, request.known) == (5, 5), "asked with a proof from the state it accepted"
    return Lie(
        again, GoodbyeCode.INCONSISTENT_STATE, "not consistent", [(1, 5)], tuple(h.chunks[:5]), (h.chunks[8],)
    )


LIES: list[Callable[[HostilePeer, int], Awaitable[Lie]]] = [
    omits_from_history,
    omits_from_live,
    rewrites_history,
    equivocates_when_back,
]


def test_lying_upstreams_are_dropped_and_record_nothing_while_an_honest_one_completes(tmp_path: Path) -> None:
    preload(tmp_path / "up", HISTORY)
    with (
        NodeProcess(tmp_path / "up", extra=PLAIN) as up,
        NodeProcess(tmp_path / "target", peers=[up.p2p], extra=PLAIN) as target,
    ):
        port = target.p2p[1]
        results: list[tuple[Lie, Goodbye | None]] = []

        async def attack() -> None:
            async def post_live() -> None:
                async with httpx.AsyncClient(base_url=up.api) as client:
                    for chunk in LIVE:
                        assert (await client.post("/chunks", content=chunk.data)).status_code == 201
                        await trio.sleep(0.02)

            with trio.fail_after(90):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(post_live)
                    for tell in LIES:
                        h = await HostilePeer.connect(port, NodeIdentity.generate())
                        lie = None
                        try:
                            with trio.fail_after(STEP_TIMEOUT):
                                lie = await tell(h, port)
                                results.append((lie, await lie.liar.goodbye_then_eof()))
                        finally:
                            await h.aclose()
                            if lie is not None:
                                await lie.liar.aclose()

        trio.run(attack)
        assert len(results) == len(LIES)
        for lie, goodbye in results:
            assert goodbye is not None, lie
            assert goodbye.code == lie.code, (lie, goodbye)
            assert lie.reason in goodbye.reason, (lie, goodbye)

        stored = [c for lie, _ in results for c in lie.stored]
        poll(
            lambda: (
                (doc := sync_doc(target))["chunks"] == len(HISTORY) + len(LIVE) + len(stored)
                and doc["fully_synced"]
                and [p["overlay"] for p in doc["peers"]] == [up.overlay]
            ),
            timeout=60,
        )
        doc = sync_doc(target)
        assert doc["totals"]["violations"] == len(LIES)
        assert doc["totals"]["state_equivocations"] == 1
        [evidence] = doc["proofs"]["evidence"]
        assert evidence["upstream"] == results[-1][0].liar.overlay.hex() and evidence["size"] == 5
        assert evidence["roots"][0] != evidence["roots"][1]
        shown = sync_status_text(doc)  # what `swarm sync-status` prints
        assert "states signed twice with different roots" in shown and evidence["roots"][1][:12] in shown
        # per bin, the honest upstream's latest state, verified
        (honest,) = doc["peers"]
        cursors = {b["bin"]: b["cursor"] for b in honest["bins"] if b["cursor"]}
        assert cursors and all(b["state"]["size"] == b["cursor"] for b in honest["bins"] if b["cursor"])

        # and the honest upstream keeps the target's receipts: every bin taken over from 1 on, all of
        # it but what the target itself gave the upstream (the chunks the liars left at the target,
        # which the upstream pulled: their live offers to the target are skipped, and no receipt
        # covers a skipped range: docs/protocol.md 5.13a). A bin's receipts go out at most once a
        # second: the last may follow the sync by that.
        def receipts() -> dict[int, list[tuple[int, int]]]:
            (serving,) = [p for p in sync_doc(up)["peers"] if p["overlay"] == target.overlay]
            runs: dict[int, list[tuple[int, int]]] = {}
            for r in serving["serving"]["receipts"]:
                runs.setdefault(r["bin"], []).append((r["start"], r["end"]))
            return runs

        def cursors_now() -> dict[int, int]:
            # the upstream's bins may still grow: it pulls back what the liars left at the target
            (peer,) = sync_doc(target)["peers"]
            return {b["bin"]: b["cursor"] for b in peer["bins"] if b["cursor"]}

        up_overlay = bytes.fromhex(up.overlay)
        given = Counter(min(proximity(up_overlay, c.address), MAX_PO) for c in stored)

        def taken_over() -> bool:
            runs = receipts()
            for bin, cursor in cursors_now().items():
                taken = sorted(runs.get(bin, []))
                if not taken or taken[0][0] != 1 or taken[-1][1] > cursor:
                    return False
                if sum(end - start + 1 for start, end in taken) < cursor - given[bin]:
                    return False
            return True

        poll(taken_over, timeout=10)
        with httpx.Client(base_url=target.api, timeout=10) as client:
            for chunk in [*HISTORY[::25], *LIVE, *stored]:
                assert client.head(f"/chunks/{chunk.address.hex()}").status_code == 200
            for lie, _ in results:
                for chunk in lie.absent:
                    assert client.head(f"/chunks/{chunk.address.hex()}").status_code == 404
        assert target.stop() == 0
        with LocalStore(tmp_path / "target" / "localstore", bytes.fromhex(target.overlay)) as store:
            intervals = IntervalStore(store)
            for lie, _ in results:
                assert intervals.get(lie.liar.overlay, FORGED_BIN).ranges == lie.synced, lie
