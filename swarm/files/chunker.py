"""Files to chunk trees: the splitter (bytes -> chunks + root reference) and the tree's shape rules.

Pure: no trio, no sockets, no disk. The tree has the shape of the Swarm reference implementation
(bee's hashtrie writer, no erasure coding), so references are interoperable (an encrypted
file, sealed by swarm.files.encryption, has 64-byte references and so 64 to an intermediate chunk
where this says 128; a decrypted chunk, named by its 64-byte reference, is read by the same rules):

- the file is cut into data chunks of 4096 bytes, the last one shorter (an empty file is one
  empty data chunk);
- references are gathered level by level; every 128 references of a level are wrapped into an
  intermediate chunk (payload = the concatenated 32-byte addresses, span = the file bytes under it)
  whose reference goes one level up;
- at the end, from the lowest level up, a level holding several references is wrapped, and a level
  holding a *single* reference carries it up unchanged (it is never wrapped in a one-child
  intermediate chunk); the one reference left at the top is the root. A file of at most 4096 bytes
  is therefore its single data chunk.

Consequence used by the joiner: in an intermediate chunk of span S, all children but the last
cover `c` bytes each, where `c` is the smallest 4096 * 128**k with 128 * c >= S, and the last
child covers the rest; so the number of children and every child's span follow from S alone.

The joiner itself (walking a tree back into bytes, verifying every chunk) lives in `swarm.files.joiner`;
this module holds the tree's shape rules that both sides share (`child_refs`, `children_in_range`).
"""

from __future__ import annotations

from typing import Protocol

from chunks.chunk import CHUNK_SIZE, Chunk

REF_SIZE = 32
"""Length of a chunk address, i.e. of one reference in an intermediate chunk."""
BRANCHES = CHUNK_SIZE // REF_SIZE
"""Children of a full intermediate chunk (128)."""
MAX_LEVELS = 8
"""Intermediate levels supported, as in bee: files up to 4096 * 128**7 bytes."""

__all__ = [
    "BRANCHES",
    "REF_SIZE",
    "CorruptTree",
    "Seal",
    "Splitter",
    "child_count",
    "child_refs",
    "children_in_range",
    "file_size",
    "is_data_chunk",
    "split_bytes",
]


class CorruptTree(ValueError):
    """A chunk of a file tree whose span and payload cannot belong to a well-formed tree."""

    def __init__(self, address: bytes, problem: str) -> None:
        super().__init__(f"corrupt chunk tree at {address.hex()}: {problem}")
        self.address = address
        self.problem = problem


# ---------------------------------------------------------------------------------------------
# Splitting


class Seal(Protocol):
    """How the splitter makes a chunk of (payload, span): the chunk to store and the reference
    its parent holds (`ref_size` bytes long)."""

    ref_size: int

    def __call__(self, payload: bytes, span: int) -> tuple[Chunk, bytes]: ...


class _PlainSeal:
    """The chunk as it is; its reference is its address."""

    ref_size = REF_SIZE

    def __call__(self, payload: bytes, span: int) -> tuple[Chunk, bytes]:
        chunk = Chunk.from_payload(payload, span=span)
        return chunk, chunk.address


class Splitter:
    """Incremental splitter: feed bytes, get finished chunks; `finish()` gives the root reference.

    `seal` makes each chunk (plain by default; `swarm.files.encryption.EncryptingSeal` for an
    encrypted file, whose references are 64 bytes, 64 to an intermediate chunk).

    Memory is bounded: at most one partial data chunk and one partial intermediate chunk
    (< 128 references) per level are held. Any split of the same input into `feed` calls yields
    the same chunks, in the same order, and the same root.
    """

    def __init__(self, seal: Seal | None = None) -> None:
        self._seal: Seal = seal or _PlainSeal()
        self._branches = CHUNK_SIZE // self._seal.ref_size
        self._buffer = bytearray()
        # _levels[i]: (address, span) of finished subtrees of up to 4096 * 128**i bytes waiting for
        # their parent (level 0: data chunks); fewer than 128 per level between calls.
        self._levels: list[list[tuple[bytes, int]]] = [[]]
        self._finished = False
        self.bytes_in = 0
        """Bytes fed so far."""

    def feed(self, data: bytes) -> list[Chunk]:
        """Add file bytes; return the chunks (data and intermediate) completed by them."""
        if self._finished:
            raise RuntimeError("Splitter.feed() after finish()")
        out: list[Chunk] = []
        view = memoryview(data)
        self.bytes_in += len(view)
        pos = 0
        if self._buffer:
            pos = min(len(view), CHUNK_SIZE - len(self._buffer))
            self._buffer += view[:pos]
            if len(self._buffer) < CHUNK_SIZE:
                return out
            self._emit_data(bytes(self._buffer), out)
            self._buffer.clear()
        # Whole chunks straight from the input, without going through the buffer.
        while len(view) - pos >= CHUNK_SIZE:
            self._emit_data(bytes(view[pos : pos + CHUNK_SIZE]), out)
            pos += CHUNK_SIZE
        self._buffer += view[pos:]
        return out

    def finish(self) -> tuple[bytes, list[Chunk]]:
        """End the file: return (root reference, the chunks not returned by `feed` yet)."""
        if self._finished:
            raise RuntimeError("Splitter.finish() called twice")
        self._finished = True
        out: list[Chunk] = []
        if self._buffer or self.bytes_in == 0:
            self._emit_data(bytes(self._buffer), out)
            self._buffer.clear()
        level = 0
        while True:
            refs = self._levels[level]
            top = not any(self._levels[level + 1 :])
            if top and len(refs) == 1:
                return refs[0][0], out
            if len(refs) == 1:
                # bee's carry: a lone last reference moves up a level as it is, unwrapped.
                self._levels[level] = []
                self._push(level + 1, refs[0], out)
            elif refs:
                self._wrap(level, out)
            level += 1

    def _emit_data(self, payload: bytes, out: list[Chunk]) -> None:
        chunk, reference = self._seal(payload, len(payload))
        out.append(chunk)
        self._push(0, (reference, len(payload)), out)

    def _push(self, level: int, ref: tuple[bytes, int], out: list[Chunk]) -> None:
        if level == len(self._levels):
            if level >= MAX_LEVELS:
                raise ValueError("file too large for a chunk tree")
            self._levels.append([])
        refs = self._levels[level]
        refs.append(ref)
        if len(refs) == self._branches:
            self._wrap(level, out)

    def _wrap(self, level: int, out: list[Chunk]) -> None:
        refs = self._levels[level]
        self._levels[level] = []
        span = sum(span for _, span in refs)
        chunk, reference = self._seal(b"".join(address for address, _ in refs), span)
        out.append(chunk)
        self._push(level + 1, (reference, span), out)


