"""Files and websites as Bee serves them: `POST /bzz`, `GET|HEAD /bzz/{reference}/{path}`, and
`POST /feeds/{owner}/{topic}` (a feed manifest).

- ``POST /bzz?name=N`` with a body: the file under a one-entry manifest (Bee's shape: the name is
  also the index document; no ``Content-Type``: sniffed from the first bytes). With
  ``Swarm-Collection: true`` the body is a tar archive: each regular file under its cleaned path,
  its content type by extension, and ``Swarm-Index-Document``/``Swarm-Error-Document`` on the
  root path "/". 201 ``{"reference"}`` (the manifest), once every chunk has its receipts, with
  ``Swarm-Tag``; ``Swarm-Pin`` and ``Swarm-Deferred-Upload`` as for ``/bytes``.
- ``GET /bzz/{reference}/{path}``: the manifest is walked as Bee walks it (`swarm.api.site`);
  the entry is answered with ``Content-Type`` from its metadata, ``Content-Disposition: inline;
  filename="..."``, ``ETag`` (the file's reference; none when reached through a feed), Range
  support and bounded streaming as ``GET /bytes`` (swarm.api.downloads). A manifest whose "/"
  names a feed is first resolved to the feed's latest update (``Swarm-Feed-Index``).
- ``GET /bzz/{reference}`` redirects (308) to ``/bzz/{reference}/`` so a page's relative links work.
- ``Swarm-Act`` as on ``/bytes`` (swarm/api/act.py): an upload with ``Swarm-Act: true`` answers the
  manifest's reference encrypted with its ACT's access key (and the history in
  ``Swarm-Act-History-Address``); a download naming ``Swarm-Act-Publisher`` and the history reads
  the manifest that reference decrypts to.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from chunks import Chunk, InvalidChunk
from chunks.ethkey import OWNER_SIZE
from chunks.feeds import TOPIC_SIZE
from swarm.api.act import ActReferences, act_download_reference, act_upload_reference
from swarm.api.bee import answered
from swarm.api.downloads import TreeResponse
from swarm.api.input import HttpError, flag, parse_hex, parse_reference, receipts_header, tag_header
from swarm.api.site import Site
from swarm.api.upload_postage import UploadPostage
from swarm.api.uploads_bzz import store_collection, store_single_file
from swarm.files.chunker import CorruptTree
from swarm.manifest.nodes import InvalidManifest
from swarm.manifest.paths import feed_manifest
from swarm.manifest.trie import save
from swarm.reserve.uploads import Uploads, UploadSession

__all__ = ["bzz_routes"]

Fetch = Callable[[bytes], Awaitable[Chunk]]
_Answer = Response | TreeResponse


def _answered(handler: Callable[[Request], Awaitable[_Answer]]) -> Callable[[Request], Awaitable[_Answer]]:
    """As the chunk routes answer (`swarm.api.bee.answered`), and a bad manifest or tree too."""

    async def run(request: Request) -> _Answer:
        try:
            return await handler(request)
        except InvalidManifest as exc:
            raise HttpError(400 if request.method == "POST" else 404, f"manifest: {exc}") from None
        except (InvalidChunk, CorruptTree) as exc:
            raise HttpError(502, f"corrupt content: {exc}") from None

    return answered(run)


def bzz_routes(uploads: Uploads, fetch: Fetch, postage: UploadPostage, act: ActReferences) -> list[Route]:
    def stamped_session(request: Request) -> tuple[UploadSession, Callable[[list[Chunk]], None]]:
        """The upload's session and how it stores chunks: charged to its batch first (402 when full)."""
        batch = postage.batch(request)
        session = uploads.begin(tag_header(request), receipts=receipts_header(request))

        def stamp_and_store(chunks: list[Chunk]) -> None:
            postage.stamp(batch, chunks)
            session.store(chunks)

        return session, stamp_and_store

    async def post_bzz(request: Request) -> Response:
        session, store = stamped_session(request)
        content_type = request.headers.get("content-type", "").strip()
        encrypt = flag(request, "swarm-encrypt")
        if flag(request, "swarm-collection") or content_type.startswith("multipart/form-data"):
            if content_type.startswith("multipart/"):
                raise HttpError(400, "multipart collections are not supported: send a tar archive")
            reference = await store_collection(
                request.stream(),
                store,
                request.headers.get("swarm-index-document") or None,
                request.headers.get("swarm-error-document") or None,
                encrypt=encrypt,
            )
        else:
            name = request.query_params.get("name", "")
            reference = await store_single_file(request.stream(), store, name, content_type, encrypt=encrypt)
        answer, headers = await act_upload_reference(request, act, store, reference)
        return await _created(uploads, session, reference, request, answer, headers)

    async def post_feed_manifest(request: Request) -> Response:
        owner = parse_hex(request.path_params["owner"], OWNER_SIZE, "owner")
        topic = parse_hex(request.path_params["topic"], TOPIC_SIZE, "topic")
        session, store = stamped_session(request)
        saved = save(feed_manifest(owner, topic))
        store(saved.chunks)
        return await _created(uploads, session, saved.reference, request, saved.reference, {})

    async def get_bzz(request: Request) -> _Answer:
        reference = parse_reference(request.path_params["reference"])
        if "path" not in request.path_params:
            return RedirectResponse(str(request.url.replace(path=request.url.path + "/")), status_code=308)
        reference = await act_download_reference(request, act, reference)
        site = Site(fetch, reference)
        return await site.answer(
            request.path_params["path"], head=request.method == "HEAD", range=request.headers.get("range")
        )

    return [
        Route("/bzz", _answered(post_bzz), methods=["POST"]),
        Route("/bzz/{reference}", _answered(get_bzz), methods=["GET", "HEAD"]),
        Route("/bzz/{reference}/{path:path}", _answered(get_bzz), methods=["GET", "HEAD"]),
        Route("/feeds/{owner}/{topic}", _answered(post_feed_manifest), methods=["POST"]),
    ]


async def _created(
    uploads: Uploads,
    session: UploadSession,
    reference: bytes,
    request: Request,
    answer: bytes,
    act_headers: dict[str, str],
) -> Response:
    """201 with ``answer`` (the reference, or under ACT its encrypted form) once ``reference``'s
    upload has its receipts (unless deferred)."""
    pin, wait = flag(request, "swarm-pin"), not flag(request, "swarm-deferred-upload")
    receipts = await uploads.finish(session, reference, pin=pin, wait=wait)
    headers = {**act_headers, "swarm-tag": str(session.tag.uid)}
    headers["access-control-expose-headers"] = ", ".join(h for h in headers if h.startswith("swarm-"))
    return JSONResponse({"reference": answer.hex(), "tag": receipts}, status_code=201, headers=headers)
