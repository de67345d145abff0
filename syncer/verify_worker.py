"""A chunk-verifying worker process, and the frames the node and the worker exchange (no trio).

Verification (the BMT hash, 128 Keccak calls per full chunk) is most of what a syncing node's
CPU does, and Python runs it on one core. The node (`syncer.verifier`) hands batches of delivered
chunks to worker processes (on every core) over their stdin and reads one reply per batch, in
order, from their stdout. The worker is a plain blocking loop: it exits when its stdin closes (the
node ended, however it ended) and ignores SIGINT and SIGTERM (the node decides when it stops: a
Ctrl-C, or systemd stopping the service, signals the whole process group, and a worker dying
first would be taken for a failure while the node shuts down).

Frames, both ways: a 4-byte big-endian length, then the body.

- Request body: count (u16, 1..MAX_BATCH), then per chunk: address (32 bytes), data length
  (u32), data.
- Reference body: a zero count (u16), offset (u32), length (u32): the request body lies at that
  offset of the memory the node shares with the worker (a memfd both map; its descriptor and size
  are the worker's ``--shared FD SIZE`` arguments). The node writes a batch's chunks there once,
  instead of copying them into a request and the request through the pipe, and reuses the region
  only after the worker has answered it (`RingSpace`: requests are answered in order, so regions
  are freed in the order they were taken). A request that does not fit goes through the pipe.
- Reply body: per chunk of the request, in order: problem length (u16), problem (UTF-8); an
  empty problem means the chunk is valid (a batch of valid chunks answers with zeros only).
"""

from __future__ import annotations

import mmap
import signal
import struct
import sys
from collections import deque
from collections.abc import Sequence
from typing import BinaryIO

from chunks.chunk import ADDRESS_SIZE, MAX_DATA_SIZE, Chunk, InvalidChunk

__all__ = [
    "MAX_BATCH",
    "RingSpace",
    "WorkerProtocolError",
    "check",
    "decode_reply",
    "decode_request",
    "encode_reference",
    "encode_reply",
    "encode_request",
    "frame_length",
    "request_size",
    "serve",
    "write_request",
]

MAX_BATCH = 1024
"""Most chunks in one request."""
MAX_DATA = MAX_DATA_SIZE
"""Largest chunk data in a request: a single-owner chunk's (4201 bytes)."""
MAX_PROBLEM = 1000
"""Problems are clipped to this many bytes (a message, not a payload)."""
MAX_FRAME = 2 + MAX_BATCH * (ADDRESS_SIZE + 4 + MAX_DATA)

_LENGTH = struct.Struct(">I")
_COUNT = struct.Struct(">H")
_CHUNK_HEADER = struct.Struct(f">{ADDRESS_SIZE}sI")
_REFERENCE = struct.Struct(">HII")  # a zero count, offset, length
_ALL_VALID = bytes(2 * MAX_BATCH)  # the reply body of a batch of valid chunks, at most


class WorkerProtocolError(Exception):
    """A frame between the node and its verifier worker is malformed (a bug, or a dead peer)."""


class RingSpace:
    """Regions of a buffer of ``size`` bytes, taken and released first in, first out (pure).

    The live regions lie end to end from the oldest to the newest, wrapping round the end of the
    buffer at most once; a new region goes after the newest, or at the start when the end has no
    room, and never overlaps a live one.
    """

    def __init__(self, size: int) -> None:
        if size <= 0:
            raise ValueError(f"a ring needs a positive size, not {size}")
        self.size = size
        self._regions: deque[tuple[int, int]] = deque()  # (start, end), oldest first

    def __len__(self) -> int:
        return len(self._regions)

    def take(self, length: int) -> int | None:
        """The offset of a new region of ``length`` (> 0) bytes, or None if there is no room now."""
        if length <= 0:
            raise ValueError(f"a region needs a positive length, not {length}")
        if not self._regions:
            start = 0 if length <= self.size else None
        else:
            oldest, newest = self._regions[0][0], self._regions[-1][1]
            wrapped = self._regions[-1][0] < oldest
            if wrapped:
                start = newest if newest + length <= oldest else None
            elif newest + length <= self.size:
                start = newest
            else:
                start = 0 if length <= oldest else None
        if start is not None:
            self._regions.append((start, start + length))
        return start

    def release(self) -> None:
        """Free the oldest region."""
        self._regions.popleft()


