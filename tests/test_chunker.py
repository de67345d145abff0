"""Tests of swarm.files.chunker: bee's reference vectors, tree shape by hand, round trips, incremental
feeding, byte ranges, and a joiner that refuses tampered or malformed trees."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Iterator
from typing import ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import swarm.files.chunker as chunker
from chunks.bmt import bmt_address
from chunks.chunk import Chunk, InvalidChunk
from swarm.files.chunker import (
    CorruptTree,
    Splitter,
    child_refs,
    file_size,
    is_data_chunk,
    split_bytes,
)
from swarm.files.joiner import join, join_sync

CS = 4096
Store = dict[bytes, Chunk]


def random_bytes(n: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(n)


def split_to_store(data: bytes) -> tuple[bytes, Store, list[Chunk]]:
    root, chunks = split_bytes(data)
    return root, {c.address: c for c in chunks}, chunks


def read_sync(root: bytes, store: Store, start: int = 0, end: int | None = None) -> bytes:
    return b"".join(join_sync(root, store.__getitem__, start=start, end=end))


async def read_async(
    root: bytes, fetch: Callable[[bytes], Chunk], start: int = 0, end: int | None = None
) -> bytes:
    async def afetch(address: bytes) -> Chunk:
        return fetch(address)

    return b"".join([piece async for piece in join(root, afetch, start=start, end=end)])


# --- an independent model of the stored tree (raw payloads, no chunker code) -------------------


def model_walk(root: bytes, store: Store) -> Iterator[tuple[Chunk, int, int]]:
    """Every chunk of the tree as (chunk, height, offset in the file), children parsed by hand."""

    def walk(address: bytes, offset: int) -> tuple[int, list[tuple[Chunk, int, int]]]:
        chunk = store[address]
        if chunk.span <= CS:
            return 0, [(chunk, 0, offset)]
        found: list[tuple[Chunk, int, int]] = []
        height = 0
        for i in range(0, len(chunk.payload), 32):
            child = chunk.payload[i : i + 32]
            h, sub = walk(child, offset)
            found.extend(sub)
            height = max(height, h + 1)
            offset += store[child].span
        return height, [(chunk, height, offset - chunk.span), *found]

    return iter(walk(root, 0)[1])


def expected_levels(n: int) -> dict[int, int]:
    """Chunks per height from bee's rule: 128 items of a level make a node, a final group of
    two or more makes a node, a final lone item is carried up unwrapped."""
    items = max(1, math.ceil(n / CS))
    counts = {0: items}
    size, height = CS, 0
    while items > 1:
        height += 1
        counts[height] = items // 128 + (1 if items % 128 >= 2 else 0)
        size *= 128
        items = math.ceil(n / size)
    return counts


# --- bee's reference vectors (pkg/file/testing/vector.go) ----------------------------------------

# Data: byte i of the file is i % 255 (go-mockbytes SequentialBytes, seed 0, modulus 255).
BEE_VECTORS = [
    (31, "ece86edb20669cc60d142789d464d57bdf5e33cb789d443f608cbd81cfa5697d"),
    (32, "0be77f0bb7abc9cd0abed640ee29849a3072ccfd1020019fe03658c38f087e02"),
    (33, "3463b46d4f9d5bfcbf9a23224d635e51896c1daef7d225b86679db17c5fd868e"),
    (63, "95510c2ff18276ed94be2160aed4e69c9116573b6f69faaeed1b426fea6a3db8"),
    (64, "490072cc55b8ad381335ff882ac51303cc069cbcb8d8d3f7aa152d9c617829fe"),
    (65, "541552bae05e9a63a6cb561f69edf36ffe073e441667dbf7a0e9a3864bb744ea"),
    (CS, "c10090961e7682a10890c334d759a28426647141213abda93b096b892824d2ef"),
    (CS + 31, "91699c83ed93a1f87e326a29ccd8cc775323f9e7260035a5f014c975c5f3cd28"),
    (CS + 32, "73759673a52c1f1707cbb61337645f4fcbd209cdc53d7e2cedaaa9f44df61285"),
    (CS + 63, "db1313a727ffc184ae52a70012fbbf7235f551b9f2d2da04bf476abe42a3cb42"),
    (CS + 64, "ade7af36ac0c7297dc1c11fd7b46981b629c6077bce75300f85b02a6153f161b"),
    (CS * 2, "29a5fb121ce96194ba8b7b823a1f9c6af87e1791f824940a53b5a7efe3f790d9"),
    (CS * 2 + 32, "61416726988f77b874435bdd89a419edc3861111884fd60e8adf54e2f299efd6"),
    (CS * 128, "3047d841077898c26bbe6be652a2ec590a5d9bd7cd45d290ea42511b48753c09"),
    (CS * 128 + 31, "e5c76afa931e33ac94bce2e754b1bb6407d07f738f67856783d93934ca8fc576"),
    (CS * 128 + 32, "485a526fc74c8a344c43a4545a5987d17af9ab401c0ef1ef63aefcc5c2c086df"),
    (CS * 128 + 64, "624b2abb7aefc0978f891b2a56b665513480e5dc195b4a66cd8def074a6d2e94"),
    (CS * 129, "b8e1804e37a064d28d161ab5f256cc482b1423d5cd0a6b30fde7b0f51ece9199"),
    (CS * 130, "59de730bf6c67a941f3b2ffa2f920acfaa1713695ad5deea12b4a121e5f23fa1"),
]
BEE_BIG_VECTORS = [
    (CS * 128 * 128, "522194562123473dcfd7a457b18ee7dee8b7db70ed3cfa2b73f348a992fdfd3b"),
    (CS * 128 * 128 + 32, "ed0cc44c93b14fef2d91ab3a3674eeb6352a42ac2f0bbe524711824aae1e7bcc"),
]


def sequential_bytes(n: int) -> bytes:
    return (bytes(range(255)) * (n // 255 + 1))[:n]


@pytest.mark.parametrize(("size", "expected"), BEE_VECTORS, ids=[str(s) for s, _ in BEE_VECTORS])
def test_bee_vector(size: int, expected: str) -> None:
    data = sequential_bytes(size)
    root, store, _ = split_to_store(data)
    assert root.hex() == expected
    assert read_sync(root, store) == data


class _MemoChunk(Chunk):
    """Chunk whose from_payload remembers hashes: the 64 MiB vectors repeat only 255 distinct data
    chunks (4096 % 255 == 16 and gcd(16, 255) == 1), so hashing each once keeps the test fast."""

    __slots__ = ()
    memo: ClassVar[dict[tuple[bytes, int | None], Chunk]] = {}

    @classmethod
    def from_payload(cls, payload: bytes, span: int | None = None) -> Chunk:
        key = (bytes(payload), span)
        if key not in cls.memo:
            cls.memo[key] = Chunk.from_payload(payload, span)
        return cls.memo[key]


@pytest.mark.parametrize(("size", "expected"), BEE_BIG_VECTORS, ids=["128*128*4096", "128*128*4096+32"])
def test_bee_big_vector(size: int, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunker, "Chunk", _MemoChunk)
    data = memoryview(sequential_bytes(size))
    splitter = Splitter()
    emitted = 0
    for i in range(0, size, 1 << 20):
        emitted += len(splitter.feed(bytes(data[i : i + (1 << 20)])))
    root, rest = splitter.finish()
    assert root.hex() == expected
    assert emitted + len(rest) == sum(expected_levels(size).values())


# --- single chunks ---------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 31, 4095, 4096])
def test_single_chunk_file_is_its_data_chunk(size: int) -> None:
    data = random_bytes(size, seed=size)
    root, chunks = split_bytes(data)
    assert root == bmt_address(data)
    assert len(chunks) == 1
    assert chunks[0].address == root and chunks[0].payload == data and chunks[0].span == size
    assert is_data_chunk(chunks[0]) and child_refs(chunks[0]) == []
    assert file_size(chunks[0]) == size


def test_empty_file_is_one_empty_chunk() -> None:
    root, chunks = split_bytes(b"")
    assert [c.data for c in chunks] == [bytes(8)]
    assert root == bmt_address(b"")
    assert read_sync(root, {root: chunks[0]}) == b""


# --- tree shape, by hand ---------------------------------------------------------------------

HAND_LEVELS = {
    0: {0: 1},
    1: {0: 1},
    4095: {0: 1},
    4096: {0: 1},
    4097: {0: 2, 1: 1},
    8192: {0: 2, 1: 1},
    128 * CS: {0: 128, 1: 1},
    128 * CS + 1: {0: 129, 1: 1, 2: 1},  # root = [full L1, 1-byte data chunk carried up]
    128 * CS + 4097: {0: 130, 1: 2, 2: 1},  # root = [full L1, L1 of 2 data chunks]
    129 * CS: {0: 129, 1: 1, 2: 1},  # root = [full L1, 4096-byte data chunk carried up]
    256 * CS + 100: {0: 257, 1: 2, 2: 1},  # root = [full L1, full L1, data chunk]
}
_rng = random.Random(7)
RANDOM_SIZES = sorted(_rng.randrange(CS, 3 << 20) for _ in range(3))


def check_tree(data: bytes, levels: dict[int, int]) -> None:
    root, store, chunks = split_to_store(data)
    assert len(store) == len(chunks), "random data: no chunk repeats"
    seen = list(model_walk(root, store))
    assert len(seen) == len(chunks), "every emitted chunk is in the tree, once"
    assert dict(Counter(height for _, height, _ in seen)) == levels
    for chunk, height, offset in seen:
        # Every chunk's span is the number of file bytes under it.
        under = b"".join(c.payload for c, h, o in seen if h == 0 and offset <= o < offset + chunk.span)
        if height == 0:
            assert chunk.payload == data[offset : offset + chunk.span]
        else:
            assert under == data[offset : offset + chunk.span]
            assert 2 <= len(chunk.payload) // 32 <= 128, "never a one-child intermediate"
    root_chunk = store[root]
    assert file_size(root_chunk) == len(data)
    assert read_sync(root, store) == data


@pytest.mark.parametrize("size", list(HAND_LEVELS))
def test_tree_shape_by_hand(size: int) -> None:
    assert expected_levels(size) == HAND_LEVELS[size], "the model agrees with the hand counts"
    check_tree(random_bytes(size, seed=size), HAND_LEVELS[size])


@pytest.mark.parametrize("size", RANDOM_SIZES)
def test_tree_shape_random_sizes(size: int) -> None:
    check_tree(random_bytes(size, seed=size), expected_levels(size))


def test_carried_reference_is_not_wrapped() -> None:
    # 129 * 4096: the 129th data chunk hangs directly under the root, beside the full L1 chunk.
    data = random_bytes(129 * CS, seed=3)
    root, store, _ = split_to_store(data)
    children = child_refs(store[root])
    assert [span for _, span in children] == [128 * CS, CS]
    last = store[children[1][0]]
    assert is_data_chunk(last) and last.payload == data[128 * CS :]


# --- incremental feeding ---------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    size=st.one_of(st.integers(0, 3 * CS), st.integers(128 * CS - 2, 130 * CS)),
    seed=st.integers(0, 2**32),
    cuts=st.lists(st.floats(0, 1), max_size=12),
)
def test_any_feeding_gives_the_same_chunks(size: int, seed: int, cuts: list[float]) -> None:
    data = random_bytes(size, seed)
    root, chunks = split_bytes(data)
    points = sorted(int(c * size) for c in cuts)
    splitter = Splitter()
    got: list[Chunk] = []
    for a, b in zip([0, *points], [*points, size], strict=True):
        got.extend(splitter.feed(data[a:b]))
        fed = splitter.bytes_in
        assert fed == b
        # Bounded memory: every chunk that can be complete has been handed out already.
        assert len(got) == sum(fed // (CS * 128**h) for h in range(4))
    got_root, rest = splitter.finish()
    assert got_root == root
    assert got + rest == chunks


def test_splitter_is_single_use() -> None:
    splitter = Splitter()
    splitter.feed(b"abc")
    splitter.finish()
    with pytest.raises(RuntimeError):
        splitter.feed(b"more")
    with pytest.raises(RuntimeError):
        splitter.finish()


# --- byte ranges -----------------------------------------------------------------------------

RANGE_SIZE = 128 * CS + 4097
RANGE_DATA = random_bytes(RANGE_SIZE, seed=11)
RANGE_ROOT, RANGE_STORE, _ = split_to_store(RANGE_DATA)
RANGE_TREE = list(model_walk(RANGE_ROOT, RANGE_STORE))


def expected_fetches(start: int, end: int | None) -> Counter[bytes]:
    stop = RANGE_SIZE if end is None else min(end, RANGE_SIZE)
    want = Counter([RANGE_ROOT])
    if start >= stop:
        return want
    for chunk, _, offset in RANGE_TREE:
        if chunk.address != RANGE_ROOT and offset < stop and offset + chunk.span > start:
            want[chunk.address] += 1
    return want


def counting_fetch(store: Store) -> tuple[Callable[[bytes], Chunk], Counter[bytes]]:
    calls: Counter[bytes] = Counter()

    def fetch(address: bytes) -> Chunk:
        calls[address] += 1
        return store[address]

    return fetch, calls


RANGES = [
    (0, None),
    (0, 0),
    (5, 6),
    (4095, 4097),
    (CS * 127 - 1, CS * 129 + 3),
    (CS * 128, None),
    (RANGE_SIZE - 1, None),
    (RANGE_SIZE, None),
    (RANGE_SIZE + 10, None),
    (100, 50),
    (0, RANGE_SIZE + 1000),
]


@pytest.mark.parametrize(("start", "end"), RANGES)
def test_range_sync(start: int, end: int | None) -> None:
    fetch, calls = counting_fetch(RANGE_STORE)
    got = b"".join(join_sync(RANGE_ROOT, fetch, start=start, end=end))
    assert got == RANGE_DATA[start:end]
    assert calls == expected_fetches(start, end)


@pytest.mark.parametrize(("start", "end"), RANGES)
async def test_range_async(start: int, end: int | None) -> None:
    fetch, calls = counting_fetch(RANGE_STORE)
    assert await read_async(RANGE_ROOT, fetch, start=start, end=end) == RANGE_DATA[start:end]
    assert calls == expected_fetches(start, end)


@settings(max_examples=60, deadline=None)
@given(start=st.integers(0, RANGE_SIZE + 5), length=st.integers(0, 3 * CS))
def test_random_ranges(start: int, length: int) -> None:
    fetch, calls = counting_fetch(RANGE_STORE)
    got = b"".join(join_sync(RANGE_ROOT, fetch, start=start, end=start + length))
    assert got == RANGE_DATA[start : start + length]
    assert calls == expected_fetches(start, start + length)


def test_negative_range_is_refused() -> None:
    with pytest.raises(ValueError):
        read_sync(RANGE_ROOT, RANGE_STORE, start=-1)
    with pytest.raises(ValueError):
        read_sync(RANGE_ROOT, RANGE_STORE, end=-1)


# --- tampering -------------------------------------------------------------------------------


def read_until_error(root: bytes, fetch: Callable[[bytes], Chunk], error: type[Exception]) -> bytes:
    """The bytes the joiner yields before it raises `error` (it must raise)."""
    got = bytearray()
    with pytest.raises(error):
        for piece in join_sync(root, fetch):
            got += piece
    return bytes(got)


def tampered_store(store: Store, address: bytes, chunk: Chunk) -> Callable[[bytes], Chunk]:
    return lambda a: chunk if a == address else store[a]


TAMPER_DATA = random_bytes(130 * CS + 77, seed=5)
TAMPER_ROOT, TAMPER_STORE, _ = split_to_store(TAMPER_DATA)
TAMPER_TREE = list(model_walk(TAMPER_ROOT, TAMPER_STORE))


@pytest.mark.parametrize("index", [0, 1, 50, len(TAMPER_TREE) - 1])
def test_altered_data_is_refused(index: int) -> None:
    victim, _, offset = TAMPER_TREE[index]
    flipped = bytearray(victim.data)
    flipped[-1] ^= 1
    fetch = tampered_store(TAMPER_STORE, victim.address, Chunk(victim.address, bytes(flipped)))
    got = read_until_error(TAMPER_ROOT, fetch, InvalidChunk)
    assert got == TAMPER_DATA[:offset], "exactly the bytes before the corrupt subtree"


async def test_altered_data_is_refused_async() -> None:
    victim, _, offset = TAMPER_TREE[3]
    bad = Chunk(victim.address, victim.data[:-1] + bytes([victim.data[-1] ^ 0xFF]))

    async def fetch(address: bytes) -> Chunk:
        return bad if address == victim.address else TAMPER_STORE[address]

    got = bytearray()
    with pytest.raises(InvalidChunk):
        async for piece in join(TAMPER_ROOT, fetch):
            got += piece
    assert bytes(got) == TAMPER_DATA[:offset]


def test_chunk_for_another_address_is_refused() -> None:
    victim, _, offset = TAMPER_TREE[5]
    other = Chunk.from_payload(b"someone else's chunk")
    got = read_until_error(TAMPER_ROOT, tampered_store(TAMPER_STORE, victim.address, other), InvalidChunk)
    assert got == TAMPER_DATA[:offset]
    # A valid chunk of the tree, delivered for the wrong address, is refused too.
    sibling = TAMPER_TREE[6][0]
    got = read_until_error(TAMPER_ROOT, tampered_store(TAMPER_STORE, victim.address, sibling), InvalidChunk)
    assert got == TAMPER_DATA[:offset]


def test_wrong_child_span_is_refused() -> None:
    # Three data chunks (4096, 4096, 1 bytes), referenced out of order by a correctly hashed root
    # of the right total span: the second child has span 1 where 4096 is implied.
    a, b, c = (Chunk.from_payload(p) for p in (b"a" * CS, b"b" * CS, b"c"))
    root = Chunk.from_payload(a.address + c.address + b.address, span=2 * CS + 1)
    store = {x.address: x for x in (a, b, c, root)}
    got = read_until_error(root.address, store.__getitem__, CorruptTree)
    assert got == b"a" * CS


def test_short_last_child_is_refused() -> None:
    # Root claims 8192 bytes over two children, but the last child holds only 100.
    a, b = Chunk.from_payload(b"a" * CS), Chunk.from_payload(b"b" * 100)
    root = Chunk.from_payload(a.address + b.address, span=2 * CS)
    store = {x.address: x for x in (a, b, root)}
    got = read_until_error(root.address, store.__getitem__, CorruptTree)
    assert got == b"a" * CS


def test_intermediate_with_wrong_span_is_refused() -> None:
    # Replace the full L1 subtree under the root by a valid-looking intermediate of a smaller span.
    data = random_bytes(129 * CS, seed=9)
    root, store, _ = split_to_store(data)
    (l1, _), (last, _) = child_refs(store[root])
    small = Chunk.from_payload(store[l1].payload[:64], span=2 * CS)
    fake_root = Chunk.from_payload(small.address + last, span=129 * CS)
    store[small.address] = small
    store[fake_root.address] = fake_root
    assert read_until_error(fake_root.address, store.__getitem__, CorruptTree) == b""


def test_missing_chunk_error_comes_from_fetch() -> None:
    victim = TAMPER_TREE[4][0]
    store = dict(TAMPER_STORE)
    del store[victim.address]
    read_until_error(TAMPER_ROOT, store.__getitem__, KeyError)


# --- impossible chunks -----------------------------------------------------------------------

REF = bytes(range(32))
IMPOSSIBLE = [
    ("data chunk, span over payload", 10, b"x" * 5, "span 10"),
    ("data chunk, span under payload", 3, b"x" * 5, "span 3"),
    ("intermediate, ragged payload", CS + 1, REF * 2 + b"x", "multiple of 32"),
    ("intermediate, too many children", CS + 1, REF * 3, "needs 2 children"),
    ("intermediate, too few children", 3 * CS, REF * 2, "needs 3 children"),
    ("intermediate, one child", CS + 1, REF, "needs 2 children"),
    ("intermediate, empty", 128 * CS + 1, b"", "needs 2 children"),
    ("level 2, too few", 128 * CS * 3, REF * 2, "needs 3 children"),
    ("level 2, too many", 128 * CS + 1, REF * 3, "needs 2 children"),
]


@pytest.mark.parametrize(
    ("span", "payload", "message"), [c[1:] for c in IMPOSSIBLE], ids=[c[0] for c in IMPOSSIBLE]
)
def test_impossible_chunk(span: int, payload: bytes, message: str) -> None:
    chunk = Chunk.from_payload(payload, span=span)
    with pytest.raises(CorruptTree, match=message) as info:
        child_refs(chunk)
    assert chunk.address.hex() in str(info.value)
    # The joiner refuses it as a root too, before yielding anything.
    assert read_until_error(chunk.address, {chunk.address: chunk}.__getitem__, CorruptTree) == b""
    with pytest.raises(CorruptTree):
        read_sync(chunk.address, {chunk.address: chunk}, start=0, end=0)


@pytest.mark.parametrize(
    ("span", "count", "spans"),
    [
        (CS + 1, 2, [CS, 1]),
        (128 * CS, 128, [CS] * 128),
        (128 * CS + 1, 2, [128 * CS, 1]),
        (129 * CS, 2, [128 * CS, CS]),
        (128 * 128 * CS + 32, 2, [128 * 128 * CS, 32]),
        (127 * 128 * CS + CS, 128, [128 * CS] * 127 + [CS]),
    ],
)
def test_child_spans_follow_from_the_parent_span(span: int, count: int, spans: list[int]) -> None:
    refs = [bytes([i]) * 32 for i in range(count)]
    chunk = Chunk.from_payload(b"".join(refs), span=span)
    assert not is_data_chunk(chunk)
    assert child_refs(chunk) == list(zip(refs, spans, strict=True))


# --- chunks padded with zeros to 4096 bytes, as bee-js's streamed uploads write them -----------


def padded(chunk: Chunk) -> Chunk:
    """The chunk with its payload zero-padded to 4096 bytes: the same BMT address, other data."""
    twin = Chunk.from_payload(chunk.payload.ljust(CS, b"\0"), span=chunk.span)
    assert twin.address == chunk.address
    return twin


@settings(max_examples=40, deadline=None)
@given(
    size=st.integers(0, 130 * CS),
    start=st.integers(0, 130 * CS),
    length=st.integers(0, 3 * CS),
    which=st.integers(0, 2),
)
def test_zero_padded_chunks_read_as_their_span(size: int, start: int, length: int, which: int) -> None:
    data = random_bytes(size, seed=size)
    root, store, _ = split_to_store(data)
    # pad every chunk, only the data chunks, or only the intermediates
    keep = (lambda c: True, lambda c: c.span <= CS, lambda c: c.span > CS)[which]
    twins = {a: padded(c) if keep(c) else c for a, c in store.items()}
    assert read_sync(root, twins) == data
    assert read_sync(root, twins, start, start + length) == data[start : start + length]


def test_padding_that_is_not_zeros_is_refused() -> None:
    for span, payload in ((3, b"abc" + b"\0" * 9 + b"x"), (CS + 1, REF * 2 + bytes(31) + b"\1")):
        with pytest.raises(CorruptTree, match=f"span {span}"):
            child_refs(Chunk.from_payload(payload, span=span))


def test_check_chunk_hashes_an_unverified_chunk_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk retrieval verified (`Chunk.checked()`) is not hashed again by the joiner; any
    other chunk is, and a wrong one is refused whatever its flag says about another address."""
    import chunks.chunk
    from chunks import Chunk, InvalidChunk
    from swarm.files.joiner import check_chunk

    chunk = Chunk.from_payload(b"some data")
    checked = chunk.checked()
    hashed: list[bytes] = []
    real = chunks.chunk.bmt_address

    def counting(payload: bytes, span: int) -> bytes:
        hashed.append(payload)
        return real(payload, span)

    monkeypatch.setattr(chunks.chunk, "bmt_address", counting)
    assert check_chunk(checked, chunk.address, 9) is checked and hashed == []
    assert check_chunk(chunk, chunk.address, 9) is chunk and len(hashed) == 1
    with pytest.raises(InvalidChunk):
        check_chunk(Chunk(chunk.address, chunk.data + b"!"), chunk.address, None)
    with pytest.raises(InvalidChunk):  # verified, but not the chunk asked for
        check_chunk(checked, bytes(32), None)
