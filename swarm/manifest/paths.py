"""The rules of files and websites in a manifest, shared by `POST /bzz`, `GET /bzz` and the CLI
(pure): metadata keys, content types by extension and by content, tar member paths, the
manifest of one file and the root entry of a collection.

Keys and shapes are Bee's (pkg/manifest, pkg/api/bzz.go and dirs.go): a file's entry carries
``{"Content-Type", "Filename"}``; the root path "/" names nothing and carries the website's
``website-index-document`` and ``website-error-document``, or a feed manifest's
``swarm-feed-owner``, ``swarm-feed-topic`` and ``swarm-feed-type``. Metadata is written with its
keys sorted, as Go's JSON encoder writes a map, so a collection gets Bee's reference.
"""

from __future__ import annotations

import posixpath

from swarm.manifest.nodes import InvalidManifest
from swarm.manifest.trie import NO_REFERENCE, Entry

__all__ = [
    "CONTENT_TYPE",
    "ERROR_DOCUMENT",
    "FEED_OWNER",
    "FEED_TOPIC",
    "FEED_TYPE",
    "FILENAME",
    "INDEX_DOCUMENT",
    "ROOT",
    "clean_member_path",
    "content_type_for",
    "feed_manifest",
    "file_entry",
    "single_file",
    "site_root",
    "sniff_content_type",
]

ROOT = b"/"
CONTENT_TYPE = "Content-Type"
FILENAME = "Filename"
INDEX_DOCUMENT = "website-index-document"
ERROR_DOCUMENT = "website-error-document"
FEED_OWNER = "swarm-feed-owner"
FEED_TOPIC = "swarm-feed-topic"
FEED_TYPE = "swarm-feed-type"

_TYPES = {
    # Go's built-in table (mime.TypeByExtension, which Bee uses for a collection's files) ...
    ".avif": "image/avif",
    ".css": "text/css; charset=utf-8",
    ".gif": "image/gif",
    ".htm": "text/html; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".jpeg": "image/jpeg",
    ".jpg": "image/jpeg",
    ".js": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".mjs": "text/javascript; charset=utf-8",
    ".pdf": "application/pdf",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".wasm": "application/wasm",
    ".webp": "image/webp",
    ".xml": "text/xml; charset=utf-8",
    # ... and common ones a Linux system's mime.types adds to it (text/* with charset=utf-8, as Go)
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".csv": "text/csv; charset=utf-8",
    ".ico": "image/vnd.microsoft.icon",
    ".mp3": "audio/mpeg",
    ".mp4": "video/mp4",
    ".webm": "video/webm",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
    ".zip": "application/zip",
    ".tar": "application/x-tar",
}


def content_type_for(path: str) -> str:
    """The content type of a collection's file by its extension ("" when unknown, as in Bee)."""
    return _TYPES.get(posixpath.splitext(path)[1].lower(), "")


_MAGIC = [
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
]


def sniff_content_type(head: bytes) -> str:
    """A content type from a file's first bytes, for an upload that names none (the cases of
    Go's http.DetectContentType that matter for files and sites)."""
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    text = head.lstrip(b"\t\n\x0c\r ").lower()
    if text.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<p>", b"<h1")):
        return "text/html; charset=utf-8"
    if text.startswith(b"<?xml"):
        return "text/xml; charset=utf-8"
    if not any(byte < 0x20 and byte not in b"\t\n\x0c\r\x1b" for byte in head[:512]):
        return "text/plain; charset=utf-8"
    return "application/octet-stream"


def clean_member_path(name: str) -> str:
    """A tar member's path in the manifest, cleaned as Go's filepath.Clean cleans it ("" for
    the archive's root, which holds no file)."""
    path = posixpath.normpath(name)
    return "" if path == "." else path


def file_entry(reference: bytes, name: str, content_type: str) -> Entry:
    return Entry(reference, {CONTENT_TYPE: content_type, FILENAME: name})


def site_root(index_document: str | None, error_document: str | None) -> dict[bytes, Entry]:
    """The "/" entry of a collection with an index or error document (none without)."""
    if index_document and "/" in index_document:
        raise InvalidManifest("index document suffix must not include slash character")
    metadata = {}
    if error_document:
        metadata[ERROR_DOCUMENT] = error_document
    if index_document:
        metadata[INDEX_DOCUMENT] = index_document
    return {ROOT: Entry(NO_REFERENCE, metadata)} if metadata else {}


def single_file(reference: bytes, name: str, content_type: str) -> dict[bytes, Entry]:
    """The manifest of one uploaded file (Bee's `POST /bzz` without a collection): the file under
    its name, and the name as the index document."""
    if not name or name.startswith("/"):
        raise InvalidManifest(f"file name {name!r} must not be empty or start with /")
    return {
        ROOT: Entry(NO_REFERENCE, {INDEX_DOCUMENT: name}),
        name.encode(): file_entry(reference, name, content_type),
    }


def feed_manifest(owner: bytes, topic: bytes) -> dict[bytes, Entry]:
    """The manifest naming a sequence feed (Bee's `POST /feeds/{owner}/{topic}`)."""
    metadata = {FEED_OWNER: owner.hex(), FEED_TOPIC: topic.hex(), FEED_TYPE: "Sequence"}
    return {ROOT: Entry(NO_REFERENCE, metadata)}
