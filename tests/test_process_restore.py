"""A node's data directory restored from an older snapshot (issue 30 item 9), with real `swarm
node` processes: its verifying peers hold states it signed beyond what the snapshot has, so
they refused it for good (some 85 connect-and-refuse cycles a second). Now the first refusal
carries the proof (`RolledBack`), the node takes a new store epoch and everyone syncs again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from swarm.testing import NodeProcess, poll, preload
from tests.test_process_sync import (
    SYNC_TIMEOUT,
    assert_holds,
    chunk_set,
    no_traceback,
    peer_entry,
    sync_doc,
    synced_with,
)

pytestmark = pytest.mark.process


def test_a_data_dir_restored_from_a_snapshot_takes_a_new_epoch_and_syncs_again(tmp_path: Path) -> None:
    old, new = list(chunk_set(6000, 11)[:200]), list(chunk_set(600, 12)[:200])
    everything = old + new
    a_dir, snapshot = tmp_path / "a", tmp_path / "a-snapshot"
    preload(a_dir, old)
    with NodeProcess(a_dir) as a:
        port = a.p2p[1]
        with NodeProcess(tmp_path / "b", peers=[a.p2p]) as b:
            poll(lambda: synced_with(b, a.overlay, len(old)), timeout=SYNC_TIMEOUT)
            assert a.stop() == 0
            shutil.copytree(a_dir, snapshot)  # the backup
            preload(a_dir, new)  # A goes on, and B takes over what it signed of it
            with NodeProcess(a_dir, extra=["--port", str(port)]) as a2:
                poll(lambda: synced_with(b, a2.overlay, len(everything)), timeout=SYNC_TIMEOUT)
                entry = peer_entry(sync_doc(b), a2.overlay)
                assert entry is not None
                old_epoch = entry["epoch"]
                assert a2.stop() == 0
            shutil.rmtree(a_dir)
            shutil.copytree(snapshot, a_dir)  # restored: the same epoch, a shorter log
            violations_before = sync_doc(b)["totals"]["violations"]
            with NodeProcess(a_dir, extra=["--port", str(port)]) as a3:
                # B refuses A3 once, with the proof; A3 takes a new epoch; B syncs it afresh
                # and A3 gets back from B what the snapshot lacked
                poll(lambda: sync_doc(a3)["proofs"]["epoch_renewals"] == 1, timeout=SYNC_TIMEOUT)
                poll(lambda: synced_with(b, a3.overlay, len(everything)), timeout=SYNC_TIMEOUT)
                poll(lambda: synced_with(a3, b.overlay, len(everything)), timeout=SYNC_TIMEOUT)
                assert_holds(a3, everything, sample=len(everything))
                entry = peer_entry(sync_doc(b), a3.overlay)
                assert entry is not None
                assert entry["epoch"] != old_epoch and entry["epoch"] == sync_doc(a3)["epoch"]
                assert entry["stats"]["resets"] == 1
                # the refusals were few, not a storm (each broken session also backs off)
                refused = sync_doc(b)["totals"]["violations"] - violations_before
                assert 1 <= refused <= 3, refused
                log = (a_dir / "node.log").read_text(errors="replace")
                assert "the store went back" in log
                no_traceback(a3)
            no_traceback(b)
