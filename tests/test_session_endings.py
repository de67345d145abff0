"""How a session's end feeds the dial backoff: judged once per session (`broken_off`).

Before, a peer we dialled that sent us away was counted twice (once as "turned down", once as a
broken session), so its backoff grew twice as fast; and a pruning peer's backoff was set and
then cleared at once by the same session's clean end.
"""

from __future__ import annotations

import itertools

import pytest

from streamer.connection import Disconnect
from streamer.wire.connection import GoodbyeCode
from swarm.net.sessions import broken_off

CLEAN = {GoodbyeCode.NORMAL, GoodbyeCode.SHUTDOWN, GoodbyeCode.DUPLICATE_CONNECTION, GoodbyeCode.PRUNED}
SENT_AWAY = {GoodbyeCode.OVERLOADED, GoodbyeCode.PRUNED}
CODES = [*GoodbyeCode, 200]  # an unknown code is kept as a plain int


def naive(by: str, code: int, violation: bool, outbound: bool) -> bool:
    if violation:
        return True
    if outbound and by == "remote" and code in SENT_AWAY:
        return True
    return code not in CLEAN


@pytest.mark.parametrize(
    ("by", "code", "violation", "outbound"),
    list(itertools.product(["local", "remote"], CODES, [False, True], [False, True])),
)
def test_every_ending_is_judged_as_the_rule_says(by: str, code: int, violation: bool, outbound: bool) -> None:
    disconnect = Disconnect(by, code, "", violation)
    assert broken_off(disconnect, outbound=outbound) is naive(by, code, violation, outbound)


def test_a_pruning_peer_we_dialled_is_backed_off_but_pruning_others_is_clean() -> None:
    pruned = Disconnect("remote", GoodbyeCode.PRUNED, "bin over-saturated")
    assert broken_off(pruned, outbound=True)
    assert not broken_off(pruned, outbound=False)  # it dialled us, then pruned: nothing to redial
    assert not broken_off(Disconnect("local", GoodbyeCode.PRUNED, ""), outbound=True)
