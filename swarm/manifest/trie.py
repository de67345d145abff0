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
from swarm.files.chunker import Splitter
from swarm.files.encryption import EncryptingSeal
from swarm.manifest.nodes import (
    ENCRYPTED_REF_SIZE,
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
        if len(self.reference) not in (REF_SIZE, ENCRYPTED_REF_SIZE):
            raise InvalidManifest(f"an entry's reference must be 32 or 64 bytes, got {len(self.reference)}")

    @property
    def names_content(self) -> bool:
        """Whether the reference names something (zeros: no content, only metadata)."""
        return any(self.reference)


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


def save(
    entries: Mapping[bytes, Entry], obfuscation_key: bytes = bytes(32), *, encrypt: bool = False
) -> Saved:
    """Every node of the manifest of `entries`, encoded and cut into chunks (each node with
    `obfuscation_key`, as Bee does; bee-js obfuscates no node but its root).

    With `encrypt` (Bee's `Swarm-Encrypt`), every node is stored encrypted and named by a 64-byte
    reference, and every target is 64 bytes (zeros when it names nothing), as Bee writes them."""
    saver = _Saver(obfuscation_key, encrypt)
    reference = saver.save(build(entries))
    return Saved(reference, list(saver.chunks.values()), saver.nodes)


class _Saver:
    def __init__(self, key: bytes, encrypt: bool) -> None:
        self.key, self.encrypt = key, encrypt
        self.chunks: dict[bytes, Chunk] = {}
        self.nodes: dict[bytes, bytes] = {}

    def save(self, node: _Node) -> bytes:
        forks = {
            first: ForkRecord(
                child.prefix,
                self.save(child),
                _type(child),
                child.entry.metadata if child.entry is not None else None,
            )
            for first, child in node.children.items()
        }
        data = encode_node(NodeRecord(self._target(node), forks, self.key))
        splitter = Splitter(EncryptingSeal() if self.encrypt else None)
        pieces = splitter.feed(data)
        reference, rest = splitter.finish()
        self.chunks.update((chunk.address, chunk) for chunk in pieces + rest)
        self.nodes[reference] = data
        return reference

    def _target(self, node: _Node) -> bytes:
        if node.entry is not None and node.entry.names_content:
            return node.entry.reference
        if self.encrypt:
            return bytes(ENCRYPTED_REF_SIZE)  # Bee's: the node's reference size, zeros
        return b"" if node.prefix == b"/" else NO_REFERENCE


def _type(node: _Node) -> int:
    kind = 0
    if (node.entry is not None and node.entry.names_content) or node.prefix == b"/":
        kind |= TYPE_VALUE
    if node.children:
        kind |= TYPE_EDGE
    if b"/" in node.prefix and node.prefix != b"/":
        kind |= TYPE_WITH_PATH_SEPARATOR
    if node.entry is not None and node.entry.metadata is not None:
        kind |= TYPE_WITH_METADATA
    return kind
