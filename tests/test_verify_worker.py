"""The verifier worker's frames (pure) and its serving loop, run in this process over byte streams."""

from __future__ import annotations

import io
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunks import Chunk
from chunks.ethkey import Secp256k1Key
from chunks.soc import make_soc
from swarm.testing import random_chunks
from syncer.verify_worker import (
    MAX_BATCH,
    MAX_FRAME,
    RingSpace,
    WorkerProtocolError,
    check,
    decode_reply,
    decode_request,
    encode_reference,
    encode_reply,
    encode_request,
    frame_length,
    request_size,
    serve,
    write_request,
)

VALID = random_chunks(4, seed=301)

chunks_st = st.lists(
    st.builds(Chunk, st.binary(min_size=32, max_size=32), st.binary(max_size=4104)), min_size=1, max_size=8
)
problems_st = st.lists(st.none() | st.text(max_size=50), max_size=20)


def body(frame: bytes) -> bytes:
    assert frame_length(frame[:4]) == len(frame) - 4
    return frame[4:]


@given(chunks_st)
def test_request_round_trip(chunks: list[Chunk]) -> None:
    assert decode_request(body(encode_request(chunks))) == chunks


@given(problems_st)
def test_reply_round_trip(problems: list[str | None]) -> None:
    expected = [p or None for p in problems]  # an empty problem means valid
    assert decode_reply(body(encode_reply(problems)), len(problems)) == expected


@given(chunks_st, st.data())
def test_a_truncated_request_is_refused(chunks: list[Chunk], data: st.DataObject) -> None:
    whole = body(encode_request(chunks))
    cut = data.draw(st.integers(0, len(whole) - 1))
    with pytest.raises(WorkerProtocolError):
        decode_request(whole[:cut])


def test_malformed_requests_name_the_problem() -> None:
    whole = body(encode_request(VALID[:1]))
    with pytest.raises(WorkerProtocolError, match="bytes after the last chunk"):
        decode_request(whole + b"x")
    with pytest.raises(WorkerProtocolError, match="counts 0 chunks"):
        decode_request(struct.pack(">H", 0))
    with pytest.raises(WorkerProtocolError, match="over the"):
        frame_length(struct.pack(">I", MAX_FRAME + 1))
    with pytest.raises(WorkerProtocolError, match="verdict on chunk 1"):
        decode_reply(body(encode_reply([None])), 2)
    with pytest.raises(ValueError, match=r"1\.\.1024"):
        encode_request([])
    with pytest.raises(ValueError, match=r"1\.\.1024"):
        encode_request(VALID[:1] * (MAX_BATCH + 1))


def test_long_problems_are_clipped() -> None:
    (problem,) = decode_reply(body(encode_reply(["x" * 5000])), 1)
    assert problem == "x" * 1000


def test_check_names_what_is_wrong() -> None:
    good = VALID[0]
    assert check(good) is None
    forged = Chunk(good.address, VALID[1].data)
    problem = check(forged)
    assert problem is not None and "hashes to" in problem
    assert "shorter than" in (check(Chunk(good.address, b"abc")) or "")


def test_check_accepts_single_owner_chunks_and_names_a_forgery() -> None:
    key = Secp256k1Key.generate()
    small, full = make_soc(key, bytes(32), b"feed update"), make_soc(key, b"\x01" * 32, bytes(4096))
    chunks = [Chunk.from_soc(small), Chunk.from_soc(full)]
    assert [check(c) for c in decode_request(body(encode_request(chunks)))] == [None, None]  # 4201 bytes fit
    forged = Chunk(full.address, full.data[:-1] + b"X")
    assert "give the address" in (check(forged) or "")
    impostor = make_soc(Secp256k1Key.generate(), small.id, small.payload)
    assert "as a single-owner chunk: id and signer" in (check(Chunk(small.address, impostor.data)) or "")


def test_serve_answers_every_request_in_order_until_the_input_ends() -> None:
    forged = Chunk(VALID[0].address, VALID[1].data)
    requests = [VALID[:2], [forged], [VALID[2], forged, VALID[3]]]
    reader = io.BytesIO(b"".join(encode_request(r) for r in requests))
    writer = io.BytesIO()
    serve(reader, writer)
    replies = io.BytesIO(writer.getvalue())
    verdicts = []
    for request in requests:
        size = frame_length(replies.read(4))
        verdicts.append([p is None for p in decode_reply(replies.read(size), len(request))])
    assert replies.read() == b""
    assert verdicts == [[True, True], [False], [True, False, True]]


