"""A chunk-verifying worker process, and the frames the node and the worker exchange (no trio).

Verification (the BMT hash, 128 Keccak calls per full chunk) is most of what a syncing node's
CPU does, and Python runs it on one core. The node (`syncer.verifier`) hands batches of delivered
chunks to worker processes on the other cores over their stdin and reads one reply per batch, in
order, from their stdout. The worker is a plain blocking loop: it exits when its stdin closes (the
node ended, however it ended) and ignores SIGINT and SIGTERM (the node decides when it stops: a
Ctrl-C, or systemd stopping the service, signals the whole process group, and a worker dying
first would be taken for a failure while the node shuts down).

Frames, both ways: a 4-byte big-endian length, then the body.

- Request body: count (u16), then per chunk: address (32 bytes), data length (u32), data.
- Reply body: per chunk of the request, in order: problem length (u16), problem (UTF-8); an
  empty problem means the chunk is valid.
"""

from __future__ import annotations

import signal
import struct
import sys
from collections.abc import Sequence
from typing import BinaryIO

from chunks.chunk import ADDRESS_SIZE, MAX_DATA_SIZE, Chunk, InvalidChunk

__all__ = [
    "MAX_BATCH",
    "WorkerProtocolError",
    "check",
    "decode_reply",
    "decode_request",
    "encode_reply",
    "encode_request",
    "frame_length",
    "serve",
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


class WorkerProtocolError(Exception):
    """A frame between the node and its verifier worker is malformed (a bug, or a dead peer)."""


def encode_request(chunks: Sequence[Chunk]) -> bytes:
    """The framed request to verify ``chunks`` (1..MAX_BATCH of them)."""
    if not 0 < len(chunks) <= MAX_BATCH:
        raise ValueError(f"a request holds 1..{MAX_BATCH} chunks, not {len(chunks)}")
    parts = [b"", _COUNT.pack(len(chunks))]
    for chunk in chunks:
        if len(chunk.data) > MAX_DATA:
            raise ValueError(f"chunk data is {len(chunk.data)} bytes, over {MAX_DATA}")
        parts.append(_CHUNK_HEADER.pack(chunk.address, len(chunk.data)))
        parts.append(chunk.data)
    body_size = sum(map(len, parts))
    parts[0] = _LENGTH.pack(body_size)
    return b"".join(parts)


def decode_request(body: bytes) -> list[Chunk]:
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
    parts = [b""]
    for problem in problems:
        text = (problem or "").encode("utf-8", "replace")[:MAX_PROBLEM]
        parts.append(_COUNT.pack(len(text)))
        parts.append(text)
    parts[0] = _LENGTH.pack(sum(map(len, parts)))
    return b"".join(parts)


def decode_reply(body: bytes, count: int) -> list[str | None]:
    """The ``count`` problems of a reply body (None: valid)."""
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


def serve(reader: BinaryIO, writer: BinaryIO) -> None:
    """Answer requests from ``reader`` on ``writer`` until ``reader`` ends."""
    while True:
        header = _read_exactly(reader, _LENGTH.size)
        if header is None:
            return
        body = _read_exactly(reader, frame_length(header)) or b""
        writer.write(encode_reply([check(chunk) for chunk in decode_request(body)]))
        writer.flush()


def main() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    reader, writer = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write into the reply stream
    try:
        serve(reader, writer)
    except (WorkerProtocolError, BrokenPipeError) as exc:
        print(f"chunk verifier worker: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
