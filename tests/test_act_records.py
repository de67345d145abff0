"""The ACT's records (swarm/act/records.py): grantee list edits against a naive model, session
keys that both sides of ECDH derive alike, the ACT's simple-manifest JSON, history lookups."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunks import keccak256
from chunks.ethkey import Secp256k1Key
from swarm.act.records import (
    ActNotFound,
    BadPublicKey,
    EmptyGranteeList,
    add_grantees,
    compressed,
    decode_act,
    decode_grantees,
    encode_act,
    encode_grantees,
    history_lookup,
    history_path,
    parse_public_key,
    remove_grantees,
    session_key,
)
from swarm.manifest.trie import Entry

KEYS = [Secp256k1Key.from_hex(f"{i:064x}") for i in range(1, 9)]
PUBLIC = [b"\x04" + k.public_key for k in KEYS]


@given(st.lists(st.sampled_from(PUBLIC), max_size=6), st.lists(st.sampled_from(PUBLIC), max_size=6))
def test_add_keeps_each_key_once_in_first_seen_order(start: list[bytes], add: list[bytes]) -> None:
    current = list(dict.fromkeys(start))
    assert add_grantees(current, add) == list(dict.fromkeys(current + add))


@given(
    st.lists(st.sampled_from(PUBLIC), min_size=1, max_size=8, unique=True), st.lists(st.sampled_from(PUBLIC))
)
def test_remove_leaves_exactly_the_others(start: list[bytes], remove: list[bytes]) -> None:
    left = remove_grantees(start, remove)
    assert sorted(left) == sorted(k for k in start if k not in remove)  # order: Bee's swap with the last


def test_remove_swaps_the_last_key_in_as_bee_does() -> None:
    a, b, c, d = PUBLIC[:4]
    assert remove_grantees([a, b, c, d], [b]) == [a, d, c]
    with pytest.raises(EmptyGranteeList):
        remove_grantees([], [a])


def test_session_keys_agree_on_both_sides() -> None:
    publisher, grantee = KEYS[0], KEYS[1]
    for nonce in (b"\x00", b"\x01"):
        assert session_key(publisher, PUBLIC[1], nonce) == session_key(grantee, PUBLIC[0], nonce)
    x = publisher.shared_x(PUBLIC[1])
    assert session_key(publisher, PUBLIC[1], b"\x01") == keccak256(x.lstrip(b"\0") + b"\x01")
    assert session_key(publisher, PUBLIC[1], b"\x00") != session_key(publisher, PUBLIC[2], b"\x00")


def test_public_keys_parse_from_either_form_and_bad_ones_are_named() -> None:
    for public in PUBLIC:
        assert parse_public_key(compressed(public).hex()) == public
        assert parse_public_key(public.hex()) == public
    with pytest.raises(BadPublicKey, match="not a secp256k1 public key"):
        parse_public_key("02" + "00" * 32)
    with pytest.raises(BadPublicKey):
        parse_public_key("zz")


def test_grantee_list_is_65_byte_keys_back_to_back() -> None:
    data = encode_grantees(PUBLIC[:3])
    assert len(data) == 3 * 65 and decode_grantees(data) == PUBLIC[:3]
    assert decode_grantees(data[:-1] + b"\x00") == []  # a broken key: nothing, as Bee reads it


def test_act_is_bees_simple_manifest_json() -> None:
    act = {b"\x02" * 32: b"\xbb" * 32, b"\x01" * 32: b"\xaa" * 32}
    data = encode_act(act)
    assert (
        data
        == json.dumps(
            {"entries": {"01" * 32: {"reference": "aa" * 32}, "02" * 32: {"reference": "bb" * 32}}},
            separators=(",", ":"),
        ).encode()
    )
    assert decode_act(data) == act
    with pytest.raises(ActNotFound):
        decode_act(b"not json")


@given(st.lists(st.integers(1_600_000_000, 1_900_000_000), min_size=1, unique=True), st.integers(1, 2**40))
def test_history_lookup_is_newest_at_or_before_else_oldest(times: list[int], at: int) -> None:
    entries = {history_path(t): Entry(t.to_bytes(32, "big")) for t in times}
    found = int.from_bytes(history_lookup(entries, at).reference, "big")
    before = [t for t in times if t <= at]
    assert found == (max(before) if before else min(times))


def test_empty_history_has_nothing() -> None:
    with pytest.raises(ActNotFound):
        history_lookup({}, 5)
