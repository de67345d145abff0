"""Asking peers one after another, and a second in parallel when the first is slow (trio shell).

The rule of whom to ask is `swarm.net.peer_choice`'s; this runs it. One attempt goes to the first
peer the plan names. A failure (not found, refused, the peer went away) starts the next attempt at
once; an attempt that has not answered within ``hedge_after`` seconds gets company: the next peer
is asked in parallel, and so on every ``hedge_after`` while attempts remain. The first good answer
wins and the attempts still under way are cancelled. Nothing waits past the request's
``timeout``: at the deadline every attempt is cancelled. A peer that timed out, or was still
silent ``slow_after`` seconds into a request that ended without it, is recorded in the
`Avoidance`, so the next requests try it last.

Most requests are answered by the first peer well within ``hedge_after``, so with ``start``
(an attempt in two steps: send now, await the answer later) the first attempt runs without a
nursery, a task or a channel: its request is sent and its answer awaited for up to
``hedge_after``; only if it fails or stays silent that long does the race begin, the first
attempt's wait carried on in a task of its own beside the next peer's.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import trio

from swarm.net.peer_choice import AttemptPlan, Avoidance

__all__ = ["AttemptFailed", "HedgePolicy", "NoPeerDelivered", "Started", "first_success"]


class AttemptFailed(Exception):
    """One peer did not deliver: it answered a failure, went away, sent something invalid, or
    (``timed_out``) did not answer in time."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class NoPeerDelivered(Exception):
    """Every attempt failed, no candidate was left, or the deadline passed first."""

    def __init__(self, failures: list[str], *, asked: int, timed_out: bool) -> None:
        super().__init__("; ".join(failures) if failures else "no peer to ask")
        self.failures = failures
        self.asked = asked
        self.timed_out = timed_out


@dataclass(frozen=True)
class HedgePolicy:
    """How a request is spread over peers in time."""

    timeout: float = 10.0  # the whole request's deadline
    hedge_after: float = 0.25  # a silent attempt gets a parallel one after this long
    slow_after: float = 2.0  # a peer still silent this long into an ended request is avoided


class HasOverlay(Protocol):
    @property
    def overlay(self) -> bytes: ...


P = TypeVar("P", bound=HasOverlay)
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Started(Protocol[T_co]):
    """An attempt whose request is out: `outcome` awaits its answer (raising `AttemptFailed`) and
    may be awaited again after a cancellation; `close` ends it, answered or not."""

    async def outcome(self) -> T_co: ...

    def close(self) -> None: ...


@dataclass
class _Answer(Generic[P, T]):
    peer: P
    value: T | None
    error: AttemptFailed | None


async def first_success(
    plan: AttemptPlan,
    peers: Callable[[], Mapping[bytes, P]],
    attempt: Callable[[P, float], Awaitable[T]],
    *,
    policy: HedgePolicy,
    avoidance: Avoidance | None = None,
    start: Callable[[P], Started[T] | None] | None = None,
) -> tuple[P, T]:
    """The first peer (and its answer) that `attempt` succeeds with, asking as `plan` says.

    ``peers()`` maps the overlays of the peers that may be asked now to the peers; ``attempt``
    gets a peer and the request's deadline (``trio.current_time()`` clock) and returns the value or
    raises `AttemptFailed`. ``start``, if given, starts the first attempt in two steps (None: it
    cannot without waiting, and `attempt` runs it instead). Raises `NoPeerDelivered` when
    nobody delivered.
    """
    deadline = trio.current_time() + policy.timeout
    started: dict[bytes, float] = {}
    failures: list[str] = []
    timed_out = False
    winner: _Answer[P, T] | None = None

    def failed(overlay: bytes, error: AttemptFailed) -> None:
        nonlocal timed_out
        failures.append(str(error))
        timed_out |= error.timed_out
        if avoidance is not None:
            if error.timed_out:
                avoidance.timed_out(overlay, trio.current_time())
            else:
                avoidance.answered(overlay)

    async def run(peer: P, first: Started[T] | None = None) -> None:
        try:
            value = await (first.outcome() if first is not None else attempt(peer, deadline))
        except AttemptFailed as exc:
            send.send_nowait(_Answer(peer, None, exc))
        else:
            send.send_nowait(_Answer(peer, value, None))
        finally:
            if first is not None:
                first.close()

    def next_peer() -> P | None:
        candidates = peers()
        now = trio.current_time()
        avoided = avoidance.avoided(now) if avoidance is not None else frozenset()
        overlay = plan.next_peer(candidates, avoided)
        if overlay is None:
            return None
        started[overlay] = now
        return candidates[overlay]

    # the first attempt, without a nursery while it answers within hedge_after
    carried: tuple[P, Started[T] | None] | None = None  # an attempt the race carries on
    if start is not None:
        peer = next_peer()
        if peer is None:
            raise NoPeerDelivered(failures, asked=len(plan.tried), timed_out=False)
        try:
            first = start(peer)
        except AttemptFailed as exc:
            plan.finished(peer.overlay)
            failed(peer.overlay, exc)
        else:
            if first is None:
                carried = (peer, None)
            else:
                carried = (peer, first)
                try:
                    with trio.move_on_at(min(deadline, trio.current_time() + policy.hedge_after)):
                        value = await first.outcome()
                        first.close()
                        plan.finished(peer.overlay)
                        if avoidance is not None:
                            avoidance.answered(peer.overlay)
                        return peer, value
                except AttemptFailed as exc:
                    first.close()
                    plan.finished(peer.overlay)
                    failed(peer.overlay, exc)
                    carried = None
                except BaseException:  # cancelled from outside
                    first.close()
                    plan.finished(peer.overlay)
                    raise

    send, receive = trio.open_memory_channel[_Answer[P, T]](math.inf)
    try:
        with trio.move_on_at(deadline) as overall:
            async with trio.open_nursery() as nursery:

                def launch() -> None:
                    peer = next_peer()
                    if peer is not None:
                        nursery.start_soon(run, peer)

                if carried is None:
                    launch()
                else:
                    nursery.start_soon(run, *carried)
                    if carried[1] is not None:  # silent for hedge_after already: company now
                        launch()
                while plan.in_flight:
                    with trio.move_on_after(policy.hedge_after) as hedge:
                        answer = await receive.receive()
                    if hedge.cancelled_caught:
                        launch()
                        continue
                    overlay = answer.peer.overlay
                    plan.finished(overlay)
                    if answer.error is None:
                        if avoidance is not None:
                            avoidance.answered(overlay)
                        winner = answer
                        nursery.cancel_scope.cancel()
                        break
                    failed(overlay, answer.error)
                    launch()
    except BaseException:  # cancelled from outside: the attempts are over all the same
        for overlay in list(plan.in_flight):
            plan.finished(overlay)
        raise
    now = trio.current_time()
    for overlay in list(plan.in_flight):  # cancelled while still silent
        if avoidance is not None and now - started[overlay] >= policy.slow_after:
            avoidance.timed_out(overlay, now)
        plan.finished(overlay)
    if winner is not None:
        assert winner.value is not None
        return winner.peer, winner.value
    if overall.cancelled_caught:
        failures.append(f"no answer within {policy.timeout:g}s")
        timed_out = True
    raise NoPeerDelivered(failures, asked=len(plan.tried), timed_out=timed_out)
