"""swarm.live.pruning against a naive model (hypothesis), and the rules one by one."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from streamer.messages import StreamKind
from swarm.live.messages import Chain
from swarm.live.pruning import PauseChange, Pruning

PEERS = [bytes([i]) * 32 for i in range(5)]
CHAINS = [Chain(StreamKind.FEED, bytes([i]) * 20, b"t" * 32) for i in range(4)]


class NaiveModel:
    """The same rules, written the plainest way: lists, scans, no indexes."""

    def __init__(self, eager: int, max_chains: int) -> None:
        self.eager = eager
        self.max_chains = max_chains
        self.recency: list[Chain] = []  # least recently heard first
        self.carriers: dict[Chain, list[list[Any]]] = {}  # chain -> [[peer, paused], ...]
        self.asked: set[tuple[bytes, Chain]] = set()
        self.announced: list[list[Any]] = []  # [chain, deadline, number, [peers]] in arrival order

    def announce(self, chain: Chain, peer: bytes, number: int, now: float) -> None:
        for entry in self.announced:
            if entry[0] == chain:
                if peer not in entry[3]:
                    entry[3].append(peer)
                return
        if len(self.announced) < self.max_chains:
            self.announced.append([chain, now + 1.0, number, [peer]])

    def due(self, now: float) -> list[PauseChange]:
        changes = []
        for entry in list(self.announced):
            chain, deadline, number, peers = entry
            if deadline > now:
                continue
            self.announced.remove(entry)
            if seen(chain, number):
                continue
            for peer in sorted(peers):
                for carrier in self.carriers.get(chain, []):
                    if carrier[0] == peer:
                        carrier[1] = False
                changes.append(PauseChange(peer, chain, False))
        return changes

    def _heard(self, chain: Chain, peer: bytes) -> list[PauseChange]:
        changes: list[PauseChange] = []
        if chain in self.recency:
            self.recency.remove(chain)
        else:
            if len(self.recency) >= self.max_chains:
                oldest = self.recency.pop(0)
                changes = [PauseChange(p, oldest, False) for p, paused in self.carriers.pop(oldest) if paused]
            self.carriers[chain] = []
        self.recency.append(chain)
        if all(p != peer for p, _ in self.carriers[chain]):
            self.carriers[chain].append([peer, False])
        return changes

    def delivered(self, chain: Chain, peer: bytes) -> list[PauseChange]:
        return self._heard(chain, peer)

    def repeated(self, chain: Chain, peer: bytes) -> list[PauseChange]:
        changes = self._heard(chain, peer)
        entries = self.carriers[chain]
        unpaused = [e for e in entries if not e[1]]
        mine = next(e for e in entries if e[0] == peer)
        if not mine[1] and len(unpaused) - 1 >= self.eager:
            mine[1] = True
            changes.append(PauseChange(peer, chain, True))
        return changes

    def peer_gone(self, peer: bytes) -> list[PauseChange]:
        self.asked = {(p, c) for p, c in self.asked if p != peer}
        for entry in self.announced:
            if peer in entry[3]:
                entry[3].remove(peer)
        changes = []
        for chain in sorted(self.carriers):
            entries = self.carriers[chain]
            if all(e[0] != peer for e in entries):
                continue
            entries[:] = [e for e in entries if e[0] != peer]
            while sum(1 for e in entries if not e[1]) < self.eager and any(e[1] for e in entries):
                first = next(e for e in entries if e[1])
                first[1] = False
                changes.append(PauseChange(first[0], chain, False))
            if not entries:
                del self.carriers[chain]
                self.recency.remove(chain)
        return changes


def seen(chain: Chain, number: int) -> bool:
    """The node's duplicate detectors, for the test: even numbers are seen."""
    return number % 2 == 0


class PruningMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.pruning = Pruning(eager=2, max_chains=3, graft_after=1.0)
        self.model = NaiveModel(eager=2, max_chains=3)
        self.paused: set[tuple[bytes, Chain]] = set()  # what the changes told the peers, so far

    def _apply(self, changes: list[PauseChange]) -> None:
        for change in changes:
            key = (change.peer, change.chain)
            assert (key in self.paused) != change.paused, "a pause or resume that changes nothing"
            if change.paused:
                self.paused.add(key)
            else:
                self.paused.discard(key)

    @rule(chain=st.sampled_from(CHAINS), peer=st.sampled_from(PEERS))
    def delivered(self, chain: Chain, peer: bytes) -> None:
        changes = self.pruning.delivered(chain, peer)
        assert changes == self.model.delivered(chain, peer)
        self._apply(changes)

    @rule(chain=st.sampled_from(CHAINS), peer=st.sampled_from(PEERS))
    def repeated(self, chain: Chain, peer: bytes) -> None:
        changes = self.pruning.repeated(chain, peer)
        assert changes == self.model.repeated(chain, peer)
        self._apply(changes)

    @rule(chain=st.sampled_from(CHAINS), peer=st.sampled_from(PEERS), number=st.integers(0, 9))
    def announced(self, chain: Chain, peer: bytes, number: int) -> None:
        self.pruning.announced(chain, peer, number, self.now)
        self.model.announce(chain, peer, number, self.now)

    @rule(seconds=st.sampled_from([0.0, 0.5, 1.0, 2.0]))
    def due(self, seconds: float) -> None:
        self.now += seconds
        changes = self.pruning.due(self.now, seen)
        assert changes == self.model.due(self.now)
        # a graft may resume a peer this node never paused (it forgot): tell it all the same
        self.paused -= {(c.peer, c.chain) for c in changes}

    @rule(peer=st.sampled_from(PEERS))
    def peer_gone(self, peer: bytes) -> None:
        changes = self.pruning.peer_gone(peer)
        assert changes == self.model.peer_gone(peer)
        assert all(change.peer != peer for change in changes)
        self.paused = {(p, c) for p, c in self.paused if p != peer}
        self._apply(changes)

    @invariant()
    def the_pauses_told_are_the_pauses_kept(self) -> None:
        kept = {(peer, chain) for chain in CHAINS for peer in self.pruning.paused(chain)}
        assert kept == self.paused

    @invariant()
    def a_chain_with_a_paused_carrier_keeps_eager_ones(self) -> None:
        for chain in CHAINS:
            carriers, paused = self.pruning.carriers(chain), self.pruning.paused(chain)
            assert not paused or len(carriers) - len(paused) >= self.pruning.eager


TestPruningAgainstTheModel = PruningMachine.TestCase
TestPruningAgainstTheModel.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)


A, B, C = PEERS[:3]
FEED = CHAINS[0]


def test_a_repeat_pauses_its_carrier_only_while_enough_others_stay_unpaused() -> None:
    pruning = Pruning(eager=1)
    assert pruning.delivered(FEED, A) == []
    assert pruning.repeated(FEED, B) == [PauseChange(B, FEED, True)]
    assert pruning.repeated(FEED, B) == []  # a push that crossed the pause
    assert pruning.repeated(FEED, A) == []  # the last unpaused carrier is never paused
    assert pruning.paused(FEED) == [B]


def test_the_last_eager_carrier_going_away_resumes_the_oldest_paused_one() -> None:
    pruning = Pruning(eager=1)
    pruning.delivered(FEED, A)
    pruning.repeated(FEED, B)
    pruning.repeated(FEED, C)
    assert pruning.peer_gone(A) == [PauseChange(B, FEED, False)]
    assert pruning.paused(FEED) == [C]


def test_a_forgotten_chain_resumes_its_paused_carriers() -> None:
    pruning = Pruning(eager=1, max_chains=1)
    pruning.delivered(CHAINS[0], A)
    pruning.repeated(CHAINS[0], B)
    assert pruning.delivered(CHAINS[1], A) == [PauseChange(B, CHAINS[0], False)]


def test_pause_requests_are_kept_per_peer_within_a_budget_and_end_with_the_peer() -> None:
    pruning = Pruning(max_paused_per_peer=1)
    assert pruning.asked(A, CHAINS[0], True) and pruning.paused_by(A, CHAINS[0])
    assert not pruning.asked(A, CHAINS[1], True) and not pruning.paused_by(A, CHAINS[1])
    assert pruning.ignored == 1
    assert pruning.asked(A, CHAINS[0], False) and not pruning.paused_by(A, CHAINS[0])
    pruning.asked(B, CHAINS[0], True)
    pruning.peer_gone(B)
    assert not pruning.paused_by(B, CHAINS[0])


def test_an_announced_message_not_seen_in_time_resumes_its_announcers() -> None:
    pruning = Pruning(eager=1, graft_after=1.0)
    pruning.delivered(FEED, A)
    pruning.repeated(FEED, B)
    pruning.announced(FEED, B, 7, now=10.0)
    assert pruning.due(10.5, lambda chain, n: False) == []  # not yet
    assert pruning.due(11.0, lambda chain, n: False) == [PauseChange(B, FEED, False)]
    assert pruning.paused(FEED) == [] and pruning.statistics().grafts == 1
    pruning.repeated(FEED, B)
    pruning.announced(FEED, B, 8, now=20.0)
    assert pruning.due(25.0, lambda chain, n: n == 8) == []  # it came another way
    assert pruning.paused(FEED) == [B]


def test_eager_zero_pauses_nothing_but_still_honours_the_peers_requests() -> None:
    pruning = Pruning(eager=0)
    pruning.delivered(FEED, A)
    assert pruning.repeated(FEED, B) == [] and pruning.paused(FEED) == []
    assert pruning.asked(C, FEED, True) and pruning.paused_by(C, FEED)
    with pytest.raises(ValueError, match="eager must not be negative"):
        Pruning(eager=-1)
