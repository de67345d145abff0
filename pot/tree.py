"""``Pot``: an immutable set of equal-length addresses organised by proximity order.

Representation: a binary crit-bit (PATRICIA) trie over the address bits, most significant first (see
``pot._trie``), rather than the Swarm pot's pin-and-bins nodes. The two are equivalent views of one tree:
the Swarm pot's bins of a node are the subtrees hanging off the path to its pin, and the PO of two members
is the split bit of their lowest common inner node here. The trie is chosen because it is canonical (one
shape per member set, so equality and iteration order are structural), every inner node has exactly two
children (so updates copy exactly the root-to-leaf path: O(depth) new nodes, the rest is shared), and its
split bits are the POs the gaps are made of. Each node also caches the biggest and the hottest gap inside
its subtree, computed as the node is created, so both gap searches are one O(depth) descent.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pot import _trie
from pot._trie import Node
from pot.gaps import Gap, biggest_gap, empty_region_gap, hottest_gap

__all__ = ["Pot"]


class Pot:
    """An immutable set of equal-length byte addresses; updates return a new pot sharing structure.

    Iteration is in ascending byte order; ``==`` compares members. A pot takes the address length of its
    first member; adding an address of another length is a ``ValueError``, while ``in`` just says False.
    """

    __slots__ = ("_hash", "_nbits", "_root")

    _root: Node | None
    _nbits: int
    _hash: int | None

    def __init__(self) -> None:
        """The empty pot."""
        object.__setattr__(self, "_root", None)
        object.__setattr__(self, "_nbits", 0)
        object.__setattr__(self, "_hash", None)

    @classmethod
    def _of(cls, root: Node | None, nbits: int) -> Pot:
        pot = cls.__new__(cls)
        object.__setattr__(pot, "_root", root)
        object.__setattr__(pot, "_nbits", nbits)
        object.__setattr__(pot, "_hash", None)
        return pot

    @classmethod
    def from_addresses(cls, addresses: Iterable[bytes]) -> Pot:
        """The pot of ``addresses`` (duplicates collapse), built bottom up in O(n log n)."""
        by_key: dict[int, bytes] = {}
        nbytes = 0
        for address in addresses:
            addr = _as_bytes(address)
            if not nbytes:
                nbytes = _address_length(addr)
            elif len(addr) != nbytes:
                raise ValueError(f"address {addr.hex()} has {len(addr)} bytes, the others have {nbytes}")
            by_key[int.from_bytes(addr)] = addr
        return cls._of(_trie.build(sorted(by_key.items()), nbytes * 8), nbytes * 8)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Pot is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Pot is immutable: cannot delete {name!r}")

    @property
    def nbits(self) -> int | None:
        """The address length in bits; None while the pot is empty."""
        return self._nbits if self._root is not None else None

    def __len__(self) -> int:
        return 0 if self._root is None else self._root.n

    def __bool__(self) -> bool:
        return self._root is not None

    def __contains__(self, address: object) -> bool:
        root = self._root
        if root is None or not isinstance(address, bytes | bytearray | memoryview):
            return False
        if len(address) * 8 != self._nbits:
            return False
        key = int.from_bytes(address)
        return _trie.nearest(root, key, self._nbits).key == key

    def __iter__(self) -> Iterator[bytes]:
        return iter(()) if self._root is None else _trie.ascending(self._root)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Pot):
            return NotImplemented
        # canonical tries: equal member sets are equal trees; tuple comparison skips shared subtrees
        return self._root == other._root

    def __hash__(self) -> int:
        cached = self._hash
        if cached is None:
            cached = hash(frozenset(self))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __repr__(self) -> str:
        if len(self) > 4:
            return f"<Pot of {len(self)} {self._nbits}-bit addresses>"
        return f"Pot.from_addresses([{', '.join(f'bytes.fromhex({a.hex()!r})' for a in self)}])"

    def add(self, address: bytes) -> Pot:
        """This pot with ``address`` added; the same pot when it is already a member. O(depth)."""
        addr = _as_bytes(address)
        root = self._root
        if root is None:
            nbits = _address_length(addr) * 8
            return Pot._of(_trie.leaf(int.from_bytes(addr), addr, nbits), nbits)
        self._check_length(addr, "add")
        new = _trie.insert(root, int.from_bytes(addr), addr, self._nbits)
        return self if new is root else Pot._of(new, self._nbits)

    def remove(self, address: bytes) -> Pot:
        """This pot without ``address``; ``KeyError`` if it is not a member. O(depth)."""
        addr = _as_bytes(address)
        if self._root is None:
            raise KeyError(addr)
        self._check_length(addr, "remove")
        try:
            new = _trie.delete(self._root, int.from_bytes(addr), self._nbits)
        except KeyError:
            raise KeyError(addr) from None
        return Pot._of(new, self._nbits)

    def closest(self, target: bytes) -> Iterator[bytes]:
        """Yield the members lazily in increasing XOR distance to ``target``; the first k cost O(k * depth).

        Proximity to ``target`` never increases along the way: the basis of closest-peer lookups.
        """
        target = _as_bytes(target)
        if self._root is None:
            return iter(())
        self._check_length(target, "closest")
        return _trie.by_distance(self._root, int.from_bytes(target), self._nbits)

    def nearest(self, target: bytes) -> bytes:
        """The member closest to ``target`` by XOR distance (``target`` itself when a member). O(depth).

        The first item of ``closest(target)`` without making an iterator: the step of greedy routing.
        ``ValueError`` for an empty pot or a length mismatch.
        """
        target = _as_bytes(target)
        if self._root is None:
            raise ValueError("nearest member of an empty pot")
        self._check_length(target, "nearest")
        return _trie.nearest(self._root, int.from_bytes(target), self._nbits).addr

    def with_prefix(self, prefix: bytes, bits: int) -> Pot:
        """The members whose first ``bits`` bits equal those of ``prefix``, as a pot sharing this one's nodes.

        O(depth). Bin ``k`` of a node with overlay ``b`` is ``with_prefix(b with bit k flipped, k + 1)``.
        """
        node = self._region(prefix, bits)
        return Pot._of(node, self._nbits)

    def biggest_address_gap(self, region_prefix: bytes = b"", region_bits: int = 0) -> Gap | None:
        """The gap of lowest PO, then lowest anchor, among the gaps inside the region. O(depth).

        The region is every address whose first ``region_bits`` bits are those of ``region_prefix`` (0:
        the whole space); only gaps ``R(n, p)`` with ``n`` in it and ``p >= region_bits`` count. A region
        without members is itself the gap. None when there is no gap at all.
        """
        node = self._region(region_prefix, region_bits)
        if node is None:
            return empty_region_gap(region_prefix, region_bits)
        return biggest_gap(node, region_bits, self._nbits)

    def hottest_gap(self, region_prefix: bytes = b"", region_bits: int = 0) -> Gap | None:
        """The gap of greatest temperature, then lowest PO, then lowest anchor, inside the region. O(depth).

        Region and None as for ``biggest_address_gap``; an empty region counts as served by 1.
        """
        node = self._region(region_prefix, region_bits)
        if node is None:
            return empty_region_gap(region_prefix, region_bits)
        return hottest_gap(node, region_bits, self._nbits)

    def _region(self, prefix: bytes, bits: int) -> Node | None:
        """The subtree of the members in the region ``prefix``/``bits``, after checking both."""
        prefix = _as_bytes(prefix)
        if not 0 <= bits <= len(prefix) * 8:
            raise ValueError(f"region of {bits} bits does not fit a prefix of {len(prefix)} bytes")
        root = self._root
        if root is None:
            return None
        if bits > self._nbits:
            raise ValueError(f"region of {bits} bits is longer than the pot's {self._nbits}-bit addresses")
        head = int.from_bytes(prefix) >> (len(prefix) * 8 - bits)
        return _trie.with_prefix(root, head, bits, self._nbits)

    def _check_length(self, addr: bytes, operation: str) -> None:
        if len(addr) * 8 != self._nbits:
            raise ValueError(
                f"{operation}: address {addr.hex()} has {len(addr)} bytes, the pot holds"
                f" {self._nbits // 8}-byte addresses"
            )


def _as_bytes(address: bytes) -> bytes:
    if isinstance(address, bytes):
        return address
    if isinstance(address, bytearray | memoryview):
        return bytes(address)
    raise TypeError(f"an address is bytes, not {type(address).__name__}")


def _address_length(addr: bytes) -> int:
    if not addr:
        raise ValueError("an address has at least one byte, got b''")
    return len(addr)
