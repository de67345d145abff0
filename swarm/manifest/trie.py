"""A manifest's nodes built from its entries, and cut into chunks to store (pure).

The trie is the one bee-js's `MantarayNode.addFork` builds, whatever the order the paths are
added in: an edge ends where paths branch, where a path ends, and at every 30th byte of the path
(bee-js adds a path 30 bytes at a time, so a node stands at each multiple of 30). Each node is
stored as a file of its own bytes (`/bytes`' chunk tree), so its reference is the BMT file hash
of `encode_node`, as in Bee and bee-js.

Type bits of a fork, from its child (bee-js's `determineType`): VALUE when the child names an
entry (or its prefix is "/"), EDGE when it has forks, WITH_PATH_SEPARATOR when its prefix holds a
"/" (other than being "/"), WITH_METADATA when it carries metadata. A node's target is written as
32 bytes (zeros when it names nothing), except a "/" node naming nothing, whose target is empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from chunks.chunk import Chunk
from swarm.files.chunker import split_bytes
from swarm.manifest.nodes import (
    MAX_PREFIX,
    REF_SIZE,
    TYPE_EDGE,
    TYPE_VALUE,
    TYPE_WITH_METADATA,
    TYPE_WITH_PATH_SEPARATOR,
    ForkRecord,
    InvalidManifest,
    NodeRecord,
    encode_node,
)

__all__ = ["NO_REFERENCE", "Entry", "Saved", "build", "save"]

NO_REFERENCE = bytes(REF_SIZE)
"""The reference of an entry that names no content (the "/" entry holding a site's metadata)."""


@dataclass(frozen=True)
class Entry:
    """What a path of a manifest names: a reference (NO_REFERENCE: none) and its metadata."""

    reference: bytes
    metadata: dict[str, str] | None = None

    def __post_init__(self) -> None:
        if len(self.reference) != REF_SIZE:
            raise InvalidManifest(f"an entry's reference must be {REF_SIZE} bytes, got {len(self.reference)}")


@dataclass
class _Node:
    prefix: bytes
    entry: Entry | None = None
    children: dict[int, _Node] = field(default_factory=dict)


def build(entries: Mapping[bytes, Entry]) -> _Node:
    """The trie of `entries` (paths of at least one byte)."""
    if b"" in entries:
        raise InvalidManifest("a manifest path must not be empty")
    return _grow(b"", sorted(entries.items()), 0)


def _grow(prefix: bytes, group: list[tuple[bytes, Entry]], position: int) -> _Node:
    node = _Node(prefix)
    longer: dict[int, list[tuple[bytes, Entry]]] = {}
    for path, entry in group:
        if len(path) == position:
            node.entry = entry
        else:
            longer.setdefault(path[position], []).append((path, entry))
    for first, paths in longer.items():
        boundary = (position // MAX_PREFIX + 1) * MAX_PREFIX
        end = min(boundary, _common_end(paths, position))
        node.children[first] = _grow(paths[0][0][position:end], paths, end)
    return node


def _common_end(paths: list[tuple[bytes, Entry]], position: int) -> int:
    first, last = paths[0][0], paths[-1][0]  # sorted: their common prefix is everyone's
    end = position
    while end < len(first) and end < len(last) and first[end] == last[end]:
        end += 1
    return end


@dataclass(frozen=True)
class Saved:
    """A stored manifest: its root reference, every chunk of its nodes, and each node's bytes."""

    reference: bytes
    chunks: list[Chunk]
    nodes: dict[bytes, bytes]


def save(entries: Mapping[bytes, Entry], obfuscation_key: bytes = bytes(32)) -> Saved:
    """Every node of the manifest of `entries`, encoded and cut into chunks (each node with
    `obfuscation_key`, as Bee does; bee-js obfuscates no node but its root)."""
    chunks: dict[bytes, Chunk] = {}
    nodes: dict[bytes, bytes] = {}
    reference = _save(build(entries), obfuscation_key, chunks, nodes)
    return Saved(reference, list(chunks.values()), nodes)


def _save(node: _Node, key: bytes, chunks: dict[bytes, Chunk], nodes: dict[bytes, bytes]) -> bytes:
    forks = {
        first: ForkRecord(
            child.prefix,
            _save(child, key, chunks, nodes),
            _type(child),
            child.entry.metadata if child.entry is not None else None,
        )
        for first, child in node.children.items()
    }
    data = encode_node(NodeRecord(_target(node), forks, key))
    reference, pieces = split_bytes(data)
    chunks.update((chunk.address, chunk) for chunk in pieces)
    nodes[reference] = data
    return reference


def _target(node: _Node) -> bytes:
    if node.entry is not None and node.entry.reference != NO_REFERENCE:
        return node.entry.reference
    return b"" if node.prefix == b"/" else NO_REFERENCE


def _type(node: _Node) -> int:
    kind = 0
    if (node.entry is not None and node.entry.reference != NO_REFERENCE) or node.prefix == b"/":
        kind |= TYPE_VALUE
    if node.children:
        kind |= TYPE_EDGE
    if b"/" in node.prefix and node.prefix != b"/":
        kind |= TYPE_WITH_PATH_SEPARATOR
    if node.entry is not None and node.entry.metadata is not None:
        kind |= TYPE_WITH_METADATA
    return kind
