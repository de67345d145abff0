"""Issue 30's sync cases of the fuzz campaign (swarm/testing/fuzz_sync.py) at the size CI affords;
`benches/fuzz.py` runs them for longer."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from swarm.testing.fuzz_sync import cursor_claims, heartbeats, lost_chunks, proof_docs


@pytest.mark.parametrize(
    ("case", "allowed"),
    [
        (proof_docs, {"valid", "InvalidProofDocument"}),
        (heartbeats, {"bounded"}),
        (lost_chunks, {"exact", "widened"}),
        (cursor_claims, {"clean", "RemoteProtocolError"}),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_each_case_gives_only_the_outcomes_it_may(case: object, allowed: set[str]) -> None:
    rng = random.Random(30)
    outcomes: Counter[str] = Counter()
    for _ in range(300):
        case(rng, outcomes)  # type: ignore[operator]
    assert set(outcomes) <= allowed and sum(outcomes.values()) == 300, outcomes
