"""Tests of pot.Pot: a Python-set model, immutability, structural sharing, closest-first order."""

from __future__ import annotations

import random
from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pot import Pot, proximity
from pot._trie import Node, nodes


def one_byte(*values: int) -> list[bytes]:
    return [bytes([v]) for v in values]


def check_invariants(pot: Pot) -> None:
    """The crit-bit invariants of every node (see pot._trie)."""
    root: Node | None = pot._root
    if root is None:
        assert pot.nbits is None
        return
    nbits = pot.nbits
    assert nbits is not None
    for node in nodes(root):
        if node.kids is None:
            assert (node.bit, node.n, node.key) == (nbits, 1, int.from_bytes(node.addr))
            assert len(node.addr) * 8 == nbits
            continue
        low, high = node.kids
        assert node.bit < low.bit and node.bit < high.bit
        assert node.n == low.n + high.n
        assert (node.key, node.addr) == (low.key, low.addr)
        shift = nbits - 1 - node.bit
        members = [int.from_bytes(a) for a in _members(low)], [int.from_bytes(a) for a in _members(high)]
        assert all(m >> shift == (node.key >> shift) & ~1 for m in members[0])
        assert all(m >> shift == (node.key >> shift) | 1 for m in members[1])


def _members(node: Node) -> list[bytes]:
    return [n.addr for n in nodes(node) if n.kids is None]


# --- the set model ------------------------------------------------------------------------------

OPS = st.lists(st.tuples(st.booleans(), st.integers(0, 40)), max_size=80)


@settings(max_examples=150)
@given(OPS, st.sampled_from([1, 2]))
def test_pot_behaves_like_a_set(ops: list[tuple[bool, int]], nbytes: int) -> None:
    # addresses from a small pool (spread over the space) so removes often hit
    pool = [((v * 0x9E3779B1) % (1 << (8 * nbytes))).to_bytes(nbytes) for v in range(41)]
    pot, model = Pot(), set()
    history: list[tuple[Pot, frozenset[bytes]]] = []
    for is_add, i in ops:
        address = pool[i]
        if is_add:
            new = pot.add(address)
            assert (new is pot) == (address in model)
            model.add(address)
        elif address in model:
            new = pot.remove(address)
            model.discard(address)
        else:
            with pytest.raises(KeyError):
                pot.remove(address)
            new = pot
        pot = new
        history.append((pot, frozenset(model)))
        assert len(pot) == len(model)
        assert list(pot) == sorted(model)
        assert all((a in pot) == (a in model) for a in pool)
    check_invariants(pot)
    assert pot == Pot.from_addresses(reversed(sorted(model)))
    assert hash(pot) == hash(Pot.from_addresses(model))
    # every earlier version still holds exactly what it held then
    for old, members in history:
        assert set(old) == members and len(old) == len(members)


@settings(max_examples=60)
@given(st.sets(st.integers(0, 0xFFFF), max_size=200), st.randoms(use_true_random=False))
def test_from_addresses_equals_adding_one_by_one(values: set[int], rnd: random.Random) -> None:
    addresses = [v.to_bytes(2) for v in values]
    built = Pot.from_addresses(addresses + addresses[:3])
    rnd.shuffle(addresses)
    added = Pot()
    for address in addresses:
        added = added.add(address)
    check_invariants(built)
    assert built == added
    assert built._root == added._root  # one shape per member set
    assert list(built) == sorted(addresses)


def test_empty_pot() -> None:
    pot = Pot()
    assert len(pot) == 0 and not pot
    assert pot.nbits is None
    assert list(pot) == []
    assert b"\x00" not in pot
    assert list(pot.closest(b"\x00")) == []
    assert pot == Pot.from_addresses([])
    with pytest.raises(KeyError):
        pot.remove(b"\x00")


def test_nbits_follows_the_members() -> None:
    pot = Pot().add(b"\x01\x02")
    assert pot.nbits == 16
    assert pot.remove(b"\x01\x02").nbits is None
    assert pot.remove(b"\x01\x02").add(b"\x07").nbits == 8


def test_addresses_of_another_length_are_rejected() -> None:
    pot = Pot.from_addresses(one_byte(1, 2))
    with pytest.raises(ValueError, match=r"2 bytes.*1-byte"):
        pot.add(b"\x01\x02")
    with pytest.raises(ValueError, match=r"2 bytes.*1-byte"):
        pot.remove(b"\x01\x02")
    with pytest.raises(ValueError, match=r"2 bytes.*1-byte"):
        pot.closest(b"\x01\x02")
    with pytest.raises(ValueError, match=r"has 2 bytes, the others have 1"):
        Pot.from_addresses([b"\x01", b"\x01\x02"])
    assert b"\x01\x02" not in pot
    assert b"\x01" in pot
    assert b"\x00\x01" not in pot  # same integer, other length
    assert b"\x01" not in Pot.from_addresses([b"\x00\x01"])


def test_bad_addresses() -> None:
    with pytest.raises(ValueError, match="at least one byte"):
        Pot().add(b"")
    with pytest.raises(ValueError, match="at least one byte"):
        Pot.from_addresses([b""])
    with pytest.raises(TypeError, match="not int"):
        Pot().add(5)  # type: ignore[arg-type]
    assert 5 not in Pot.from_addresses([b"\x05"])
    pot = Pot().add(bytearray(b"\x05")).add(memoryview(b"\x06"))  # type: ignore[arg-type]
    assert list(pot) == [b"\x05", b"\x06"] and all(type(a) is bytes for a in pot)


