"""Bee's chunk encryption (swarm/files/encryption.py) and encrypted chunk trees: Bee's test
vector, round trips against the plain data, tree shape (64 references of 64 bytes per
intermediate chunk) and tampering."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunks import CHUNK_SIZE, Chunk, InvalidChunk, keccak256
from swarm.files.chunker import CorruptTree, Splitter
from swarm.files.encryption import (
    ENCRYPTED_REF_SIZE,
    EncryptingSeal,
    decrypt_chunk,
    encrypt_chunk,
    open_encrypted,
    transcrypt,
)
from swarm.files.joiner import join_sync
from swarm.manifest.nodes import decode_node
from swarm.manifest.reader import ManifestReader
from swarm.manifest.trie import Entry, save

# ethersphere/bee pkg/encryption/encryption_test.go: TestEncryptDataLengthEqualsPadding encrypts
# 4096 zero bytes with this key, padding 4096, counter 0; the head and tail of its expected hex.
BEE_KEY = bytes.fromhex("8abf1502f557f15026716030fb6384792583daf39608a3cd02ff2f47e9bc6e49")
BEE_HEAD = bytes.fromhex(
    "352187af3a843decc63ceca6cb01ea39dbcf77caf0a8f705f5c30d557044ceec"
    "9392b94a79376f1e5c10cd0c0f2a98e5353bf22b3ea4fdac6677ee553dec192e"
)
BEE_TAIL = bytes.fromhex("e87c62ea3cdbcd589cfc41281f2f4c757c742d6d1e")


def test_bee_vector() -> None:
    out = transcrypt(BEE_KEY, bytes(CHUNK_SIZE))
    assert out[:64] == BEE_HEAD and out[-len(BEE_TAIL) :] == BEE_TAIL


def test_segment_key_is_keccak_of_keccak_of_key_and_counter() -> None:
    key = bytes(range(32))
    expected = keccak256(keccak256(key + (7).to_bytes(4, "little")))
    assert transcrypt(key, bytes(32), 7) == expected
    # a segment's key stream depends on its counter only, so a stream can be cut anywhere
    assert transcrypt(key, bytes(96), 5)[64:] == transcrypt(key, bytes(32), 7)


@given(st.binary(min_size=32, max_size=32), st.binary(max_size=300), st.integers(0, 2**32 - 1))
def test_transcrypt_is_its_own_inverse(key: bytes, data: bytes, ctr: int) -> None:
    once = transcrypt(key, data, ctr)
    assert len(once) == len(data) and transcrypt(key, once, ctr) == data
    if len(data) >= 8:
        assert once != data  # the key stream is not zero


@given(st.binary(min_size=32, max_size=32), st.binary(max_size=CHUNK_SIZE))
def test_chunk_round_trip_pads_to_a_full_chunk(key: bytes, payload: bytes) -> None:
    data = encrypt_chunk(payload, len(payload), key)
    assert len(data) == 8 + CHUNK_SIZE
    assert decrypt_chunk(data, key) == (len(payload), payload)


def test_padding_is_random_not_encrypted_zeros() -> None:
    key = bytes(32)
    a, b = encrypt_chunk(b"x", 1, key), encrypt_chunk(b"x", 1, key)
    assert a[:9] == b[:9] and a[9:] != b[9:]
    assert a[9:] != transcrypt(key, bytes(CHUNK_SIZE))[1:]


def test_bad_inputs_are_named() -> None:
    with pytest.raises(ValueError, match="key must be 32 bytes"):
        transcrypt(b"short", b"data")
    with pytest.raises(ValueError, match="longer than a chunk"):
        encrypt_chunk(bytes(CHUNK_SIZE + 1), 1, bytes(32))
    with pytest.raises(ValueError, match="4104 bytes of data"):
        decrypt_chunk(bytes(100), bytes(32))


def encrypted_tree(data: bytes) -> tuple[bytes, dict[bytes, Chunk]]:
    splitter = Splitter(EncryptingSeal())
    chunks = splitter.feed(data)
    root, rest = splitter.finish()
    return root, {c.address: c for c in chunks + rest}


def read(root: bytes, store: dict[bytes, Chunk], start: int = 0, end: int | None = None) -> bytes:
    def fetch(ref: bytes) -> Chunk:
        return open_encrypted(store[ref[:32]], ref)

    return b"".join(join_sync(root, fetch, start=start, end=end))


@pytest.mark.parametrize("size", [0, 1, 4096, 4097, 64 * 4096, 64 * 4096 + 1, 64 * 64 * 4096 + 5000])
def test_encrypted_file_round_trip_and_shape(size: int) -> None:
    data = random.Random(size).randbytes(size)
    root, store = encrypted_tree(data)
    assert len(root) == ENCRYPTED_REF_SIZE
    assert read(root, store) == data
    data_chunks = max(1, -(-size // CHUNK_SIZE))
    # 64 children per intermediate chunk, not 128; a lone last reference is carried up unwrapped
    expected = {4097: 1, 64 * 4096: 1, 64 * 4096 + 1: 2, 64 * 64 * 4096 + 5000: 64 + 1 + 1 + 1}
    assert len(store) - data_chunks == expected.get(size, 0)
    for chunk in store.values():
        assert len(chunk.data) == 8 + CHUNK_SIZE  # every encrypted chunk is full
        chunk.verify()


@given(st.integers(0, 300_000), st.integers(0, 300_000))
def test_ranges_of_an_encrypted_file(a: int, b: int) -> None:
    root, store = TREE
    start, end = min(a, b), max(a, b)
    assert read(root, store, start, end) == TREE_DATA[start:end]


TREE_DATA = random.Random(9).randbytes(270_000)
TREE = encrypted_tree(TREE_DATA)


def test_same_file_encrypts_differently_each_time() -> None:
    assert encrypted_tree(b"hello")[0] != encrypted_tree(b"hello")[0]


def test_wrong_key_or_tampered_chunk_is_refused() -> None:
    root, store = TREE
    wrong = root[:32] + bytes(32)
    # a wrong key decrypts to a garbage span and references: no tree, or chunks that do not exist
    with pytest.raises((CorruptTree, KeyError)):
        read(wrong, store)
    victim = next(a for a in store if a != root[:32])
    bad = store[victim].data[:100] + bytes([store[victim].data[100] ^ 1]) + store[victim].data[101:]
    store = {**store, victim: Chunk(victim, bad)}
    with pytest.raises(InvalidChunk):
        read(root, store)
    with pytest.raises(InvalidChunk, match="instead"):
        open_encrypted(store[root[:32]], victim + root[32:])


async def test_encrypted_manifest_reads_back_and_its_nodes_hold_64_byte_references() -> None:
    entries = {
        b"/": Entry(bytes(32), {"website-index-document": "index.html"}),
        b"index.html": Entry(bytes(range(64)), {"Content-Type": "text/html"}),
        b"a/long/path/" + b"x" * 40: Entry(bytes(range(1, 65))),
    }
    saved = save(entries, os.urandom(32), encrypt=True)
    assert len(saved.reference) == ENCRYPTED_REF_SIZE
    store = {chunk.address: chunk for chunk in saved.chunks}
    assert all(len(chunk.data) == 8 + CHUNK_SIZE for chunk in saved.chunks)

    reader = ManifestReader(lambda ref: _async(read_encrypted(ref, store)), saved.reference)
    assert await reader.entries() == entries
    root = decode_node(saved.nodes[saved.reference])
    assert len(root.target) == 64 and all(len(f.ref) == 64 for f in root.forks.values())


def read_encrypted(ref: bytes, store: dict[bytes, Chunk]) -> bytes:
    return read(ref, store)


async def _async(value: bytes) -> bytes:
    return value