def split_bytes(data: bytes) -> tuple[bytes, list[Chunk]]:
    """Split a whole file held in memory: (root reference, every chunk of its tree)."""
    splitter = Splitter()
    chunks = splitter.feed(data)
    root, rest = splitter.finish()
    chunks.extend(rest)
    return root, chunks


# ---------------------------------------------------------------------------------------------
# Tree shape, as seen from one chunk


def file_size(root: Chunk) -> int:
    """Size in bytes of the file (or subtree) under `root`: its span."""
    return root.span


def _branch_size(span: int, branches: int = BRANCHES) -> int:
    """Bytes under each child but the last of an intermediate chunk of this span."""
    size = CHUNK_SIZE
    while size * branches < span:
        size *= branches
    return size


def child_count(span: int, ref_size: int = REF_SIZE) -> int:
    """Children of an intermediate chunk of this span (> 4096) whose references are `ref_size` long."""
    return -(-span // _branch_size(span, CHUNK_SIZE // ref_size))


def _zero_padded(payload: bytes, used: int) -> bool:
    """Whether the payload's bytes past the first `used` are all zero (or there are none)."""
    return not payload[used:].strip(b"\0")


def is_data_chunk(chunk: Chunk) -> bool:
    """Whether the chunk is a leaf holding file bytes (span <= 4096), checking it is well formed.

    Its file bytes are the first `span` bytes of the payload. Zeros past them are padding, as
    bee-js's streamed uploads (`streamDirectory`, `streamFiles`) write every chunk 4096 bytes
    long; Bee reads such chunks by their span too. Other bytes past the span are refused.
    """
    span, n = chunk.span, len(chunk.payload)
    if span <= CHUNK_SIZE:
        if n < span or not _zero_padded(chunk.payload, span):
            raise CorruptTree(chunk.address, f"data chunk with span {span} but {n} payload bytes")
        return True
    return False


def child_refs(chunk: Chunk) -> list[tuple[bytes, int]]:
    """The children of an intermediate chunk as (address, expected span); [] for a data chunk.

    Raises `CorruptTree` when the payload does not hold exactly the number of references that the
    span implies, followed by nothing or by zero padding (as bee-js's streamed uploads write).
    """
    if is_data_chunk(chunk):
        return []
    span, payload = chunk.span, chunk.payload
    ref = len(chunk.address)  # 64 for a decrypted chunk, named by its address and key
    if len(payload) % ref:
        problem = f"intermediate payload of {len(payload)} bytes is not a multiple of {ref}"
        raise CorruptTree(chunk.address, problem)
    size = _branch_size(span, CHUNK_SIZE // ref)
    expected = -(-span // size)
    count = len(payload) // ref
    if count > expected and _zero_padded(payload, expected * ref):
        count = expected
    if count != expected:
        raise CorruptTree(chunk.address, f"span {span} needs {expected} children, chunk has {count}")
    last = span - (count - 1) * size
    return [(payload[i * ref : (i + 1) * ref], size if i < count - 1 else last) for i in range(count)]


def children_in_range(chunk: Chunk, offset: int, start: int, stop: int) -> list[tuple[bytes, int, int]]:
    """(address, span, offset in the file) of the children of `chunk`, which starts at byte
    `offset` of the file, that overlap the bytes [start, stop); [] for a data chunk."""
    wanted = []
    child_offset = offset
    for address, span in child_refs(chunk):
        if child_offset < stop and child_offset + span > start:
            wanted.append((address, span, child_offset))
        child_offset += span
    return wanted