def test_remove_of_absent_address() -> None:
    pot = Pot.from_addresses(one_byte(0x10, 0x20))
    with pytest.raises(KeyError, match=r"\\x11"):
        pot.remove(b"\x11")
    assert list(pot) == one_byte(0x10, 0x20)


def test_pot_is_immutable() -> None:
    pot = Pot.from_addresses(one_byte(1))
    with pytest.raises(AttributeError, match="immutable"):
        pot._root = None
    with pytest.raises(AttributeError, match="immutable"):
        del pot._nbits
    assert list(pot) == [b"\x01"]


def test_equality_and_hash() -> None:
    a = Pot.from_addresses(one_byte(1, 2, 3))
    b = Pot().add(b"\x03").add(b"\x01").add(b"\x02")
    assert a == b and hash(a) == hash(b)
    assert a != a.remove(b"\x02")
    assert a != Pot.from_addresses([b"\x00\x01", b"\x00\x02", b"\x00\x03"])
    assert a != {b"\x01", b"\x02", b"\x03"}
    assert len({a, b}) == 1


def test_repr_round_trips_small_pots() -> None:
    pot = Pot.from_addresses(one_byte(0x80, 0x00))
    assert eval(repr(pot)) == pot
    assert repr(Pot.from_addresses(one_byte(*range(10)))) == "<Pot of 10 8-bit addresses>"


# --- structural sharing -------------------------------------------------------------------------


def depth_of(pot: Pot, address: bytes) -> int:
    """Nodes on the path from the root to the leaf of ``address``."""
    node, depth = pot._root, 1
    assert node is not None
    key = int.from_bytes(address)
    while node.kids is not None:
        node = node.kids[key >> (len(address) * 8 - 1 - node.bit) & 1]
        depth += 1
    assert node.addr == address
    return depth


def test_add_and_remove_share_all_but_the_path() -> None:
    rnd = random.Random(7)
    pot = Pot.from_addresses(rnd.randbytes(32) for _ in range(1000))
    before = {id(n) for n in nodes(pot._root)}
    assert len(before) == 2 * 1000 - 1

    address = rnd.randbytes(32)
    added = pot.add(address)
    fresh = [n for n in nodes(added._root) if id(n) not in before]
    assert len(fresh) == depth_of(added, address)  # the copied path, the new inner node and the new leaf
    assert depth_of(added, address) <= 40

    removed = added.remove(address)
    assert removed == pot
    assert len([n for n in nodes(removed._root) if id(n) not in before]) == depth_of(added, address) - 2

    member = next(iter(pot.closest(rnd.randbytes(32))))
    smaller = pot.remove(member)
    assert len([n for n in nodes(smaller._root) if id(n) not in before]) == depth_of(pot, member) - 2
    assert len(pot) == 1000 and member in pot and member not in smaller


def test_with_prefix_shares_the_subtree() -> None:
    rnd = random.Random(3)
    values = rnd.sample(range(1 << 16), 500)
    pot = Pot.from_addresses(v.to_bytes(2) for v in values)
    for bits in range(17):
        for _ in range(5):
            prefix = rnd.randrange(1 << 16).to_bytes(2)
            sub = pot.with_prefix(prefix, bits)
            expected = sorted(v.to_bytes(2) for v in values if proximity(v.to_bytes(2), prefix) >= bits)
            assert list(sub) == expected and len(sub) == len(expected)
            if expected:
                assert any(node is sub._root for node in nodes(pot._root))
                assert sub.nbits == 16
    assert pot.with_prefix(b"", 0) == pot
    with pytest.raises(ValueError, match="17 bits"):
        pot.with_prefix(b"\x00\x00\x00", 17)
    with pytest.raises(ValueError, match="9 bits does not fit a prefix of 1 bytes"):
        pot.with_prefix(b"\x00", 9)


# --- closest first ------------------------------------------------------------------------------


@settings(max_examples=100)
@given(st.sets(st.integers(0, 0xFFF), max_size=120), st.integers(0, 0xFFF))
def test_closest_is_in_xor_distance_order(values: set[int], target: int) -> None:
    pot = Pot.from_addresses(v.to_bytes(2) for v in values)
    got = list(pot.closest(target.to_bytes(2)))
    assert got == [v.to_bytes(2) for v in sorted(values, key=lambda v: v ^ target)]
    pos = [proximity(a, target.to_bytes(2)) for a in got]
    assert pos == sorted(pos, reverse=True)


def test_closest_yields_on_demand() -> None:
    rnd = random.Random(11)
    pot = Pot.from_addresses(rnd.randbytes(32) for _ in range(2000))
    target = rnd.randbytes(32)
    ordered = sorted(pot, key=lambda a: int.from_bytes(a) ^ int.from_bytes(target))
    closest = pot.closest(target)
    assert list(islice(closest, 5)) == ordered[:5]
    assert next(closest) == ordered[5]
    assert next(pot.closest(ordered[0])) == ordered[0]