def request_size(chunks: Sequence[Chunk]) -> int:
    """The body size of a request for ``chunks``; ValueError unless 1..MAX_BATCH chunks of at
    most MAX_DATA bytes each."""
    if not 0 < len(chunks) <= MAX_BATCH:
        raise ValueError(f"a request holds 1..{MAX_BATCH} chunks, not {len(chunks)}")
    size = _COUNT.size + len(chunks) * _CHUNK_HEADER.size
    for chunk in chunks:
        if len(chunk.data) > MAX_DATA:
            raise ValueError(f"chunk data is {len(chunk.data)} bytes, over {MAX_DATA}")
        size += len(chunk.data)
    return size


def encode_request(chunks: Sequence[Chunk]) -> bytes:
    """The framed request to verify ``chunks`` (1..MAX_BATCH of them)."""
    size = request_size(chunks)
    parts = [_LENGTH.pack(size), _COUNT.pack(len(chunks))]
    for chunk in chunks:
        parts.append(_CHUNK_HEADER.pack(chunk.address, len(chunk.data)))
        parts.append(chunk.data)
    return b"".join(parts)


def write_request(buffer: mmap.mmap | bytearray, offset: int, chunks: Sequence[Chunk]) -> None:
    """Write the request body for ``chunks`` into ``buffer`` at ``offset`` (checked by
    `request_size` first: the caller has taken that many bytes there)."""
    _COUNT.pack_into(buffer, offset, len(chunks))
    offset += _COUNT.size
    pack_header = _CHUNK_HEADER.pack_into
    for chunk in chunks:
        data = chunk.data
        pack_header(buffer, offset, chunk.address, len(data))
        offset += _CHUNK_HEADER.size
        buffer[offset : offset + len(data)] = data
        offset += len(data)


def encode_reference(offset: int, length: int) -> bytes:
    """The framed request whose body is the ``length`` bytes at ``offset`` of the shared memory."""
    return _LENGTH.pack(_REFERENCE.size) + _REFERENCE.pack(0, offset, length)


def _referenced(body: bytes, shared: memoryview | None) -> memoryview:
    """The request body a reference body points to in ``shared``."""
    if shared is None:
        raise WorkerProtocolError("a request in shared memory, and no memory is shared")
    if len(body) != _REFERENCE.size:
        raise WorkerProtocolError(f"a reference of {len(body)} bytes")
    _, offset, length = _REFERENCE.unpack(body)
    if offset + length > len(shared) or length > MAX_FRAME:
        raise WorkerProtocolError(
            f"a request at {offset}+{length}, past {len(shared)} bytes of shared memory"
        )
    return shared[offset : offset + length]


def decode_request(body: bytes | memoryview) -> list[Chunk]:
    """The chunks of a request body (without its length prefix)."""
    if len(body) < _COUNT.size:
        raise WorkerProtocolError(f"request of {len(body)} bytes has no chunk count")
    (count,) = _COUNT.unpack_from(body)
    if not 0 < count <= MAX_BATCH:
        raise WorkerProtocolError(f"request counts {count} chunks, not 1..{MAX_BATCH}")
    view = memoryview(body)
    offset = _COUNT.size
    chunks = []
    for i in range(count):
        if offset + _CHUNK_HEADER.size > len(body):
            raise WorkerProtocolError(f"request ends inside the header of chunk {i}")
        address, size = _CHUNK_HEADER.unpack_from(body, offset)
        offset += _CHUNK_HEADER.size
        if size > MAX_DATA or offset + size > len(body):
            raise WorkerProtocolError(f"chunk {i} claims {size} bytes of data, past the request's end")
        chunks.append(Chunk(address, bytes(view[offset : offset + size])))
        offset += size
    if offset != len(body):
        raise WorkerProtocolError(f"{len(body) - offset} bytes after the last chunk of a request")
    return chunks


