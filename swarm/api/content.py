"""The content routes: `POST /chunks`, `GET|HEAD /chunks/{address}`, `POST /bytes`,
`GET|HEAD /bytes/{reference}` (Range, bounded streaming: swarm.api.downloads; `Swarm-Act` and
encryption as Bee's)."""

from __future__ import annotations

from typing import Protocol

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chunks import SPAN_SIZE, Chunk, InvalidChunk, bmt_address
from chunks.chunk import MAX_CAC_DATA_SIZE, MAX_DATA_SIZE
from chunks.soc import parse_soc
from swarm.api.act import ActReferences, act_download_reference, act_upload_reference
from swarm.api.byteranges import parse_range
from swarm.api.downloads import FileTooLarge, TreeResponse, file_response, range_headers
from swarm.api.input import (
    HttpError,
    error_response,
    flag,
    parse_address,
    parse_reference,
    read_body,
    receipts_header,
    tag_header,
)
from swarm.api.upload_postage import UploadPostage
from swarm.files.chunker import CorruptTree
from swarm.files.transfer import Upload, tree_fetch
from swarm.net.retrieval import ChunkUnavailable
from swarm.reserve.uploads import Uploads


class ChunkGetter(Protocol):
    async def get(self, address: bytes) -> Chunk: ...

    async def get_from_network(self, address: bytes) -> Chunk: ...


class ChunkLookup(Protocol):
    def has(self, address: bytes) -> bool: ...


class ChunkUploader(Protocol):
    async def __call__(
        self, chunks: list[Chunk], *, verified: bool = False, wait: bool = True, receipts: int = 2
    ) -> int: ...


def chunk_routes(
    retrieval: ChunkGetter, store: ChunkLookup, upload_chunks: ChunkUploader, postage: UploadPostage
) -> list[Route]:
    """POST /chunks (a content chunk, or a full single-owner chunk), GET and HEAD /chunks/{a}."""

    async def post_chunk(request: Request) -> Response:
        batch = postage.batch(request)
        data = await read_body(request, MAX_DATA_SIZE)
        if len(data) < SPAN_SIZE:
            raise HttpError(
                400, f"chunk must be an 8-byte little-endian span then the payload; got {len(data)} bytes"
            )
        if len(data) <= MAX_CAC_DATA_SIZE:  # a content chunk, as in Bee (a SOC this short: POST /soc)
            span = int.from_bytes(data[:SPAN_SIZE], "little")
            chunk = Chunk(bmt_address(data[SPAN_SIZE:], span), data)  # its address is its hash
        else:
            chunk = Chunk.from_soc(parse_soc(data))  # a full single-owner chunk, signature checked
        postage.stamp(batch, [chunk])
        wait = not flag(request, "swarm-deferred-upload")
        await upload_chunks([chunk], verified=True, wait=wait, receipts=receipts_header(request))
        return JSONResponse({"reference": chunk.address.hex()}, status_code=201)

    async def get_chunk(request: Request) -> Response:
        address = parse_address(request.path_params["address"])
        if request.method == "HEAD":
            # from the local store alone, never retrieving: shows where chunks live
            status = 200 if store.has(address) else 404
            return Response(status_code=status)
        try:
            chunk = await retrieval.get(address)
        except ChunkUnavailable as exc:
            return error_response(504 if exc.timed_out else 404, str(exc))
        byte_range = parse_range(request.headers.get("range"), len(chunk.data))
        headers = range_headers(address, byte_range)
        if byte_range is None:
            return Response(chunk.data, headers=headers, media_type="application/octet-stream")
        part = chunk.data[byte_range.start : byte_range.end]
        return Response(part, status_code=206, headers=headers, media_type="application/octet-stream")

    return [
        Route("/chunks", post_chunk, methods=["POST"]),
        Route("/chunks/{address}", get_chunk, methods=["GET", "HEAD"]),
    ]


def file_routes(
    uploads: Uploads, retrieval: ChunkGetter, postage: UploadPostage, act: ActReferences
) -> list[Route]:
    """POST /bytes (a file, cut into chunks here), GET and HEAD /bytes/{reference}; `Swarm-Act`
    headers as Bee's (swarm/api/act.py)."""

    async def post_bytes(request: Request) -> Response:
        batch = postage.batch(request)
        # -- receipts and pins: the upload is a tag of the pusher (swarm/reserve/uploads.py);
        # its chunks' addresses are computed by the splitter, so they are stored unverified
        try:
            receipts_wanted = receipts_header(request)
        except HttpError as exc:
            return error_response(exc.status, exc.message)
        session = uploads.begin(tag_header(request), receipts=receipts_wanted)

        def stamp_and_store(chunks: list[Chunk]) -> None:
            postage.stamp(batch, chunks)  # a 402 before an immutable batch's overflow is stored
            session.store(chunks)

        upload = Upload(stamp_and_store, encrypt=flag(request, "swarm-encrypt"))
        try:
            async for piece in request.stream():
                upload.feed(piece)
        except ClientDisconnect as exc:
            exc.add_note(f"upload cut short after {upload.size} bytes ({upload.chunks} chunks stored)")
            raise
        reference = upload.finish()
        answer, headers = await act_upload_reference(request, act, stamp_and_store, reference)
        pin, wait = flag(request, "swarm-pin"), not flag(request, "swarm-deferred-upload")
        # an encrypted file is pinned (and tagged) by its root chunk's address, as Bee does
        receipts = await uploads.finish(session, reference, pin=pin, wait=wait)
        body = {"reference": answer.hex(), "size": upload.size, "chunks": upload.chunks, "tag": receipts}
        headers["swarm-tag"] = str(session.tag.uid)
        return JSONResponse(body, status_code=201, headers=headers)
        # -- end of receipts and pins

    async def get_bytes(request: Request) -> Response | TreeResponse:
        reference = await act_download_reference(
            request, act, parse_reference(request.path_params["reference"])
        )
        try:
            return await file_response(
                reference,
                tree_fetch(reference, retrieval.get),
                head=request.method == "HEAD",
                range=request.headers.get("range"),
            )
        except ChunkUnavailable as exc:
            return error_response(504 if exc.timed_out else 404, str(exc))
        except (InvalidChunk, CorruptTree) as exc:
            return error_response(502, f"file {reference.hex()} is corrupt: {exc}")
        except FileTooLarge as exc:
            return error_response(413, str(exc))

    return [
        Route("/bytes", post_bytes, methods=["POST"]),
        Route("/bytes/{reference}", get_bytes, methods=["GET", "HEAD"]),
    ]
