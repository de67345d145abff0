"""Nodes in one process over loopback TCP: historical and live pull syncing."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import trio

from localstore.chunkfile import CHUNK_FILE_NAME, SLOT_SIZE
from swarm.api.status import sync_document
from swarm.node import Node
from swarm.testing import node_config, preload, random_chunks, start_node, start_synced_pair, wait_for
from syncer.verifier import ChunkVerifier


def fully_synced(node: Node) -> bool:
    return bool(sync_document(node.statistics())["fully_synced"])


def holds_all(node, chunks) -> bool:
    return all(node.store.has(c.address) for c in chunks)


async def test_downstream_pulls_history_then_live(tmp_path: Path) -> None:
    history = random_chunks(300, seed=1)
    later = random_chunks(50, seed=2)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a = await start_node(nursery, node_config(tmp_path / "a"))
            for chunk in history:
                a.intake.store(chunk)
            b = await start_node(nursery, node_config(tmp_path / "b", peers=[("127.0.0.1", a.p2p_port)]))
            await wait_for(lambda: holds_all(b, history))
            for chunk in later:  # live sync
                a.intake.store(chunk)
            await wait_for(lambda: holds_all(b, later))
            await wait_for(lambda: fully_synced(b) and fully_synced(a))
            status = sync_document(b.statistics())
            (peer,) = status["peers"]
            assert peer["overlay"] == a.overlay.hex()
            assert peer["stats"]["delivered"] == 350
            assert peer["stats"]["repeat"] == peer["stats"]["invalid"] == peer["stats"]["unsolicited"] == 0
            assert peer["stats"]["payload_bytes_in"] == sum(len(c.data) for c in history + later)
            # every bin's synced intervals cover [1, cursor]
            for b_status in peer["bins"]:
                if b_status["cursor"]:
                    assert b_status["synced"] == [[1, b_status["cursor"]]], b_status
            assert len(b.store) == 350
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("provable", ["verify", "off"])
async def test_a_node_does_not_offer_a_peer_the_chunks_it_delivered(tmp_path: Path, provable: str) -> None:
    """B syncs A's 300 chunks; B's live streams to A pass over them (skipped offers, or with
    provable streams off plain offers without hashes) yet A's intervals of B still cover every
    bin; 20 chunks stored at B afterwards are offered to A and synced as usual."""
    history = random_chunks(300, seed=5)
    later = random_chunks(20, seed=6)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a = await start_node(nursery, node_config(tmp_path / "a", provable_sync=provable))
            for chunk in history:
                a.intake.store(chunk)
            b_config = node_config(tmp_path / "b", peers=[("127.0.0.1", a.p2p_port)], provable_sync=provable)
            b = await start_node(nursery, b_config)
            await wait_for(lambda: holds_all(b, history) and fully_synced(b))
            cursors = b.store.cursors()

            def a_synced_b() -> bool:  # A's intervals of B's bins reach B's cursors
                (b_at_a,) = sync_document(a.statistics())["peers"]
                synced = {s["bin"]: s["synced"] for s in b_at_a["bins"]}
                return all(synced.get(bin) == [[1, c]] for bin, c in enumerate(cursors) if c)

            await wait_for(a_synced_b)  # skips wait up to DEFAULT_SKIP_IDLE for more of them
            (b_at_a,) = sync_document(a.statistics())["peers"]
            assert b_at_a["stats"]["offered"] == 0 and b_at_a["stats"]["delivered"] == 0
            (a_at_b,) = sync_document(b.statistics())["peers"]
            assert a_at_b["serving"]["skipped"] == 300 and a_at_b["serving"]["offered"] == 0
            for chunk in later:
                b.intake.store(chunk)
            await wait_for(lambda: holds_all(a, later))
            (b_at_a,) = sync_document(a.statistics())["peers"]
            assert b_at_a["stats"]["offered"] == b_at_a["stats"]["delivered"] == 20
            if provable == "verify":  # A's receipts cover what it took over, never a skipped range

                def receipts() -> list[tuple[int, int, int]]:
                    (serving,) = sync_document(b.statistics())["peers"]
                    return sorted((r["bin"], r["start"], r["end"]) for r in serving["serving"]["receipts"])

                now = b.store.cursors()
                expected = [(bin, cursors[bin] + 1, now[bin]) for bin in range(32) if now[bin] > cursors[bin]]
                await wait_for(lambda: receipts() == expected)
            nursery.cancel_scope.cancel()


async def test_a_node_started_on_a_full_store_flushes_it_at_once(tmp_path: Path) -> None:
    """Its first signed state (a peer's first question, when it syncs from it) then waits for no
    flush: the one made at start-up covers everything the store held."""
    chunks = random_chunks(50, seed=8)
    preload(tmp_path / "a", chunks)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a = await start_node(nursery, node_config(tmp_path / "a"))
            signing = a.proofs.signing
            assert signing is not None
            await wait_for(lambda: signing.flushes == 1)
            bin = max(range(32), key=lambda b: a.store.cursor(b))
            await signing.state(bin, a.store.cursor(bin))
            assert signing.flushes == 1 and signing.signed == 1
            nursery.cancel_scope.cancel()


async def test_health_and_addresses_report_what_sync_reports(tmp_path: Path) -> None:
    """``/health`` and ``/addresses`` read the overlay, depth and chunk count without a statistics
    snapshot: they must agree with ``/sync``'s, which takes one."""
    chunks = random_chunks(120, seed=3)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            _, b = await start_synced_pair(nursery, tmp_path, chunks)
            await wait_for(lambda: fully_synced(b))
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{b.api_port}", timeout=30) as client:
                synced = (await client.get("/sync")).json()
                health = (await client.get("/health")).json()
                addresses = (await client.get("/addresses")).json()
            assert synced["chunks"] == 120
            overlay = b.overlay.hex()
            assert health["swarmpy"]["overlay"] == addresses["overlay"] == synced["overlay"] == overlay
            assert addresses["swarmpy"] == {"depth": synced["depth"], "chunks": 120}
            nursery.cancel_scope.cancel()


async def test_three_nodes_one_transfer_per_chunk(tmp_path: Path) -> None:
    """Two upstreams with the same content: each chunk crosses the wire to the downstream once."""
    chunks = random_chunks(400, seed=3)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a = await start_node(nursery, node_config(tmp_path / "a"))
            b = await start_node(nursery, node_config(tmp_path / "b"))
            for chunk in chunks:
                a.intake.store(chunk)
                b.intake.store(chunk)
            peers = [("127.0.0.1", a.p2p_port), ("127.0.0.1", b.p2p_port)]
            c = await start_node(nursery, node_config(tmp_path / "c", peers=peers))
            await wait_for(lambda: holds_all(c, chunks) and fully_synced(c))
            status = sync_document(c.statistics())
            payload_in = sum(p["stats"]["payload_bytes_in"] for p in status["peers"])
            assert payload_in == sum(len(ch.data) for ch in chunks)
            assert sum(p["stats"]["delivered"] for p in status["peers"]) == 400
            nursery.cancel_scope.cancel()


async def test_a_damaged_chunk_is_left_out_of_offers_and_synced_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A slot lost on disk: the upstream drops that chunk and offers the rest, nobody stalls; a
    peer that has the chunk gives it back."""
    chunks = random_chunks(60, seed=4)
    victim = chunks[20]
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a = await start_node(nursery, node_config(tmp_path / "a"))
            for chunk in chunks:
                a.intake.store(chunk)
            with open(Path(a.store.path) / CHUNK_FILE_NAME, "r+b") as file:
                file.seek(20 * SLOT_SIZE)
                file.write(bytes(SLOT_SIZE))
            b = await start_node(nursery, node_config(tmp_path / "b", peers=[("127.0.0.1", a.p2p_port)]))
            others = [c for c in chunks if c is not victim]
            await wait_for(lambda: holds_all(b, others) and fully_synced(b))
            assert not b.store.has(victim.address) and not a.store.has(victim.address)
            assert len(a.store) == 59
            assert "not offering a damaged chunk" in caplog.text
            (peer,) = sync_document(b.statistics())["peers"]
            assert peer["stats"]["missing"] == 0 and peer["stats"]["delivered"] == 59
            c = await start_node(nursery, node_config(tmp_path / "c"))
            c.intake.store(victim)
            await a.connect("127.0.0.1", c.p2p_port)
            await wait_for(lambda: a.store.has(victim.address))
            assert a.store.get(victim.address) == victim
            await wait_for(lambda: b.store.has(victim.address))  # and onwards, live
            nursery.cancel_scope.cancel()


async def test_a_chunk_damaged_after_it_was_synced_is_fetched_again_from_a_peer(tmp_path: Path) -> None:
    """Bit rot at the downstream after the sync: the range is recorded as synced, so pull sync
    would never bring the chunk back; the repair asks the peers directly, and it comes back."""
    from localstore import ChunkDamaged
    from localstore.chunkfile import SLOT_HEADER_SIZE

    chunks = random_chunks(30, seed=9)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            _, b = await start_synced_pair(nursery, tmp_path, chunks)
            await wait_for(lambda: fully_synced(b))
            victim = chunks[7]
            slot = b.store._entry_of(victim.address).slot
            with open(Path(b.store.path) / CHUNK_FILE_NAME, "r+b") as file:
                file.seek(slot * SLOT_SIZE + SLOT_HEADER_SIZE + 100)
                byte = file.read(1)
                file.seek(-1, 1)
                file.write(bytes([byte[0] ^ 0x10]))
            with pytest.raises(ChunkDamaged):
                b.store.get(victim.address)
            await wait_for(lambda: b.store.has(victim.address))
            assert b.store.get(victim.address) == victim
            assert b.repair.repaired == 1
            nursery.cancel_scope.cancel()


async def test_a_node_that_stops_says_goodbye_to_its_peers(tmp_path: Path) -> None:
    """Cancelling a node (SIGINT/SIGTERM in `swarm node`) first sends every peer a Goodbye
    (SHUTDOWN), so they know it left on purpose, then stops its services and closes its store."""
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            b = await start_node(nursery, node_config(tmp_path / "b"))
            with trio.CancelScope() as a_scope:
                async with trio.open_nursery() as a_nursery:
                    config = node_config(tmp_path / "a", peers=[("127.0.0.1", b.p2p_port)])
                    a = await start_node(a_nursery, config)
                    await wait_for(lambda: a.overlay in b.peers)
                    a_scope.cancel()
            await wait_for(lambda: bool(b.sessions.disconnections))
            (gone,) = b.sessions.disconnections
            assert (gone.by, gone.code, gone.reason) == ("remote", "SHUTDOWN", "node shutting down")
            assert a.store.closed
            nursery.cancel_scope.cancel()


async def test_a_node_that_only_dials_makes_no_tls_certificate(tmp_path: Path) -> None:
    """The certificate (30-50 ms of CPU) is made at the first inbound connection: B dials A and
    syncs without one. A, with no peer to dial, made its own at start-up: its first peer does not
    wait for it."""
    chunks = random_chunks(20, seed=4)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            a = await start_node(nursery, node_config(tmp_path / "a", channel="tls"))
            assert a.network.credentials is not None and "_made" in vars(a.network.credentials)
            for chunk in chunks:
                a.intake.store(chunk)
            b = await start_node(
                nursery, node_config(tmp_path / "b", channel="tls", peers=[("127.0.0.1", a.p2p_port)])
            )
            await wait_for(lambda: holds_all(b, chunks))
            assert a.network.credentials is not None and b.network.credentials is not None
            assert "_made" in vars(a.network.credentials)
            assert "_made" not in vars(b.network.credentials)
            nursery.cancel_scope.cancel()


async def test_a_node_syncs_through_a_verifier_its_owner_runs(tmp_path: Path) -> None:
    """`swarm node` starts the verifier's workers before it imports the node: the node takes
    the running verifier, verifies through it, and leaves it running when it stops."""
    history = random_chunks(200, seed=5)
    with trio.fail_after(60):
        async with trio.open_nursery() as outer:
            verifier = await outer.start(ChunkVerifier(1).run)
            (worker,) = verifier._workers
            async with trio.open_nursery() as nursery:
                a = await start_node(nursery, node_config(tmp_path / "a"))
                for chunk in history:
                    a.intake.store(chunk)
                config = node_config(tmp_path / "b", peers=[("127.0.0.1", a.p2p_port)])
                b = await start_node(nursery, config, verifier=verifier)
                assert b.verifier is verifier
                await wait_for(lambda: holds_all(b, history))
                assert sync_document(b.statistics())["verify_workers"] == 1
                nursery.cancel_scope.cancel()
            assert worker.alive and worker.process.returncode is None, "the owner stops it, not the node"
            outer.cancel_scope.cancel()
        assert worker.process.returncode is not None
