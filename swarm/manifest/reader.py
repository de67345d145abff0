"""A stored manifest read through a function that returns a node's bytes: lookups, prefixes,
listing. Nodes are read once each (a manifest of many files is walked node by node).

Works on any mantaray node tree (Bee's, bee-js's, ours): it follows the forks as stored, it
does not assume how they were cut.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from swarm.manifest.nodes import NodeRecord, decode_node
from swarm.manifest.trie import Entry

__all__ = ["Found", "ManifestReader", "ReadNode"]

ReadNode = Callable[[bytes], Awaitable[bytes]]
"""reference -> the bytes of the node stored there (the file at that reference)."""


@dataclass(frozen=True)
class Found:
    """The node at a path: the reference it names (None: none) and its metadata (None: none)."""

    reference: bytes | None
    metadata: dict[str, str] | None


class ManifestReader:
    def __init__(self, read: ReadNode, root: bytes) -> None:
        self._read = read
        self.root = root
        self._nodes: dict[bytes, NodeRecord] = {}

    async def node(self, reference: bytes) -> NodeRecord:
        """The node stored at `reference` (raises InvalidManifest if it is not one)."""
        node = self._nodes.get(reference)
        if node is None:
            node = self._nodes[reference] = decode_node(await self._read(reference))
        return node

    async def lookup(self, path: bytes) -> Found | None:
        """The node whose path is exactly `path`, or None."""
        node = await self.node(self.root)
        metadata = None
        rest = path
        while rest:
            fork = node.forks.get(rest[0])
            if fork is None or not rest.startswith(fork.prefix):
                return None
            rest = rest[len(fork.prefix) :]
            node, metadata = await self.node(fork.ref), fork.metadata
        return Found(node.target if node.has_target else None, metadata)

    async def entry(self, path: bytes) -> Entry | None:
        """The entry naming content at `path`, or None (a path naming nothing is not an entry)."""
        found = await self.lookup(path)
        if found is None or found.reference is None:
            return None
        return Entry(found.reference, found.metadata)

    async def has_prefix(self, path: bytes) -> bool:
        """Whether any path of the manifest starts with `path`."""
        node = await self.node(self.root)
        rest = path
        while rest:
            fork = node.forks.get(rest[0])
            if fork is None:
                return False
            if fork.prefix.startswith(rest):
                return True
            if not rest.startswith(fork.prefix):
                return False
            rest = rest[len(fork.prefix) :]
            node = await self.node(fork.ref)
        return True

    async def entries(self) -> dict[bytes, Entry]:
        """Every path naming a reference or carrying metadata, with its entry, in byte order."""
        found: dict[bytes, Entry] = {}
        await self._walk(self.root, b"", found)
        return found

    async def _walk(self, reference: bytes, path: bytes, found: dict[bytes, Entry]) -> None:
        node = await self.node(reference)
        for first in sorted(node.forks):
            fork = node.forks[first]
            child = await self.node(fork.ref)
            if child.has_target or fork.metadata is not None:
                target = child.target if child.has_target else bytes(32)
                found[path + fork.prefix] = Entry(target, fork.metadata)
            await self._walk(fork.ref, path + fork.prefix, found)