def encode_reply(problems: Sequence[str | None]) -> bytes:
    """The framed reply: one problem per chunk, None (empty) for a valid one."""
    if not any(problems) and len(problems) <= MAX_BATCH:
        return _LENGTH.pack(2 * len(problems)) + _ALL_VALID[: 2 * len(problems)]
    parts = [b""]
    for problem in problems:
        text = (problem or "").encode("utf-8", "replace")[:MAX_PROBLEM]
        parts.append(_COUNT.pack(len(text)))
        parts.append(text)
    parts[0] = _LENGTH.pack(sum(map(len, parts)))
    return b"".join(parts)


def decode_reply(body: bytes, count: int) -> list[str | None]:
    """The ``count`` problems of a reply body (None: valid)."""
    if len(body) == 2 * count and body == _ALL_VALID[: 2 * count]:
        return [None] * count
    problems: list[str | None] = []
    offset = 0
    for i in range(count):
        if offset + _COUNT.size > len(body):
            raise WorkerProtocolError(f"reply ends before the verdict on chunk {i} of {count}")
        (size,) = _COUNT.unpack_from(body, offset)
        offset += _COUNT.size
        if offset + size > len(body):
            raise WorkerProtocolError(f"reply ends inside the problem of chunk {i}")
        problems.append(body[offset : offset + size].decode("utf-8", "replace") or None)
        offset += size
    if offset != len(body):
        raise WorkerProtocolError(f"{len(body) - offset} bytes after the last verdict of a reply")
    return problems


def frame_length(header: bytes) -> int:
    """The body length a 4-byte frame header announces; refuses anything over MAX_FRAME."""
    (length,) = _LENGTH.unpack(header)
    if length > MAX_FRAME:
        raise WorkerProtocolError(f"frame of {length} bytes is over the {MAX_FRAME}-byte limit")
    return length


def check(chunk: Chunk) -> str | None:
    """None if ``chunk`` is a valid content chunk or single-owner chunk, else what is wrong with it."""
    try:
        chunk.verify()
    except InvalidChunk as exc:
        return exc.problem
    return None


def _read_exactly(reader: BinaryIO, size: int) -> bytes | None:
    data = reader.read(size)
    if not data:
        return None
    if len(data) != size:
        raise WorkerProtocolError(f"stream ended {size - len(data)} bytes short of a frame")
    return data


def serve(reader: BinaryIO, writer: BinaryIO, shared: memoryview | None = None) -> None:
    """Answer requests from ``reader`` on ``writer`` until ``reader`` ends; reference requests
    point into ``shared``. A request's chunks are copied out of it before the reply is written:
    once answered, its region may be overwritten."""
    while True:
        header = _read_exactly(reader, _LENGTH.size)
        if header is None:
            return
        body = _read_exactly(reader, frame_length(header)) or b""
        if body[:2] == b"\0\0":
            chunks = decode_request(_referenced(body, shared))
        else:
            chunks = decode_request(body)
        writer.write(encode_reply([check(chunk) for chunk in chunks]))
        writer.flush()


def _shared_memory(argv: list[str]) -> memoryview | None:
    """The memory the node shares, from ``--shared FD SIZE`` (None without them)."""
    if argv[:1] != ["--shared"]:
        return None
    fd, size = int(argv[1]), int(argv[2])
    return memoryview(mmap.mmap(fd, size, prot=mmap.PROT_READ))


def main() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    reader, writer = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write into the reply stream
    try:
        serve(reader, writer, _shared_memory(sys.argv[1:]))
    except (WorkerProtocolError, BrokenPipeError) as exc:
        print(f"chunk verifier worker: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
