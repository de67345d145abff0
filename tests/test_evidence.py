"""Equivocations: a second signed content at a stored SOC address is kept as evidence, counted,
never stored over the first; the log survives a restart and keeps the last MAX_KEPT pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunks import Chunk
from chunks.ethkey import Secp256k1Key
from chunks.soc import equivocation, make_soc
from localstore.store import LocalStore
from syncer import evidence
from syncer.evidence import EquivocationLog
from syncer.intake import ChunkIntake
from tests.test_intervals import DictState

KEY = Secp256k1Key(bytes(range(1, 33)))
ID = bytes(32)


def soc_chunk(payload: bytes, key: Secp256k1Key = KEY, id: bytes = ID) -> Chunk:
    return Chunk.from_soc(make_soc(key, id, payload))


def test_a_second_content_under_one_id_is_evidence_and_the_first_stays(tmp_path: Path) -> None:
    first, second = soc_chunk(b"first"), soc_chunk(b"second")
    assert first.address == second.address
    with LocalStore(tmp_path / "store", bytes(32)) as store:
        log = EquivocationLog(store)
        intake = ChunkIntake(store, evidence=log)
        assert intake.store(first)
        assert not intake.store(first)  # the same chunk again: nothing to see
        assert log.count == 0
        assert not intake.store(second)
        assert store.get(first.address).data == first.data
        (record,) = log.recent()
        assert (record.address, record.first, record.second) == (first.address, first.data, second.data)
        assert equivocation(record.address, record.first, record.second) is not None
    with LocalStore(tmp_path / "store", bytes(32)) as store:
        assert EquivocationLog(store).count == 1 and len(EquivocationLog(store).recent()) == 1


def test_a_content_chunk_repeated_is_no_equivocation() -> None:
    state = DictState()
    log = EquivocationLog(state)
    chunk = Chunk.from_payload(b"plain content")

    class Store:
        def put_many(self, chunks: list[Chunk], *, verified: bool = False) -> int:
            return 0

        def has(self, address: bytes) -> bool:
            return True

        def get(self, address: bytes) -> Chunk:
            return chunk

        def cursors(self) -> list[int]:
            return [0] * 32

    ChunkIntake(Store(), evidence=log).store(chunk)
    assert log.count == 0


def test_only_the_last_pairs_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evidence, "MAX_KEPT", 3)
    log = EquivocationLog(DictState())
    for i in range(5):
        log.record(bytes([i]) * 32, b"a", b"b")
    assert log.count == 5
    assert [e.sequence for e in log.recent()] == [5, 4, 3]
