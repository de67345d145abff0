"""kademlia.lazypot: the pot read after any mix of additions and removals is the pot of the members."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kademlia.lazypot import LazyPot
from pot import Pot

OPS = st.lists(st.tuples(st.sampled_from(["add", "remove", "read"]), st.integers(0, 63)), max_size=80)


@settings(max_examples=200, deadline=None)
@given(OPS, st.booleans())
def test_reads_equal_the_pot_of_the_members(ops: list[tuple[str, int]], built: bool) -> None:
    members: dict[bytes, None] = {}  # the caller's record, as the table's dicts are
    lazy = LazyPot(Pot() if built else None)

    def listing() -> list[bytes]:
        return list(members)

    for op, x in ops:
        address = bytes([x])
        if op == "add" and address not in members:
            members[address] = None
            lazy.add(address)
        elif op == "remove" and address in members:
            del members[address]
            lazy.remove(address)
        elif op == "read":
            assert lazy.get(listing) == Pot.from_addresses(members)
    assert set(lazy.get(listing)) == set(members)


def test_an_unbuilt_pot_ignores_changes_and_builds_from_the_members() -> None:
    members = [b"\x01", b"\x02"]
    lazy = LazyPot()
    lazy.add(b"\x03")  # not a member as far as ``members`` says: the build reads the caller's record
    assert set(lazy.get(lambda: members)) == {b"\x01", b"\x02"}


def test_few_changes_are_applied_many_rebuild() -> None:
    calls = []
    members = {bytes([x]): None for x in range(32)}

    def listing() -> list[bytes]:
        calls.append(1)
        return list(members)

    lazy = LazyPot(Pot.from_addresses(members))
    members[b"\x80"] = None
    lazy.add(b"\x80")
    assert b"\x80" in lazy.get(listing) and not calls  # one change to 32 members: applied in place
    for x in range(40, 60):
        members[bytes([x])] = None
        lazy.add(bytes([x]))
    assert len(lazy.get(listing)) == 53 and len(calls) == 1  # twenty: rebuilt from the listing
    lazy.drop()
    assert len(lazy.get(listing)) == 53 and len(calls) == 2  # dropped: built anew
