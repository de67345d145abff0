"""Storing what `POST /bzz` receives: one file and its manifest, or a tar collection and its
manifest. Every chunk goes through the upload session's `store` (receipts, pins, tags).

A collection's archive is read as it arrives (tarfile's stream mode over the request body,
spooled to a temporary file past 32 MiB): each regular member is split into chunks as it is read,
so memory stays bounded whatever the collection's size.
"""

from __future__ import annotations

import os
import tarfile
import tempfile
from collections.abc import AsyncIterator, Callable
from typing import IO, Any, cast

from chunks import Chunk
from swarm.api.input import HttpError
from swarm.files.transfer import Upload
from swarm.manifest.paths import (
    clean_member_path,
    content_type_for,
    file_entry,
    single_file,
    site_root,
    sniff_content_type,
)
from swarm.manifest.trie import Entry, save

__all__ = ["store_collection", "store_single_file"]

Store = Callable[[list[Chunk]], None]
SPOOL_IN_MEMORY = 32 * 2**20
PIECE = 2**20


async def store_single_file(
    body: AsyncIterator[bytes], store: Store, name: str, content_type: str, *, encrypt: bool = False
) -> bytes:
    """The file of `body` and its manifest; its reference names the manifest (both encrypted,
    64-byte references, with `encrypt`)."""
    upload = Upload(store, encrypt=encrypt)
    head = b""
    async for piece in body:
        if len(head) < 512:
            head += piece[: 512 - len(head)]
        upload.feed(piece)
    reference = upload.finish()
    if name.startswith("/"):
        raise HttpError(400, f"file name {name!r} must not start with /")
    entries = single_file(reference, name or reference.hex(), content_type or sniff_content_type(head))
    saved = save(entries, **_sealed(encrypt))
    store(saved.chunks)
    return saved.reference


async def store_collection(
    body: AsyncIterator[bytes],
    store: Store,
    index_document: str | None,
    error_document: str | None,
    *,
    encrypt: bool = False,
) -> bytes:
    """Every regular file of the tar archive in `body` and the manifest naming them."""
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as spool:
        async for piece in body:  # read whole before any answer: a client may not read one early
            spool.write(piece)
        if index_document and "/" in index_document:
            raise HttpError(400, "Swarm-Index-Document must be a file name, without a slash")
        spool.seek(0)
        entries = _store_members(cast(IO[bytes], spool), store, encrypt)
    if not entries:
        raise HttpError(400, "no files in root directory: the tar archive holds no regular file")
    entries.update(site_root(index_document, error_document))
    saved = save(entries, **_sealed(encrypt))
    store(saved.chunks)
    return saved.reference


def _sealed(encrypt: bool) -> dict[str, Any]:
    """`save`'s arguments for an encrypted manifest: every node encrypted, and obfuscated with a
    random key (as Bee's encrypted mantaray manifests); none for a plain one."""
    return {"encrypt": True, "obfuscation_key": os.urandom(32)} if encrypt else {}


def _store_members(spool: IO[bytes], store: Store, encrypt: bool) -> dict[bytes, Entry]:
    entries: dict[bytes, Entry] = {}
    try:
        with tarfile.open(fileobj=spool, mode="r|*") as archive:
            for member in archive:
                path = clean_member_path(member.name)
                if not member.isfile() or not path:
                    continue
                source = archive.extractfile(member)
                assert source is not None  # a regular file
                upload = Upload(store, encrypt=encrypt)
                while piece := source.read(PIECE):
                    upload.feed(piece)
                name = path.rsplit("/", 1)[-1]
                entries[path.encode()] = file_entry(upload.finish(), name, content_type_for(path))
    except tarfile.TarError as exc:
        raise HttpError(400, f"invalid tar archive: {exc}") from None
    return entries
