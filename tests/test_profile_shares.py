"""benches.profile_shares files each sample under the innermost part it belongs to."""

from __future__ import annotations

from benches.profile_shares import shares

LINES = [
    "main (swarm/cli/node.py:1);run (trio/_core/_run.py:2);get_events (trio/_core/_io_epoll.py:243) 50",
    "main (swarm/cli/node.py:1);_serve (swarm/net/push_batches.py:9);verify (chunks/bmt.py:110) 30",
    "main (swarm/cli/node.py:1);put_many (localstore/chunkwrites.py:3);_read (localstore/index.py:7) 15",
    "main (swarm/cli/node.py:1);_serve (swarm/net/push_batches.py:9) 5",
]


def test_samples_go_to_their_innermost_part_and_waiting_is_apart() -> None:
    doc = shares(LINES)
    assert doc["samples"] == 100 and doc["busy"] == 0.5
    assert doc["parts"] == {"BMT hashing": 0.6, "store": 0.3, "push sync": 0.1}
