"""`POST /envelope/{address}`: a chunk's postage stamp signed with the node's key, as Bee signs it.

The pure signing (index layout, what is signed, the signature recovering to the owner), the
book's envelopes (a chunk keeps its index, a full immutable batch refuses), and the route over
a book in memory. bee-js's `createEnvelope` against a node process, with bee-js verifying the
signature itself, is in tests/test_beejs_calls.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette

from chunks.ethkey import Secp256k1Key, checksum_address, recover_owner
from swarm.api.stamps import postage_routes
from swarm.postage.batches import BatchFull, Stamp, bucket_of
from swarm.postage.book import BatchBook, NoSigner
from swarm.postage.envelope import STAMP_SIZE, Envelope, sign_stamp, stamp_index

KEY = Secp256k1Key.from_hex("634fb5a872396d9693e5c9f9d7233cfa93f395c093371017ff44aa9ae6564cdd")


class MemoryState:
    """The book's StateStore over a dict."""

    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}

    def iter_state(self, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        return iter(sorted((k, v) for k, v in self.data.items() if k.startswith(prefix)))

    def write_state_batch(self, puts: Mapping[bytes, bytes], deletes: Iterable[bytes] = ()) -> None:
        self.data.update(puts)
        for key in deletes:
            self.data.pop(key, None)


def test_the_index_is_bucket_then_position_each_u32_big_endian() -> None:
    assert stamp_index(0xABCD, 3).hex() == "0000abcd00000003"


@given(
    st.binary(min_size=32, max_size=32),
    st.binary(min_size=32, max_size=32),
    st.integers(0, 2**16 - 1),
    st.integers(0, 2**64 - 1),
)
def test_a_signed_stamp_recovers_to_its_issuer_over_bee_s_data(
    address: bytes, batch_id: bytes, position: int, timestamp_ns: int
) -> None:
    stamp = Stamp(address, bucket_of(address), position, True)
    signed = sign_stamp(KEY, batch_id, stamp, timestamp_ns)
    data = address + batch_id + stamp_index(bucket_of(address), position) + timestamp_ns.to_bytes(8, "big")
    assert signed.signed_data == data
    assert recover_owner(signed.signature, data) == KEY.owner == signed.issuer == signed.signer()
    assert signed.marshal() == batch_id + data[64:] + signed.signature and len(signed.marshal()) == STAMP_SIZE
    # another chunk or another time: the signature names someone else
    for other in (bytes([data[0] ^ 1]) + data[1:], data[:-1] + bytes([data[-1] ^ 1])):
        assert recover_owner(signed.signature, other) != KEY.owner


def test_an_envelope_refuses_fields_of_the_wrong_size() -> None:
    with pytest.raises(ValueError, match="an envelope's index is 8 bytes, got 7"):
        Envelope(bytes(32), bytes(32), bytes(7), bytes(8), bytes(65), bytes(20))


def test_the_book_signs_envelopes_with_the_first_index_of_a_chunk_and_refuses_a_full_bucket() -> None:
    book = BatchBook(MemoryState(), KEY.owner, signer=KEY)
    batch = book.create(1000, 17).id  # two stamps per bucket
    same_bucket = [b"\x12\x34" + bytes([i]) * 30 for i in range(3)]
    first = book.envelope(batch, same_bucket[0], 1)
    second = book.envelope(batch, same_bucket[1], 2)
    again = book.envelope(batch, same_bucket[0], 3)
    assert [first.index.hex(), second.index.hex(), again.index.hex()] == [
        "0000123400000000",
        "0000123400000001",
        "0000123400000000",
    ]
    assert again.timestamp == (3).to_bytes(8, "big") and again.signer() == KEY.owner
    with pytest.raises(BatchFull, match="batch is overissued"):
        book.envelope(batch, same_bucket[2], 4)
    assert book.issuer(batch).utilization == 2
    with pytest.raises(NoSigner):
        BatchBook(MemoryState(), KEY.owner).envelope(batch, same_bucket[0], 1)
    with pytest.raises(ValueError, match="not the book's owner"):
        BatchBook(MemoryState(), bytes(20), signer=KEY)


@pytest.fixture
def book() -> BatchBook:
    return BatchBook(MemoryState(), KEY.owner, signer=KEY)


@pytest.fixture
async def client(book: BatchBook) -> AsyncIterator[httpx.AsyncClient]:
    app = Starlette(routes=postage_routes(book))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://node") as http:
        yield http


async def test_post_envelope_answers_bee_s_fields(client: httpx.AsyncClient, book: BatchBook) -> None:
    batch = book.create(1000, 17).id
    address = bytes.fromhex("ab" * 32)
    answer = await client.post(f"/envelope/{address.hex()}", headers={"swarm-postage-batch-id": batch.hex()})
    assert answer.status_code == 201
    body = answer.json()
    assert sorted(body) == ["index", "issuer", "signature", "timestamp"]
    assert body["issuer"] == checksum_address(KEY.owner) and body["index"] == "0000abab00000000"
    signed = address + batch + bytes.fromhex(body["index"]) + bytes.fromhex(body["timestamp"])
    assert recover_owner(bytes.fromhex(body["signature"]), signed) == KEY.owner
    assert book.issuer(batch).buckets == {0xABAB: 1}  # charged to the batch


async def test_post_envelope_refusals_are_bee_s(client: httpx.AsyncClient, book: BatchBook) -> None:
    batch = book.create(1000, 17).id
    url = f"/envelope/{'12' * 32}"
    cases = [
        ({}, 400, "Swarm-Postage-Batch-Id is required"),
        ({"swarm-postage-batch-id": "xyz"}, 400, "invalid batch id"),
        ({"swarm-postage-batch-id": "cd" * 32}, 404, "batch with id not found"),
    ]
    for headers, status, words in cases:
        answer = await client.post(url, headers=headers)
        assert answer.status_code == status and words in answer.json()["message"], answer.json()
    ok = {"swarm-postage-batch-id": batch.hex()}
    assert (await client.post(f"/envelope/{'12' * 31}", headers=ok)).status_code == 400  # the address
    for tail in ("aa", "bb"):
        assert (await client.post(f"/envelope/1212{tail * 30}", headers=ok)).status_code == 201
    full = await client.post(f"/envelope/1212{'cc' * 30}", headers=ok)
    assert full.status_code == 402 and full.json()["message"].startswith("batch is overissued")
