"""The bounded address book (against a model) and the dial policy."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kademlia.addresses import AddressBook, Admission, DialPolicy, PeerAddress
from pot import MAX_PO, proximity

BASE = bytes(32)


def test_a_full_bin_drops_its_oldest_unproven_address_and_keeps_peers_seen_working() -> None:
    book = AddressBook(BASE, per_bin=2)
    far = [bytes([0x80 | i]) + bytes(31) for i in range(4)]  # all in bin 0 of BASE
    assert book.add(PeerAddress(far[0], "127.0.0.1", 1)) == Admission(True)
    assert book.add(PeerAddress(far[1], "127.0.0.1", 2)) == Admission(True)
    book.worked(far[0])
    assert book.add(PeerAddress(far[2], "127.0.0.1", 3)) == Admission(True, evicted=far[1])
    book.worked(far[2])
    assert book.add(PeerAddress(far[3], "127.0.0.1", 4)) == Admission(False, refused=True)
    assert {a.overlay for a in book} == {far[0], far[2]}


@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "worked"]), st.integers(0, 40)),
        max_size=120,
    )
)
def test_the_address_book_against_a_model(ops: list[tuple[str, int]]) -> None:
    book = AddressBook(BASE, per_bin=3)
    overlays = [bytes([i * 6 % 256, i]) + bytes(30) for i in range(1, 42)]
    model: dict[int, list[bytes]] = {}
    working: set[bytes] = set()
    for op, i in ops:
        overlay = overlays[i]
        po = min(proximity(BASE, overlay), MAX_PO)
        members = model.setdefault(po, [])
        if op == "worked":
            book.worked(overlay)
            if overlay in members:
                working.add(overlay)
            continue
        admission = book.add(PeerAddress(overlay, "127.0.0.1", 1000 + i))
        if overlay in members:
            assert admission == Admission(False)
        elif len(members) < 3:
            members.append(overlay)
            assert admission == Admission(True)
        else:
            victim = next((o for o in members if o not in working), None)
            expected = Admission(False, refused=True) if victim is None else Admission(True, victim)
            assert admission == expected
            if victim is not None:
                members.remove(victim)
                members.append(overlay)
        assert {a.overlay for a in book} == {o for ms in model.values() for o in ms}


def test_the_dial_policy() -> None:
    local = DialPolicy.for_host("127.0.0.1")
    assert local.allows("127.0.0.1") and local.allows("127.5.6.7") and local.allows("::1")
    assert not local.allows("10.0.0.1") and not local.allows("example.org") and not local.allows("")
    public = DialPolicy.for_host("0.0.0.0")
    assert public.allows("203.0.113.7") and public.allows("10.1.2.3")
    assert not any(public.allows(host) for host in ("127.0.0.1", "169.254.1.1", "224.0.0.1", "::"))
    chosen = DialPolicy(["10.0.0.0/8"])
    assert chosen.allows("10.9.9.9") and not chosen.allows("11.0.0.1")