def test_serve_refuses_a_stream_cut_inside_a_frame() -> None:
    frame = encode_request(VALID[:1])
    with pytest.raises(WorkerProtocolError, match="short of a frame"):
        serve(io.BytesIO(frame[:-10]), io.BytesIO())


@given(chunks_st, st.integers(0, 100))
def test_a_request_written_in_place_is_the_encoded_request(chunks: list[Chunk], offset: int) -> None:
    size = request_size(chunks)
    encoded = encode_request(chunks)
    assert size == len(encoded) - 4
    buffer = bytearray(b"\xee" * (offset + size + 7))
    write_request(buffer, offset, chunks)
    assert buffer[offset : offset + size] == encoded[4:]
    assert buffer[:offset] == b"\xee" * offset and buffer[offset + size :] == b"\xee" * 7
    assert decode_request(memoryview(buffer)[offset : offset + size]) == chunks


def test_request_size_checks_what_encode_request_checks() -> None:
    with pytest.raises(ValueError, match=r"1\.\.1024"):
        request_size([])
    with pytest.raises(ValueError, match="over 4201"):
        request_size([Chunk(bytes(32), bytes(4202))])


@given(st.lists(st.none() | st.just("bad chunk"), min_size=1, max_size=MAX_BATCH))
def test_an_all_valid_reply_is_zeros_and_any_reply_decodes_as_the_slow_path_would(
    problems: list[str | None],
) -> None:
    frame = encode_reply(problems)
    if not any(problems):
        assert frame[4:] == bytes(2 * len(problems))
    assert decode_reply(body(frame), len(problems)) == problems


ring_ops_st = st.lists(st.one_of(st.integers(1, 300), st.just(0)), max_size=60)


@given(st.integers(1, 1000), ring_ops_st)
def test_ring_regions_stay_inside_never_overlap_and_free_in_order(size: int, ops: list[int]) -> None:
    ring = RingSpace(size)
    live: list[tuple[int, int]] = []  # (start, end), oldest first: what the ring should hold
    for op in ops:
        if op == 0:  # release the oldest, if any
            if live:
                ring.release()
                live.pop(0)
            continue
        start = ring.take(op)
        if not live:
            assert (start is None) == (op > size)  # an empty ring takes anything that fits
        if start is not None:
            assert start >= 0 and start + op <= size
            assert all(start + op <= s or e <= start for s, e in live)
            live.append((start, start + op))
        assert len(ring) == len(live)


def test_a_ring_wraps_round_when_the_end_has_no_room() -> None:
    ring = RingSpace(100)
    assert [ring.take(40), ring.take(40)] == [0, 40]
    assert ring.take(30) is None  # 20 left at the end, nothing freed at the start
    ring.release()
    assert ring.take(30) == 0  # wraps round into the freed start
    assert ring.take(11) is None  # 10 free between the newest (30) and the oldest (40)
    assert ring.take(10) == 30
    with pytest.raises(ValueError, match="positive length"):
        ring.take(0)


def test_serve_answers_requests_in_shared_memory_and_in_the_pipe_alike() -> None:
    forged = Chunk(VALID[0].address, VALID[1].data)
    shared = bytearray(64 * 1024)
    first, second = [VALID[0], forged], [VALID[2], VALID[3]]
    write_request(shared, 0, first)
    write_request(shared, 30_000, second)
    frames = [
        encode_reference(0, request_size(first)),
        encode_request([forged]),
        encode_reference(30_000, request_size(second)),
    ]
    writer = io.BytesIO()
    serve(io.BytesIO(b"".join(frames)), writer, memoryview(shared))
    replies = io.BytesIO(writer.getvalue())
    verdicts = []
    for count in (2, 1, 2):
        size = frame_length(replies.read(4))
        verdicts.append([p is None for p in decode_reply(replies.read(size), count)])
    assert verdicts == [[True, False], [False], [True, True]]


def test_a_reference_past_the_shared_memory_or_without_it_is_refused() -> None:
    shared = memoryview(bytearray(1000))
    with pytest.raises(WorkerProtocolError, match="past 1000 bytes of shared memory"):
        serve(io.BytesIO(encode_reference(900, 200)), io.BytesIO(), shared)
    with pytest.raises(WorkerProtocolError, match="no memory is shared"):
        serve(io.BytesIO(encode_reference(0, 10)), io.BytesIO())
