"""Mantaray manifests against a naive model (a dict of path -> entry), with hypothesis.

What is saved reads back as the same dict; every path's lookup finds its entry and nothing
else is found; `has_prefix` is true exactly for the prefixes of some path (the longest-prefix
walk); the nodes round-trip through their byte format, obfuscated or not; the reference does not
depend on the order the entries were given in; bad bytes are refused with a message.
"""

from __future__ import annotations

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from swarm.manifest.nodes import (
    TYPE_WITH_METADATA,
    VERSION_02_HASH,
    ForkRecord,
    InvalidManifest,
    NodeRecord,
    decode_node,
    encode_node,
)
from swarm.manifest.reader import ManifestReader
from swarm.manifest.trie import NO_REFERENCE, Entry, save

paths = st.lists(
    st.sampled_from([b"a", b"b", b"/", b"\xc3\xa9", b"x" * 13, b"index.html"]), min_size=1, max_size=8
).map(b"".join)
metadata = st.none() | st.dictionaries(st.text(max_size=8), st.text(max_size=40), max_size=3)
entries = st.dictionaries(
    paths,
    st.builds(Entry, st.binary(min_size=32, max_size=32).filter(any), metadata),
    min_size=1,
    max_size=12,
)


def reader_of(saved_nodes: dict[bytes, bytes], root: bytes) -> ManifestReader:
    async def read(reference: bytes) -> bytes:
        return saved_nodes[reference]

    return ManifestReader(read, root)


@settings(max_examples=150, deadline=None)
@given(entries, st.lists(paths, max_size=10), st.binary(min_size=32, max_size=32))
def test_a_saved_manifest_reads_back_as_the_model(
    model: dict[bytes, Entry], probes: list[bytes], key: bytes
) -> None:
    saved = save(model, obfuscation_key=key)
    reader = reader_of(saved.nodes, saved.reference)

    async def check() -> None:
        assert await reader.entries() == model
        for path in [*model, *probes]:
            assert await reader.entry(path) == model.get(path)
            assert await reader.has_prefix(path[:-1]) == any(p.startswith(path[:-1]) for p in model)
            assert await reader.has_prefix(path) == any(p.startswith(path) for p in model)

    trio.run(check)
    # every chunk of every node is stored: the nodes are files of the chunker
    assert {c.address for c in saved.chunks} >= set(saved.nodes)


@settings(max_examples=60, deadline=None)
@given(entries, st.randoms(use_true_random=False))
def test_the_reference_does_not_depend_on_the_order_of_the_entries(model: dict[bytes, Entry], rng) -> None:
    items = list(model.items())
    rng.shuffle(items)
    assert save(dict(items)).reference == save(model).reference


forks = st.builds(
    ForkRecord,
    st.binary(min_size=1, max_size=30),
    st.binary(min_size=32, max_size=32),
    st.integers(0, 255),
    st.none() | st.dictionaries(st.text(max_size=5), st.text(max_size=80), max_size=3),
).map(lambda f: f if f.type & TYPE_WITH_METADATA else ForkRecord(f.prefix, f.ref, f.type, None))


@settings(max_examples=200, deadline=None)
@given(
    st.binary(max_size=64) | st.just(b""), st.lists(forks, max_size=6), st.binary(min_size=32, max_size=32)
)
def test_a_node_round_trips_through_its_bytes(target: bytes, fork_list: list[ForkRecord], key: bytes) -> None:
    by_first = {f.prefix[0]: f for f in fork_list}
    node = NodeRecord(target, by_first, key)
    data = encode_node(node)
    back = decode_node(data)
    with_empty_metadata = {
        first: f
        if f.metadata is not None or not f.type & TYPE_WITH_METADATA
        else ForkRecord(f.prefix, f.ref, f.type, {})
        for first, f in by_first.items()
    }
    assert back == NodeRecord(target, with_empty_metadata, key)
    assert (len(data) - 64 - len(target)) % 32 == 0  # forks and metadata fill whole words


def test_an_empty_root_header_and_the_site_entry() -> None:
    saved = save(
        {
            b"/": Entry(NO_REFERENCE, {"website-index-document": "index.html"}),
            b"index.html": Entry(b"\1" * 32),
        }
    )
    root = decode_node(saved.nodes[saved.reference])
    assert root.target == NO_REFERENCE  # the root writes 32 zero bytes
    slash = decode_node(saved.nodes[root.forks[ord("/")].ref])
    assert slash.target == b""  # a "/" naming nothing writes none (bee-js)
    assert saved.nodes[saved.reference][32:63] == VERSION_02_HASH[:31]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\0" * 10, "at least 64 bytes"),
        (b"\0" * 64, "unknown version hash"),
        (bytes(32) + VERSION_02_HASH[:31] + b"\x20", "ends inside its target"),
        (bytes(32) + VERSION_02_HASH[:31] + b"\0" + b"\1" + bytes(31), "ends inside its fork 0"),
        (
            bytes(32) + VERSION_02_HASH[:31] + b"\0" + b"\1" + bytes(31) + b"\0\0" + bytes(62),
            "prefix length 0",
        ),
    ],
)
def test_bad_bytes_are_refused_with_what_is_wrong(data: bytes, message: str) -> None:
    with pytest.raises(InvalidManifest, match=message):
        decode_node(data)


def test_an_empty_path_is_refused() -> None:
    with pytest.raises(InvalidManifest, match="must not be empty"):
        save({b"": Entry(b"\1" * 32)})
